# c-faults: firmware failures during the C driver's bring-up. cx-model fails three commands, once
# each, in the order the loads meet them: ENABLE_HCA answers bad operation, QUERY_ISSI never
# completes, INIT_HCA answers bad system state. Each load must fail the probe with the driver's
# usual message and unload cleanly; the fourth load, with no fault left, binds the device (the
# model stayed up through all of it).
# stacks: c
# timeout: 400
# cx-model: --fault status:ENABLE_HCA:0x2:0xcf00104:1 --fault hang:QUERY_ISSI:1 --fault status:INIT_HCA:0x4:0x1a0bad:1

dev=$(cx_device)
bdf=${dev##*/}

probe_fails "" "ENABLE_HCA bad operation" \
	"mlx5_core $bdf: .*ENABLE_HCA\(0x104\) op_mod\(0x0\) failed, status bad operation\(0x2\), syndrome \(0xcf00104\), err\(-22\)" \
	"enable hca failed" \
	"mlx5_init_one failed with error code -22"
probe_fails "" "QUERY_ISSI never completes" \
	"QUERY_ISSI\(0x10a\) timeout" \
	"mlx5_init_one failed with error code -110"
probe_fails "" "INIT_HCA bad system state" \
	"INIT_HCA\(0x102\) op_mod\(0x0\) failed, status bad system state\(0x4\), syndrome \(0x1a0bad\)" \
	"init hca failed"
dmesg -c >/dev/null
check "with the faults used up, the stack loads" load_stack
check_output "and binds the function" '/mlx5_core$' readlink "$dev/driver"
check "and unloads" unload_stack
dmesg_clean "no warnings, oopses or lockdep reports"

# rust-faults: firmware failures during our mlx5_core's bring-up, the same ones c-faults gives the
# C driver: ENABLE_HCA answers bad operation, QUERY_ISSI never completes, INIT_HCA answers bad
# system state. Each load fails the probe with a clear message and unloads cleanly (no leak); the
# fourth load, with no fault left, binds the device.
# stacks: rust
# timeout: 400
# cx-model: --fault status:ENABLE_HCA:0x2:0xcf00104:1 --fault hang:QUERY_ISSI:1 --fault status:INIT_HCA:0x4:0x1a0bad:1
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

dev=$(cx_device)
bdf=${dev##*/}

probe_fails "mlx5_core" "ENABLE_HCA bad operation" \
	"mlx5_core $bdf: ENABLE_HCA\(0x104\) op_mod\(0x0\) failed, status bad operation\(0x2\), syndrome \(0xcf00104\), err\(-22\)" \
	"enable hca failed" \
	"mlx5 bring-up failed with error code -22"
probe_fails "mlx5_core" "QUERY_ISSI never completes" \
	"QUERY_ISSI\(0x10a\) timeout" \
	"mlx5 bring-up failed with error code -110"
probe_fails "mlx5_core" "INIT_HCA bad system state" \
	"INIT_HCA\(0x102\) op_mod\(0x0\) failed, status bad system state\(0x4\), syndrome \(0x1a0bad\), err\(-5\)" \
	"init hca failed"
dmesg -c >/dev/null
check "with the faults used up, the stack loads" load_stack
check_output "and binds the function" '/mlx5_core$' readlink "$dev/driver"
check "and unloads" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "no warnings, oopses or lockdep reports"

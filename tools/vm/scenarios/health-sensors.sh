# health-sensors: the health poll's NIC-interface sensors, compared with the C stack. cx-model
# reports a NIC interface state in the init segment (cmdq_addr_l_sz bits 10:8, `model_ctl
# nic-state`), and halts as a device in that state would:
#   1. disabled (1): the health poll declares fatal error 3 (C's MLX5_SENSOR_NIC_DISABLED);
#   2. software reset (7): fatal error 4 (MLX5_SENSOR_NIC_SW_RESET).
# Each time the stack then unloads; between the two the model is put back to "full driver" and
# the function reset (`model_ctl reset`: the guest's sysfs reset of this function does not reach
# the model as an FLR), and the stack loads again. kmemleak and dmesg clean.
# (C's sensor 2, the PCI channel offline after an AER error, has no model: there is no AER here.)
# stacks: c rust
# timeout: 300

dev=$(cx_device)
bdf=${dev##*/}

check "load the stack" load_stack
wait_for "mlx5_0 is registered" 30 '^mlx5_0$' ls /sys/class/infiniband
check_output "model: the NIC interface is disabled" '^ok nic-state disabled$' model_ctl nic-state disabled
wait_for "the health poll declares fatal error 3 (NIC interface disabled)" 20 \
	"mlx5_core $bdf: .*Fatal error 3 detected\$" dmesg
check "the stack unloads" unload_within 60

check_output "model: the NIC interface is back to full driver" '^ok nic-state full$' model_ctl nic-state full
check_output "model: a function reset starts the device again" '^ok reset$' model_ctl reset
check "load the stack again" load_stack
wait_for "mlx5_0 is registered again" 60 '^mlx5_0$' ls /sys/class/infiniband
check_output "model: the NIC interface is in a software reset" '^ok nic-state sw-reset$' model_ctl nic-state sw-reset
wait_for "the health poll declares fatal error 4 (NIC software reset)" 20 \
	"mlx5_core $bdf: .*Fatal error 4 detected\$" dmesg
check "the stack unloads" unload_within 60
check_output "each sensor fired once" '^1 1$' \
	sh -c "echo \$(dmesg | grep -c 'Fatal error 3 detected') \$(dmesg | grep -c 'Fatal error 4 detected')"
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

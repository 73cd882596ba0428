# rust-bringup: the Rust mlx5_core alone (no mlx5_ib) on cx-model, with the test interface
# (samples/mlx5_test_interface.rs), an auxiliary driver of mlx5_core.rdma.<N> as mlx5_ib is. It
# gets `add` (probe) for a function bound before it registered and for one bound after, `event`
# (through the notifier it registers in probe) when the model takes the port down and up, and
# `remove` exactly once from either side (PCI unbind, which deletes the auxiliary device, or
# driver unload). Then 10 load/unload cycles; every page comes back; no leak, no splat. On the
# host, the model's command trace must match the C driver's bring-up except for the differences
# in docs/rust-bringup-differences.md.
# stacks: rust
# host-trace: tools/vm/trace_compare.py
# host-check: firmware pages: [1-9][0-9]* given, [1-9][0-9]* returned, 0 still held \(all reclaimed\)

dev=$(cx_device)
bdf=${dev##*/}
drv=/sys/bus/pci/drivers/mlx5_core
iface=mlx5_test_interface

count() {
	dmesg | grep -c "$1"
}

check "load mlx5_core alone" insmod $stack_dir/mlx5_core.ko
check_output "the function is bound" "^$bdf\$" ls $drv
check_output "mlx5_core created mlx5_core.rdma.0 below the function" "/$bdf/mlx5_core\.rdma\.0\$" \
	readlink -f /sys/bus/auxiliary/devices/mlx5_core.rdma.0
check "load the test interface" insmod $stack_dir/$iface.ko
check_output "the test interface's auxiliary driver ($iface.rdma) is bound to it" "/$iface\.rdma\$" \
	readlink /sys/bus/auxiliary/devices/mlx5_core.rdma.0/driver
check_output "interface: add for the function bound before it registered" "$iface: add $bdf \(function 0, 1 port\(s\)\)" dmesg
check_output "model: port 1 down" '^ok port 1 down$' model_ctl port 1 down
wait_for "interface: event port 1 down" 10 "$iface: event $bdf: port 1 down" dmesg
check_output "model: port 1 up" '^ok port 1 up$' model_ctl port 1 up
wait_for "interface: event port 1 active" 10 "$iface: event $bdf: port 1 active" dmesg
check "unbind the function" sh -c "echo $bdf > $drv/unbind"
check_output "interface: remove on unbind, with both events counted" "$iface: remove $bdf after 2 event\(s\)" dmesg
check "the auxiliary device went with the function" test ! -e /sys/bus/auxiliary/devices/mlx5_core.rdma.0
check "bind the function again" sh -c "echo $bdf > $drv/bind"
wait_for "interface: add for the function bound after it registered" 10 "^2\$" count "$iface: add $bdf"
check "unload the test interface" rmmod $iface
check_output "interface: remove on unload" "^2\$" count "$iface: remove $bdf"
check "unload mlx5_core" rmmod mlx5_core
check_output "one remove per add, no more" "^2\$" count "$iface: remove"
cycles() {
	for i in 1 2 3 4 5 6 7 8 9 10; do
		insmod $stack_dir/mlx5_core.ko && insmod $stack_dir/$iface.ko && rmmod $iface && rmmod mlx5_core || return 1
	done
}
check "10 load/unload cycles of mlx5_core and the test interface" cycles
check_output "each cycle added and removed the function" "^12\$" count "$iface: remove"
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

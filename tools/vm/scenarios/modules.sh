# modules: the selected stack loads, its mlx5_core reaches the emulated device through BAR0, and
# everything unloads cleanly.
#   rust: the function binds, the firmware revision read through BAR0 is logged, mlx5_core
#         creates the auxiliary device mlx5_core.rdma.0 below the function, mlx5_ib sees ib_core
#         and its auxiliary driver binds the device, as mlx5_0; unloading deletes the device; 10
#         load/unload cycles; clean dmesg and kmemleak.
#   c:    the upstream C stack loads against the same device, binds it (its bring-up is
#         checked in detail by c-bringup; firmware failures by c-faults), and unloads cleanly.
# Either way the device gets back every firmware page it was lent.
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

dev=$(cx_device)
bdf=${dev##*/}
check "load the $STACK stack" load_stack
check_output "all of the stack's modules are loaded" "^$(tr '\n' ' ' <"$stack_dir/order" | sed 's/ $//')\$" stack_loaded_line
check_output "mlx5_core logs the firmware version read from BAR0" \
	"mlx5_core $bdf: firmware version: $EXPECT_FW\$" dmesg

if [ "$STACK" = rust ]; then
	check_output "the function is bound to mlx5_core" '/mlx5_core$' readlink "$dev/driver"
	check_output "BAR0 is claimed by mlx5_core in /proc/iomem" ': mlx5_core$' cat /proc/iomem
	check "/sys/class/infiniband exists (ib_core registered its class)" test -d /sys/class/infiniband
	check_output "mlx5_ib sees ib_core ready and one bound function" \
		'mlx5_ib: loaded; ib_core ready, 1 mlx5 function\(s\) bound$' dmesg
	check_output "mlx5_core created the auxiliary device mlx5_core.rdma.0 below the function" \
		"/$bdf/mlx5_core\.rdma\.0\$" readlink -f /sys/bus/auxiliary/devices/mlx5_core.rdma.0
	check_output "mlx5_ib's auxiliary driver, mlx5_ib.rdma as in C, is bound to it" '/mlx5_ib\.rdma$' \
		readlink /sys/bus/auxiliary/devices/mlx5_core.rdma.0/driver
	check_output "mlx5_ib's probe attached to the function, as mlx5_0" \
		"mlx5_ib: attached to $bdf \(1 port\(s\)\) as mlx5_0\$" dmesg
	check "unload the stack" unload_stack
	check_output "mlx5_ib detached from the function on unload, unregistering mlx5_0" \
		"mlx5_ib: detached from $bdf \(1 port\(s\), 0 port event\(s\)\); mlx5_0 unregistered\$" dmesg
	check "no module of the stack is left" test -z "$(stack_loaded)"
	check "the auxiliary device is gone" test ! -e /sys/bus/auxiliary/devices/mlx5_core.rdma.0
	check "/sys/class/infiniband is gone" test ! -e /sys/class/infiniband
	check "BAR0 is released" sh -c '! grep -q mlx5_core /proc/iomem'
	cycles=0
	for i in 1 2 3 4 5 6 7 8 9 10; do
		load_stack && unload_stack && [ -z "$(stack_loaded)" ] && cycles=$((cycles + 1))
	done
	check_output "10 load/unload cycles" '^10$' echo $cycles
	check_output "each cycle bound and unbound the function" '^11$' sh -c "dmesg | grep -c 'mlx5_core $bdf: unbinding'"
	kmemleak_clean "kmemleak finds no leak"
else
	check_output "the function is bound to the C mlx5_core" '/mlx5_core$' readlink "$dev/driver"
	check "unload the stack" unload_stack
	check "no module of the stack is left" test -z "$(stack_loaded)"
	check "the function is unbound" test ! -e "$dev/driver"
fi
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# mlx5-comp-vectors: the completion vectors of mlx5_core, on both stacks. As the 7.3 C driver
# does, mlx5_core creates a completion vector (its MSI-X interrupt and its EQ) only when a driver
# first asks for its EQ (mlx5_comp_eqn_get): none exists with mlx5_core alone. Once a CQ exists
# (C: mlx5_ib, whose CQs ask for vector 0 and up; Rust: the test interface with completion=1,
# which asks for every vector, as the Rust mlx5_ib will for its CQs), /proc/interrupts names each
# vector as C does, mlx5_comp<i>@pci:<function>, and its affinity is C's (vector i on CPU i of
# the guest's 2); the control vector is mlx5_async0@pci:<function> from the start. (rust) The test interface also checks doorbell records, a coherent buffer,
# blue-flame registers (the third on a new UAR page) and CQ/QP registrations; a PCI unbind with
# all of that held removes the driver first, then destroys the vectors, and a rebind creates them
# again. After unloading, no vector is left; kmemleak and dmesg are clean.
# stacks: rust c
# Two CPUs: a completion vector per CPU, vector i on CPU i.
# cpus: 2

dev=$(cx_device)
bdf=${dev##*/}

# The completion vectors' names in /proc/interrupts.
comp_names() {
	grep -o 'mlx5_comp[0-9]*@pci:[^ ]*' /proc/interrupts
}

# Each completion vector's affinity as "<name> <cpus>" (vector i should be on CPU i).
comp_affinity() {
	grep 'mlx5_comp' /proc/interrupts | while read -r irq rest; do
		irq=${irq%:}
		name=$(echo "$rest" | grep -o 'mlx5_comp[0-9]*')
		echo "$name $(cat /proc/irq/$irq/smp_affinity_list)"
	done
}

# Every vector on the CPU of its number.
affinity_as_c() {
	out=$(comp_affinity)
	echo "$out"
	[ -n "$out" ] && ! echo "$out" | grep -Ev '^mlx5_comp([0-9]+) \1$'
}

# Every name is mlx5_comp<i>@pci:<this function>.
names_as_c() {
	out=$(comp_names)
	echo "$out"
	[ -n "$out" ] && ! echo "$out" | grep -Ev "^mlx5_comp[0-9]+@pci:$bdf\$"
}

if [ "$STACK" = rust ]; then
	core_modules="ib_core mlx5_core"
else
	core_modules="dimlib ib_core ib_uverbs_support ib_uverbs ib_umad mlx5_core"
fi

check "load mlx5_core (without mlx5_ib)" load_stack $core_modules
check "no completion vector yet (created on first use)" sh -c '! grep mlx5_comp /proc/interrupts'
check_output "the control vector is named as C names it: mlx5_async0@pci:$bdf" \
	"^mlx5_async0@pci:$bdf\$" sh -c "grep -o 'mlx5_[a-z]*[0-9]*@pci:[^ ]*' /proc/interrupts | grep -v mlx5_comp"
if [ "$STACK" = rust ]; then
	check "load the test interface with completion=1" insmod $stack_dir/mlx5_test_interface.ko completion=1
	wait_for "test interface: the completion side works" 10 "mlx5_test_interface: completion $bdf: ok" dmesg
	check_output "2 completion vectors (one per online CPU)" "completion $bdf: 2 completion vector\(s\)" dmesg
	check_output "bfregs: two on the function's UAR, the third on a new page" \
		"completion $bdf: UAR ([0-9]+), bfregs on UARs \1 \1 [0-9]+, doorbell records 64 bytes apart" dmesg
else
	check "load mlx5_ib (its CQs take completion vectors)" load_stack
fi
check_output "mlx5_comp0 is named as C names it" "^mlx5_comp0@pci:$bdf\$" comp_names
check "every completion vector is named mlx5_comp<i>@pci:$bdf" names_as_c
check "completion vector i is on CPU i" affinity_as_c
if [ "$STACK" = rust ]; then
	check_output "mlx5_comp1 too" "^mlx5_comp1@pci:$bdf\$" comp_names
	check "unbind the function with the test interface's state held" \
		sh -c "echo $bdf > /sys/bus/pci/drivers/mlx5_core/unbind"
	check_output "the test interface was removed" "mlx5_test_interface: remove $bdf" dmesg
	check "the completion vectors went with the function" sh -c '! grep mlx5_comp /proc/interrupts'
	check "bind the function again" sh -c "echo $bdf > /sys/bus/pci/drivers/mlx5_core/bind"
	wait_for "the test interface's checks pass again" 10 '^2$' \
		sh -c "dmesg | grep -c 'mlx5_test_interface: completion $bdf: ok'"
	check "and the vectors are back, named as C" names_as_c
	check "unload the test interface" rmmod mlx5_test_interface
fi
check "unload the stack" unload_stack
check "no completion vector is left" sh -c '! grep mlx5_comp /proc/interrupts'
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

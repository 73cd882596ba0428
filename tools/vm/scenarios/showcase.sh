# showcase: the main job (`make run`). Shows the emulated ConnectX as the guest sees it, loads the
# stack, and prints what our modules logged and what RDMA tools see.
# stacks: rust c

show() {
	echo "# \$ $*"
	"$@" 2>&1 | sed 's/^/#   /'
}

dev=$(cx_device)
check "the emulated ConnectX-5 is on the PCI bus" test -n "$dev"
show lspci -nn
check "load the $STACK stack" load_stack
show sh -c "lsmod | grep -E '^(ib_|mlx5)'"
show sh -c "dmesg | grep -E 'mlx5|ib_core|infiniband'"
show ls /sys/class/infiniband
show rdma dev show
show ibv_devices
check "unload the $STACK stack" unload_stack
dmesg_clean "dmesg has no warnings"

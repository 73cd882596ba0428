# c-bringup: the upstream C stack brings cx-model up to a registered mlx5_0 with an ACTIVE
# InfiniBand port, rdma-core sees it, and the stack unloads with every firmware page reclaimed.
# stacks: c

dev=$(cx_device)
bdf=${dev##*/}
check "load the C stack" load_stack
check_output "the function is bound to mlx5_core" '/mlx5_core$' readlink "$dev/driver"
show() {
	echo "# \$ $*"
	"$@" 2>&1 | sed 's/^/#   /'
}
show sh -c "dmesg | grep -E 'mlx5|ib_|infiniband'"
check "unload the C stack" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

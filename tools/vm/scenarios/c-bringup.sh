# c-bringup: the upstream C stack brings cx-model up to a registered mlx5_0 with an ACTIVE
# InfiniBand port, rdma-core sees it through the C ib_uverbs, and the whole stack unloads with
# every firmware page the model lent back in the model's hands.
# stacks: c
# host-check: firmware pages: [1-9][0-9]* given, [1-9][0-9]* returned, 0 still held \(all reclaimed\)

dev=$(cx_device)
show() {
	echo "# \$ $*"
	"$@" 2>&1 | sed 's/^/#   /'
}

check "load the C stack" load_stack
check_output "the function is bound to mlx5_core" '/mlx5_core$' readlink "$dev/driver"
check_output "rdma dev show lists mlx5_0" '^0: mlx5_0: node_type ca fw 16\.35\.2000 node_guid [0-9a-f:]+ sys_image_guid [0-9a-f:]+ *$' rdma dev show
check_output "rdma link show: port 1 ACTIVE, LINK_UP" '^link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid [1-9][0-9]* sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP' rdma link show
check_output "sysfs port state reads 4: ACTIVE" '^4: ACTIVE$' cat /sys/class/infiniband/mlx5_0/ports/1/state
check_output "sysfs port phys_state reads 5: LinkUp" '^5: LinkUp$' cat /sys/class/infiniband/mlx5_0/ports/1/phys_state
check_output "ibv_devinfo: transport InfiniBand" 'transport:[[:space:]]+InfiniBand \(0\)' ibv_devinfo -d mlx5_0
check_output "ibv_devinfo: firmware version" "fw_ver:[[:space:]]+$EXPECT_FW" ibv_devinfo -d mlx5_0
check_output "ibv_devinfo: port ACTIVE" 'state:[[:space:]]+PORT_ACTIVE \(4\)' ibv_devinfo -d mlx5_0
check_output "ibv_devinfo: a LID" 'port_lid:[[:space:]]+[1-9][0-9]*' ibv_devinfo -d mlx5_0
show rdma dev show
show rdma link show
show ibv_devinfo -v
check "unload the C stack" unload_stack
check "no module of the stack is left" test -z "$(stack_loaded)"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

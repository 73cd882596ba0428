# c-abi-load-orders: C's modules above and beside the core load and unload in every order with
# mlx5_ib (issue "ib_core's C ABI": "they load ... in every order with mlx5_ib"; docs/c-abi.md).
# The C modules, the same files on both stacks: ib_cm, iw_cm, rdma_cm, rdma_ucm (insmod from the
# stack's directory, configfs first), rdma_rxe and siw (C drivers) and nvme-rdma and nvmet-rdma
# (storage ULPs, with nvme-core, nvme-fabrics and nvmet) through modprobe. Four rounds, mlx5_ib
# loaded before or after them and unloaded before or after them:
#   1. the C modules, then mlx5_ib; mlx5_ib unloaded first, then the C modules;
#   2. mlx5_ib, then the C modules; the C modules unloaded first, then mlx5_ib;
#   3. mlx5_ib, then the C modules; mlx5_ib unloaded first;
#   4. the C modules, then mlx5_ib; the C modules unloaded first.
# Each time the loads succeed with no unresolved symbol, the C clients see mlx5_0 whichever came
# first (ib_cm's counter groups on its port; rdma_cm's configfs directory for it can be made,
# which rdma_cm allows only for a device it added) and let it go when it goes (the directory
# refused then, ENODEV), and every module unloads. Then the stack unloads; kmemleak (rust),
# dmesg. The same checks on both stacks.
# stacks: rust c
# install-modules: yes udp_tunnel ip6_udp_tunnel rdma_rxe siw nvme-core nvme-fabrics nvme-rdma nvmet nvmet-rdma

CMCFG=/sys/kernel/config/rdma_cm
PORT=/sys/class/infiniband/mlx5_0/ports/1

# c_up: the C modules, dependencies first.
c_up() {
	{ [ -d /sys/module/configfs ] || insmod $stack_dir/configfs.ko; } &&
		insmod $stack_dir/ib_cm.ko && insmod $stack_dir/iw_cm.ko && insmod $stack_dir/rdma_cm.ko &&
		insmod $stack_dir/rdma_ucm.ko && modprobe rdma_rxe && modprobe siw && modprobe nvme-rdma &&
		modprobe nvmet-rdma || return 1
	grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs none /sys/kernel/config
}
# c_down: every C module, users first.
c_down() {
	rmmod nvmet_rdma nvmet nvme_rdma nvme_fabrics nvme_core && rmmod siw rdma_rxe rdma_ucm rdma_cm iw_cm ib_cm
}
# none_left: no C module of the list is loaded.
none_left() {
	_left=$(grep -Eo '^(ib_cm|iw_cm|rdma_cm|rdma_ucm|rdma_rxe|siw|nvme_rdma|nvme_fabrics|nvmet|nvmet_rdma|nvme_core) ' /proc/modules)
	[ -z "$_left" ] || {
		echo "still loaded: $_left"
		return 1
	}
}
# clients_see_mlx5_0: ib_cm's groups on its port, rdma_cm's configfs directory made and removed.
clients_see_mlx5_0() {
	[ -d $PORT/cm_rx_msgs ] || {
		echo "no cm_rx_msgs on mlx5_0's port"
		return 1
	}
	mkdir $CMCFG/mlx5_0 && ls $CMCFG/mlx5_0/ports/1 && rmdir $CMCFG/mlx5_0 && echo seen
}
# rdma_cm_refuses_mlx5_0: with mlx5_0 gone, rdma_cm has no device of that name.
rdma_cm_refuses_mlx5_0() {
	! mkdir $CMCFG/mlx5_0 2>/tmp/mkdir.err || {
		rmdir $CMCFG/mlx5_0
		echo "made"
		return 1
	}
	cat /tmp/mkdir.err
}
mlx5_up() {
	insmod $stack_dir/mlx5_ib.ko || return 1
	_t=100
	while [ $_t -gt 0 ] && [ ! -e $PORT ]; do
		sleep 0.1
		_t=$((_t - 1))
	done
	[ -e $PORT ]
}

check "load the stack without mlx5_ib" load_stack $(grep -v '^mlx5_ib$' "$stack_dir/order")
for round in 1 2 3 4; do
	case $round in
	1 | 4)
		check "round $round: the C modules load before mlx5_ib" c_up
		check "round $round: then mlx5_ib, mlx5_0 registered" mlx5_up
		;;
	2 | 3)
		check "round $round: mlx5_ib loads, mlx5_0 registered" mlx5_up
		check "round $round: then the C modules" c_up
		;;
	esac
	wait_for "round $round: ib_cm and rdma_cm see mlx5_0" 10 '^seen$' clients_see_mlx5_0
	case $round in
	1 | 3)
		check "round $round: rmmod mlx5_ib under the C modules" rmmod mlx5_ib
		check_output "round $round: rdma_cm no longer has mlx5_0" 'No such device' rdma_cm_refuses_mlx5_0
		check "round $round: then the C modules unload" c_down
		;;
	2 | 4)
		check "round $round: the C modules unload, mlx5_0 registered" c_down
		check "round $round: then rmmod mlx5_ib" rmmod mlx5_ib
		;;
	esac
	check "round $round: none of the C modules is left" none_left
done
check "no unresolved symbol in any load" sh -c '! dmesg | grep -E "Unknown symbol|disagrees about version"'
check "unload the stack" unload_stack
[ "$STACK" = rust ] && kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

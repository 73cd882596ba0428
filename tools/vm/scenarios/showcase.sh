# showcase: the main job (`make run`). Shows the emulated ConnectX as the guest sees it, loads the
# stack, prints what our modules logged, takes the port down and up and has the firmware ask for
# pages (the driver's event queues at work), shows what RDMA tools see, then runs the sample
# kernel verbs consumer on mlx5_0 (the Rust one on rust, its C twin on c): data moved through an RC
# QP on the emulated HCA, with its objects as `rdma res show` lists them.
# stacks: rust c
# Two CPUs: the walk-through shows a host as it is, with more than one CPU.
# cpus: 2

show() {
	echo "# \$ $*"
	"$@" 2>&1 | sed 's/^/#   /'
}

dev=$(cx_device)
bdf=${dev##*/}
check "the emulated ConnectX-5 is on the PCI bus" test -n "$dev"
show lspci -nn
check "load the $STACK stack" load_stack
show sh -c "lsmod | grep -E '^(ib_|mlx5)'"
# Our modules' own lines (the KUnit suites they carry also log; those are left out here).
show sh -c "dmesg | grep -E 'mlx5|ib_core|infiniband' | grep -v -E '# |ok [0-9]|KTAP|1\.\.'"
show grep mlx5 /proc/interrupts
show cat /sys/kernel/debug/mlx5/$bdf/pages/fw_pages_total
echo "# the model takes port 1 down and up, then asks for 8 more firmware pages"
model_ctl port 1 down >/dev/null
model_ctl port 1 up >/dev/null
model_ctl page-request 8 >/dev/null
sleep 1
show sh -c "dmesg | grep -E 'state change|mlx5_ib: 0000' | tail -n 4"
show cat /sys/kernel/debug/mlx5/$bdf/pages/fw_pages_total
show ls /sys/class/infiniband
show rdma dev show
show rdma link show
show ibv_devices
echo "# the sample kernel verbs consumer on mlx5_0: PD, CQ, RC QP, MR; SEND, RDMA write and read"
check "the sample consumer loads" insmod $stack_dir/ib_verbs_client.ko
sleep 1
show sh -c "dmesg | grep 'ib_verbs_client: mlx5_0'"
show rdma res show qp
show rdma res show cq
show sh -c "grep -E 'mlx5_(async|comp)' /proc/interrupts"
check "the sample consumer unloads" rmmod ib_verbs_client
check "unload the $STACK stack" unload_stack
show sh -c "dmesg | grep -E 'torn down|came as events|detached' | tail -n 4"
dmesg_clean "dmesg has no warnings"

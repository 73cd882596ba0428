# uverbs-pingpong: rdma-core's pingpong examples over ib_uverbs, the same on both stacks (issue
# 17): server and client in one VM, looped back through the port; libmlx5 builds WQEs in user
# memory, rings the doorbell through its UAR page and polls its CQs; the kernel made the
# objects (context, PD, MR, CQs, QPs) and moves the QPs through their states. The tool checks
# every received buffer (-c).
#   - ibv_rc_pingpong, 1000 x 4096 bytes, polling, then with completion events (-e: the CQ is
#     armed and its events read from the completion channel);
#   - while a pingpong runs, `rdma res show qp` lists its two QPs with their pids;
#   - afterwards no user object is left (`rdma res show`), the stack unloads, dmesg is clean.
# stacks: rust c
# timeout: 500
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

pingpong() {
	_name=$1
	_tool=$2
	shift 2
	loopback_pair 150 120 $_tool -d mlx5_0 "$@"
	[ $LP_CLIENT_RC = 0 ] && [ $LP_SERVER_RC = 0 ] && grep -q '^1000 iters in' /tmp/lp-client &&
		grep -q '^1000 iters in' /tmp/lp-server
	ktap_result $? "$_name" "$LP_OUT"
	sed -n 's/^/# /p' /tmp/lp-client | grep iters
}

check "load the stack" load_stack
wait_for "mlx5_0's port is ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1
pingpong "ibv_rc_pingpong: 1000 x 4096 bytes, validated" ibv_rc_pingpong -n 1000 -s 4096 -c
pingpong "ibv_rc_pingpong: 1000 x 4096 bytes, completion events" ibv_rc_pingpong -n 1000 -s 4096 -c -e
check_output "no user QP, CQ or context is left" '^$' sh -c 'rdma resource show qp | grep " pid "; rdma resource show cq | grep " pid "; rdma resource show ctx; true'
check "the stack unloads" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

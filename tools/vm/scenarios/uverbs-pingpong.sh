# uverbs-pingpong: rdma-core's pingpong examples over ib_uverbs, the same on both stacks (issue
# 17): server and client in one VM, looped back through the port; libmlx5 builds WQEs in user
# memory, rings the doorbell through its UAR page and polls its CQs; the kernel made the
# objects (context, PD, MR, CQs, QPs) and moves the QPs through their states. The tool checks
# every received buffer (-c).
#   - ibv_rc_pingpong, 1000 x 4096 bytes, polling, then with completion events (-e: the CQ is
#     armed and its events read from the completion channel); ibv_ud_pingpong, 1000 x 2048
#     bytes (address handles are libmlx5's own on an InfiniBand port); ibv_srq_pingpong, 16 RC
#     QPs receiving from one SRQ;
#   - a server waiting for its client: `rdma res show qp|cq` list its QP (RC, INIT) and its CQ
#     as on C, with its pid; a waiting SRQ server's SRQ in `rdma res show srq`, with its QPs;
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
pingpong "ibv_ud_pingpong: 1000 x 2048 bytes, validated" ibv_ud_pingpong -n 1000 -s 2048 -c
pingpong "ibv_srq_pingpong: 1000 x 4096 bytes over 16 QPs sharing one SRQ, validated" ibv_srq_pingpong -n 1000 -s 4096 -c
# A server waiting for its client holds its objects, its QP in INIT.
ibv_rc_pingpong -d mlx5_0 -p 18600 >/dev/null 2>&1 &
server=$!
wait_for "a waiting server has its QP" 30 ' pid ' rdma resource show qp
# Numbers of QPs, PDs and CQs differ: C's mlx5_ib and MAD layer hold kernel objects of their
# own. Context ids are cyclic: the eight processes above had 0..7.
check_output "rdma resource show qp: the server's RC QP in INIT on port 1, its PD, its pid" \
	"^link mlx5_0/1 lqpn [0-9]+ rqpn 0 type RC state INIT rq-psn 0 sq-psn 0 path-mig-state MIGRATED pdn [0-9]+ pid $server comm ibv_rc_pingpong *\$" \
	sh -c 'rdma resource show qp | grep " pid "'
check_output "rdma resource show cq: its CQ (511 entries, used by the QP's two queues), context 8" \
	"^dev mlx5_0 cqn [0-9]+ cqe 511 users 2 adaptive-moderation off ctxn 8 pid $server comm ibv_rc_pingpong *\$" \
	sh -c 'rdma resource show cq | grep " pid "'
kill $server; wait $server 2>/dev/null
# An SRQ server waiting for its client: its SRQ lists the 16 QPs receiving from it.
ibv_srq_pingpong -d mlx5_0 -p 18601 >/dev/null 2>&1 &
server=$!
wait_for "a waiting SRQ server has its SRQ" 30 ' pid ' rdma resource show srq
echo "# $(rdma resource show srq | grep ' pid ')"
# iproute2 6.1 prints the QP range again where the task's name belongs (both stacks).
srq_line_ok() {
	_l=$(rdma resource show srq | grep " pid ")
	echo "$_l" | grep -Eq "^dev mlx5_0 srqn [0-9]+ type BASIC lqpn [0-9]+-[0-9]+ pdn [0-9]+ pid $server comm [0-9]+-[0-9]+ *\$" || return 1
	_r=$(echo "$_l" | sed 's/.* lqpn \([0-9]*\)-\([0-9]*\) .* comm \([0-9-]*\).*/\1 \2 \3/')
	set -- $_r
	[ $(($2 - $1)) = 15 ] && [ "$3" = "$1-$2" ]
}
check "rdma resource show srq: the server's basic SRQ with its 16 QPs (one range), its PD, its pid" srq_line_ok
kill $server; wait $server 2>/dev/null
check_output "no user QP, CQ, SRQ or context is left" '^$' sh -c 'rdma resource show qp | grep " pid "; rdma resource show cq | grep " pid "; rdma resource show srq | grep " pid "; rdma resource show ctx; true'
check "the stack unloads" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

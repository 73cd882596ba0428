# c-pingpong: rdma-core's pingpong examples on the C stack and cx-model, server and client in one
# VM, looped back through the same port: libmlx5 builds WQEs in user memory and rings the UAR
# doorbell; cx-model executes them (the data path) and delivers to the peer QP. Every exchange is
# checked by the tool (-c validates the received buffer).
# stacks: c
# timeout: 400
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

# pingpong <name> <tool> <args...>: server in the background, client in the foreground; both
# must finish and report 1000 iterations.
pingpong() {
	_name=$1
	_tool=$2
	shift 2
	loopback_pair 150 120 $_tool -d mlx5_0 -g 0 "$@"
	[ $LP_CLIENT_RC = 0 ] && [ $LP_SERVER_RC = 0 ] && grep -q '^1000 iters in' /tmp/lp-client &&
		grep -q '^1000 iters in' /tmp/lp-server
	ktap_result $? "$_name" "$LP_OUT"
	sed -n 's/^/# /p' /tmp/lp-client | grep iters
}

# counters: the port's data and packet counters, as ib_core's sysfs reads them (PerfMgmt MADs
# that mlx5_ib passes to the device).
COUNTERS=/sys/class/infiniband/mlx5_0/ports/1/counters
counters() {
	echo "$(cat $COUNTERS/port_xmit_data) $(cat $COUNTERS/port_rcv_data) $(cat $COUNTERS/port_xmit_packets) $(cat $COUNTERS/port_rcv_packets)"
}

check "load the C stack" load_stack
before=$(counters)
pingpong "ibv_rc_pingpong: 1000 x 4096 bytes, validated" ibv_rc_pingpong -n 1000 -s 4096 -c
after=$(counters)
# 1000 round trips of 4096 bytes through one port: 2000 messages sent and received, counted in
# 32-bit words.
counters_moved() {
	set -- $before $after
	[ $(($5 - $1)) -ge 2048000 ] && [ $(($6 - $2)) -ge 2048000 ] && [ $(($7 - $3)) -ge 2000 ] && [ $(($8 - $4)) -ge 2000 ]
}
check "port counters moved by the traffic" counters_moved
echo "# port counters (xmit data, rcv data, xmit packets, rcv packets): $before -> $after"
pingpong "ibv_rc_pingpong: 1000 x 4096 bytes, completion events" ibv_rc_pingpong -n 1000 -s 4096 -c -e
pingpong "ibv_ud_pingpong: 1000 x 4096 bytes, validated" ibv_ud_pingpong -n 1000 -s 4096 -c
pingpong "ibv_srq_pingpong: 1000 x 4096 bytes over 16 QPs sharing one SRQ, validated" ibv_srq_pingpong -n 1000 -s 4096 -c
check "unload the C stack" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

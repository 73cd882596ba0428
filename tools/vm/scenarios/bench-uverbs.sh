# bench-uverbs: what user verbs cost on this stack, through rdma-core (libibverbs, libmlx5) and
# ib_uverbs, server and client of perftest in one VM looped back through the port. Each of
# ROUNDS rounds prints `# bench <name> <value>` lines; tools/bench/verbs.py (`make bench`) takes
# the median per value and the ratio rust/c:
#   write_bw_kbps   ib_write_bw, 4 KiB RDMA writes: average bandwidth (KB/s, perftest's MB/s x 1000)
#   send_lat_ns     ib_send_lat, 2 bytes: perftest's typical (median) latency, in ns
#   mr64m_reg_us, mr64m_dereg_us, qp_per_s   uverbs_bench (tools/uverbs-bench): registering and
#                   deregistering 64 MiB, RC QPs created and destroyed per second
# Not part of `make test` (names starting with `bench-` are skipped there). The processes are
# pinned to CPU 0, as bench-verbs' module.
# stacks: rust c
# timeout: 900
# exclusive: yes
# Two CPUs: the benchmarks keep the guests they were measured on.
# cpus: 2

ROUNDS=3

round() {
	_bw=$(perftest_row ib_write_bw -s 4096 -n 5000) || return 1
	# #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]
	echo "# bench write_bw_kbps $(echo "$_bw" | awk '{ printf "%d", $4 * 1000 }')"
	_lat=$(perftest_row ib_send_lat -s 2 -n 2000) || return 1
	# #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9% (usec)
	case "$_lat" in *inf*) return 1 ;; esac
	echo "# bench send_lat_ns $(echo "$_lat" | awk '{ printf "%d", $5 * 1000 }')"
	taskset 1 uverbs_bench mlx5_0
}

check "load the stack" load_stack
wait_for "mlx5_0's port is ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1
rounds() {
	for i in $(seq $ROUNDS); do
		round >/tmp/round.out 2>&1 || { cat /tmp/round.out /tmp/lp-client /tmp/lp-server; return 1; }
		cat /tmp/round.out
	done
}
rounds >/tmp/rounds.out 2>&1
check "$ROUNDS rounds of perftest and uverbs_bench" test $? = 0
cat /tmp/rounds.out
check "the stack unloads" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

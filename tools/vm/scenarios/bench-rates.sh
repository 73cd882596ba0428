# bench-rates: the message rates of this stack with the doorbell's handoff made steady. Each
# doorbell is an MMIO write that QEMU's vCPU thread hands to cx-model, which runs the loopback
# in that write; on a host with two CPUs the scheduler placed the two threads differently from
# load to load and the rates moved up to five times (one run's 4 KiB SEND rate: 86k to 356k
# messages/s on the same stack). `# host-cpus: 0` keeps QEMU and cx-model on host CPU 0, where a
# doorbell costs one context switch every time and both stacks pay the same for it: the rates
# then held to a few per cent (docs/testing.md, make bench). Per load:
#   rate64, rate4096   ib_verbs_bench (samples/ib_verbs_bench.rs; C: tools/verbs-twin) with
#                      rounds=1: its SEND rates at 64 and 4096 bytes (its per-call values, one
#                      round each, are not read)
#   write_bw_kbps      ib_write_bw, 100000 RDMA writes of 4 KiB from user space (about 2 s):
#                      average bandwidth (KB/s). Not `-D 2`: in duration mode perftest refuses to
#                      report when its samples fit a line with r^2 < 0.9, which a test-kernel run hit
# tools/bench/verbs.py (`make bench`) takes the median per value over every load and the ratio
# rust/c. Not part of `make test` (names starting with `bench-` are skipped there).
# stacks: rust c
# timeout: 900
# exclusive: yes
# Two CPUs: the benchmarks keep the guests they were measured on.
# cpus: 2
# host-cpus: 0

LOADS=3
bench="$stack_dir/ib_verbs_bench.ko"

check "load the stack" load_stack
wait_for "mlx5_0's port is ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1
loads() {
	for i in $(seq $LOADS); do
		taskset 1 insmod "$bench" rounds=1 || return 1
		rmmod ib_verbs_bench || return 1
		_bw=$(perftest_row ib_write_bw -s 4096 -n 100000) || { cat /tmp/lp-client /tmp/lp-server; return 1; }
		# #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]
		echo "# bench write_bw_kbps $(echo "$_bw" | awk '{ printf "%d", $4 * 1000 }')"
	done
}
loads >/tmp/loads.out 2>&1
check "$LOADS loads of ib_verbs_bench and ib_write_bw on mlx5_0" test $? = 0
cat /tmp/loads.out
check_output "every load measured the rates" "^$LOADS\$" sh -c "dmesg | grep -c 'ib_verbs_bench: mlx5_0: bench done'"
check "no load failed" sh -c '! dmesg | grep "bench failed"'
dmesg | sed -n 's/.*ib_verbs_bench: mlx5_0: \(# bench rate.*\)/\1/p'
check "the stack unloads" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

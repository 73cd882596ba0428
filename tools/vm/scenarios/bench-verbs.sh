# bench-verbs: the data path's cost on this stack. The test-only module ib_verbs_bench (Rust:
# samples/ib_verbs_bench.rs; C stack: its twin tools/verbs-twin/ib_verbs_bench.c) makes, on
# mlx5_0, a PD, a CQ and an RC QP connected to itself, and times post_send (1 WR per call, every
# 16th signalled; 16 WRs per call), poll_cq per CQE (room for 1 and for 16 per call) and SEND
# messages per second at 64 and 4096 bytes; it prints `# bench <name> <value>` lines, freeing
# everything before its load returns. Loaded LOADS times per run; tools/bench/verbs.py (`make
# bench`) runs it in rounds that alternate the stacks and takes the median per value over all
# loads and the ratio rust/c. Not part of `make test` (names starting with
# `bench-` are skipped there). insmod, and with it the measurement (the client's add runs in
# insmod's ib_register_client), is pinned to CPU 0: on CPU 1 the doorbell's emulated cost fell
# into clusters 3 to 6 times apart from load to load more often (one C run: post16_ns 8 to
# 47 us); on CPU 0 it still does at times (docs/testing.md, make bench).
# stacks: rust c
# timeout: 900
# Two CPUs: the benchmarks keep the guests they were measured on.
# cpus: 2

LOADS=3
bench="$stack_dir/ib_verbs_bench.ko"

check "load the stack" load_stack
wait_for "mlx5_0 is registered" 20 '^mlx5_0$' ls /sys/class/infiniband
loads() {
	for i in $(seq $LOADS); do
		taskset 1 insmod "$bench" || return 1
		rmmod ib_verbs_bench || return 1
	done
}
check "$LOADS loads of ib_verbs_bench on mlx5_0" loads
check_output "every load measured everything" "^$LOADS\$" sh -c "dmesg | grep -c 'ib_verbs_bench: mlx5_0: bench done'"
check "no load failed" sh -c '! dmesg | grep "bench failed"'
dmesg | sed -n 's/.*ib_verbs_bench: mlx5_0: \(# bench .*\)/\1/p'
dmesg | grep 'ib_verbs_bench: mlx5_0: bench' || true
check "the stack unloads" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# bench-probe: how long mlx5_core takes from insmod to a bound, initialized function, on this
# stack, over several loads. Each load is bracketed by marks in the kernel log; their timestamps
# give the time. Prints `# bench probe_us <n>` lines that tools/bench/probe.py reads; `make bench`
# runs it on both stacks and reports the ratio. Not part of `make test` (names starting with
# `bench-` are skipped there).
# Module KUnit suites run when their module loads, inside insmod: they are off here (the harness
# default), so that the Rust mlx5_core's time is its probe, as the C one's.
# stacks: rust c
# timeout: 600
# Two CPUs: the benchmarks keep the guests they were measured on.
# cpus: 2

ROUNDS=7
dev=$(cx_device)
bdf=${dev##*/}

# Everything the stack loads before mlx5_core.
deps=$(sed '/^mlx5_core$/,$d' $stack_dir/order)
check "load what mlx5_core needs" load_stack $deps
bench_round() {
	echo "rdma-rs-bench: start" >/dev/kmsg
	insmod $stack_dir/mlx5_core.ko || return 1
	echo "rdma-rs-bench: ready" >/dev/kmsg
	[ -e /sys/bus/pci/drivers/mlx5_core/$bdf ] || return 1
	rmmod mlx5_core
}
rounds() {
	for i in $(seq $ROUNDS); do bench_round || return 1; done
}
check "$ROUNDS rounds of insmod mlx5_core, function bound each time" rounds
# The kernel log stamps each mark `[ seconds.micros]`.
dmesg | awk -F']' '
	/rdma-rs-bench: start/ { t0 = substr($1, 2) + 0 }
	/rdma-rs-bench: ready/ { printf "# bench probe_us %d\n", (substr($1, 2) - t0) * 1000000 }'
check "unload" unload_stack

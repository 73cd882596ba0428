# bench-insns: the instructions the data path (and memory registration) executes on this stack,
# for `make bench`. One load of ib_verbs_bench (Rust: samples/ib_verbs_bench.rs; C stack: tools/verbs-twin/ib_verbs_bench.c)
# with short message-rate runs, in a QEMU that tools/bench/verbs.py starts with the insn_marks
# plugin (tools/bench/insn_marks.c): the module's markers around each post_send and each round of
# polls make the plugin write one instruction count per interval, and verbs.py prints their
# medians per stack. Without the plugin the scenario runs and counts nothing. Not part of `make
# test` (names starting with `bench-` are skipped there). Pinned to CPU 0 as bench-verbs is.
# stacks: rust c
# timeout: 900
# cpus: 2

bench="$stack_dir/ib_verbs_bench.ko"

check "load the stack" load_stack
wait_for "mlx5_0 is registered" 20 '^mlx5_0$' ls /sys/class/infiniband
check "one load of ib_verbs_bench on mlx5_0" sh -c "taskset 1 insmod $bench rate_ms=1 && rmmod ib_verbs_bench"
check_output "the load measured everything" '^1$' sh -c "dmesg | grep -c 'ib_verbs_bench: mlx5_0: bench done'"
# ibv_reg_mr and ibv_dereg_mr of 64 MiB through ib_uverbs (tools/uverbs-bench: markers 6 and 7).
check_output "uverbs_bench measured registration" "^# bench mr64m_reg_us" sh -c "taskset 1 uverbs_bench mlx5_0 | head -n 1"
# The stack's symbols, for a per-function profile (verbs.py --profile): the modules' and the
# kernel's start (the rest of the kernel's come from its System.map).
grep -E '\[(mlx5_ib|mlx5_core|ib_core|ib_uverbs)\]$| _text$' /proc/kallsyms | sed 's/^/# ksym /'
check "the stack unloads" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

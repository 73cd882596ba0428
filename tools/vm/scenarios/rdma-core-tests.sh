# rdma-core-tests: rdma-core's own test suite (issue 37, first part): the Python tests the
# rdma-core developers ship (Debian's python3-pyverbs, /usr/share/doc/rdma-core/tests: devices,
# PDs, MRs, CQs, QPs, atomics, memory windows, XRC, DC, ODP, DevX, ...; 273 tests), unmodified,
# through pyverbs on mlx5_0, on both stacks at once: VM 0 runs the Rust stack, VM 1 the C stack
# (the oracle), each on its own cx-model. The guests get Python 3, pyverbs and the tests
# (`# guest-python: yes`); `guest/rdma_core_tests.py` runs them as their run_tests.py does
# (`--dev mlx5_0`) and writes each test's outcome (pass, fail, error, skip, ...). VM 1 serves its
# list over the guests' link (busybox httpd); VM 0 prints both lists side by side and where the
# stacks differ, and checks that every test the C stack passes, the Rust stack passes: a test C
# passes that Rust fails, errors, skips or does not reach fails the run, unless it is one of the
# known gaps below; a known gap that is no longer one (Rust passes it now, or C does not) fails
# the run too, so that the list stays exact. Each stack's totals (passed, failed, errors,
# skipped) are the name of an informational check, so a change in the counts shows in make
# test's output; each VM prints its raw outcome list (lines `rdma-core-tests <stack>: outcome,
# test, seconds, reason`) and the suite's own verbose output (`rdma-core-tests <stack>| `) into
# its console log. About 50 s per suite, 1 to 2 minutes for the run, alone on 2 cores (2026-11-29).
# vms: 2
# vm-stacks: rust c
# guest-python: yes
# timeout: 600
#
# Known gaps (KNOWN below; issue 37's second part): tests C passes and Rust does not yet. None
# today: the last two closed with mlx5's QUERY_PORT method (test_dv_query_port) and the import
# paths (QUERY_CONTEXT with mlx5's context response, PD_QUERY, QUERY_MR:
# test_imported_rc_ex_rdma_write). A new one fails the run until it is fixed or named here.
# Many tests draw their attributes at random (QP caps, creation flags); the runner seeds Python's
# random module per test (`--seed`, default "rdma-rs"), so that both stacks and every run make the
# same draws. Unseeded, test_create_ud_qp_ex_{no,with}_attr came out differently from run to
# run, on either stack (C passing where Rust skipped "not supported", and the other way round):
# with some creation flags the stacks decide a UD ibv_create_qp_ex differently (issue 37's second
# part); with this seed both pass on both stacks.
# Tests left out (EXCLUDE below, reported `excluded` on both stacks): none; none hangs or takes
# long under TCG (the longest, test_create_cq_ex_bad_flow, about 7 s).
# What the suite skips for reasons outside the stack (EFA, CUDA, crypto login files, the
# Ethernet link layer the model does not have, features the model lacks) it skips on both
# stacks, and is counted as skipped.

PORT=18700
TESTS=/usr/share/doc/rdma-core/tests
RUNNER=$TESTS/rdma_core_tests.py
# Tests not run (method names, or ids without `tests.`; with the reason in the header above).
EXCLUDE=""
# Tests C passes and Rust does not yet (ids without `tests.`; the reasons in the header above).
KNOWN=""
# Per-test limit (a test stuck in a loop is stopped with an error) and the whole suite's (about
# 50 s alone; three guests at once under make test run each slower).
TEST_SECS=120
SUITE_SECS=400
OUT=/tmp/www/outcomes-$STACK
mkdir -p /tmp/www

check "load the stack" load_stack
if [ "$VM_INDEX" = 0 ]; then
	check "VM 0 runs the Rust stack" sh -c "[ $STACK = rust ]"
else
	check "VM 1 runs the C stack" sh -c "[ $STACK = c ]"
fi
wait_for "mlx5_0 port 1 is ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1
wait_for "uverbs0 is there" 30 uverbs0 ls /dev/infiniband
# multiprocessing (test_device's fork tests, base.py) needs POSIX shared memory.
mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
check_output "python3 finds mlx5_0 through pyverbs" '^mlx5_0$' \
	python3 -c 'import pyverbs.device as d; print("\n".join(x.name.decode() for x in d.get_device_list()))'
meet net-up
check_output "ping $PEER_IP: 3 of 3 answered" ' 0% packet loss' ping -c 3 -W 5 "$PEER_IP"

excl=""
for t in $EXCLUDE; do excl="$excl --exclude $t"; done
t0=$(host_clock_ms)
timeout $SUITE_SECS python3 "$RUNNER" run --dev mlx5_0 --out "$OUT" --test-timeout $TEST_SECS $excl \
	>/tmp/suite.log 2>&1
rc=$?
t1=$(host_clock_ms)
secs=$(((t1 - t0) / 1000))
echo "rdma-core-tests: the suite's own output on $STACK (exit $rc, $secs s):"
sed "s/^/rdma-core-tests $STACK| /" /tmp/suite.log
echo "rdma-core-tests: the raw outcome list of $STACK (outcome, test, seconds, reason):"
sed "s/^/rdma-core-tests $STACK: /" "$OUT"
check_output "$STACK: the suite ran to its end (exit $rc, $secs s host time)" '^end' tail -n 1 "$OUT"
ktap_result 0 "$STACK: rdma-core tests: $(python3 "$RUNNER" totals "$OUT")"

# The other VM may finish its suite long after this one: wait for it as long as a suite may take.
meet_late() {
	_a=$(barrier "$1" $((SUITE_SECS + 120))) || ktap_result 1 "barrier $1: meet the other VM" "$_a"
}
if [ "$VM_INDEX" = 1 ]; then
	httpd -p $PORT -h /tmp/www
	wait_listening $PORT 10
	meet_late outcomes-served
	meet outcomes-compared
	kill $(pidof httpd) 2>/dev/null
else
	meet_late outcomes-served
	rm -f /tmp/outcomes-c
	check "the C stack's outcome list, fetched from VM 1" \
		wget -q -O /tmp/outcomes-c "http://$PEER_IP:$PORT/outcomes-c"
	meet outcomes-compared
	known=""
	for t in $KNOWN; do known="$known --known $t"; done
	python3 "$RUNNER" compare "$OUT" /tmp/outcomes-c $known >/tmp/compare 2>&1
	rc=$?
	sed 's/^/# /' /tmp/compare
	# Exit 1: a test C passes that Rust does not, not a known gap; +2: a stale known gap; more:
	# the comparison itself failed (its output's end is the diagnostic).
	[ $rc -gt 3 ] && rc=3 && echo "compare failed: $(tail -n 5 /tmp/compare)" >>/tmp/compare
	ktap_result $((rc & 1)) \
		"every test the C stack passes, the Rust stack passes (but the $(echo $KNOWN | wc -w) known gaps)" \
		"$(grep -E '^(c-only-pass|c:|rust:|compare failed)' /tmp/compare)"
	ktap_result $(((rc >> 1) & 1)) "every known gap is still one (C passes it, Rust does not)" \
		"$(grep -E '^(stale-known|compare failed)' /tmp/compare)"
	n=$(grep -c '<- differs' /tmp/compare)
	ktap_result 0 "the stacks' outcomes differ in $n tests: $(grep -c -E '^(c-only-pass|known-gap)' /tmp/compare) passed on C only, $(awk '$2 != "pass" && $3 == "pass"' /tmp/compare | grep -c 'differs') on Rust only"
fi

check "unload the stack" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# KTAP output for scenarios (sourced by /init). Each check prints one `ok N - name` or
# `not ok N - name` line, with the failing command's output as `# ` diagnostics.
KTAP_N=0
KTAP_FAILED=0

ktap_begin() {
	echo "KTAP version 1"
	echo "# rdma-rs scenario: $SCENARIO ($STACK)"
}

# ktap_result <0|1> <name> [diagnostic text]
ktap_result() {
	KTAP_N=$((KTAP_N + 1))
	if [ "$1" = 0 ]; then
		echo "ok $KTAP_N - $2"
	else
		KTAP_FAILED=$((KTAP_FAILED + 1))
		echo "not ok $KTAP_N - $2"
		[ -n "$3" ] && printf '%s\n' "$3" | sed 's/^/# /'
	fi
}

# check <name> <command...>: passes when the command exits 0.
check() {
	_name=$1
	shift
	_out=$("$@" 2>&1)
	ktap_result $? "$_name" "$_out"
}

# check_output <name> <pattern> <command...>: passes when the command succeeds and its output
# matches the extended regular expression.
check_output() {
	_name=$1
	_pat=$2
	shift 2
	_out=$("$@" 2>&1)
	_rc=$?
	if [ $_rc = 0 ] && printf '%s\n' "$_out" | grep -Eq -- "$_pat"; then
		ktap_result 0 "$_name"
	else
		ktap_result 1 "$_name" "exit $_rc, expected /$_pat/ in:
$_out"
	fi
}

# dmesg_clean <name>: no warning, bug, oops or lockdep splat in the kernel log so far.
dmesg_clean() {
	_bad=$(dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace:|general protection|possible (circular|recursive) locking|suspicious RCU|UBSAN|KASAN|kmemleak: [0-9]+ new suspected' | head -n 20)
	[ -z "$_bad" ]
	ktap_result $? "$1" "$_bad"
}

# kmemleak_clean <name>: ask kmemleak for a scan now and expect no new suspected leaks.
kmemleak_clean() {
	_f=/sys/kernel/debug/kmemleak
	if [ ! -w $_f ]; then
		ktap_result 1 "$1" "kmemleak is not available"
		return
	fi
	echo scan >$_f
	echo scan >$_f
	_leaks=$(cat $_f)
	[ -z "$_leaks" ]
	ktap_result $? "$1" "$_leaks"
}

# kunit_suite <suite>: emit the suite's KTAP results from debugfs as a subtest, and a top-level
# line that passes when every case passed.
kunit_suite() {
	_r=/sys/kernel/debug/kunit/$1/results
	if [ ! -r "$_r" ]; then
		ktap_result 1 "kunit:$1" "no results for suite $1 (not built, or module not loaded)"
		return
	fi
	sed 's/^/    /' "$_r"
	! grep -Eq '^[[:space:]]*not ok' "$_r" && grep -Eq '^[[:space:]]*ok' "$_r"
	ktap_result $? "kunit:$1"
}

ktap_end() {
	echo "1..$KTAP_N"
	echo "rdma-rs: ktap end, $KTAP_FAILED of $KTAP_N failed"
}

# wait_for <name> <seconds> <pattern> <command...>: passes once the command's output matches the
# extended regular expression, polling every 0.2 s for at most <seconds>.
wait_for() {
	_name=$1
	_secs=$2
	_pat=$3
	shift 3
	_tries=$((_secs * 5))
	while [ $_tries -gt 0 ]; do
		_out=$("$@" 2>&1)
		if printf '%s\n' "$_out" | grep -Eq -- "$_pat"; then
			ktap_result 0 "$_name"
			return
		fi
		sleep 0.2
		_tries=$((_tries - 1))
	done
	ktap_result 1 "$_name" "after ${_secs}s, expected /$_pat/ in:
$_out"
}

# module_lines <module>: the kernel log lines a module printed ("<module>: ..."), without their
# timestamps or the kernel's taint notice for the first out-of-tree module.
module_lines() {
	dmesg | sed -n "s/^\[[ 0-9.]*\] //; /taints kernel/d; /^$1: /p"
}

# module_lines_since <module> <mark>: its lines after the first <mark> of them (a mark is
# `module_lines <module> | wc -l` taken before a step).
module_lines_since() {
	module_lines "$1" | tail -n +$(($2 + 1))
}

# expect_lines <name> <module> <mark> <text>: passes when the module's lines since <mark> are
# exactly <text> (a step's output compared with the lines recorded from the C stack).
expect_lines() {
	_got=$(module_lines_since "$2" "$3")
	if [ "$_got" = "$4" ]; then
		ktap_result 0 "$1"
	else
		ktap_result 1 "$1" "expected:
$4
got:
$_got"
	fi
}

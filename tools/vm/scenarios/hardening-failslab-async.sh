# hardening-failslab-async: failing allocations in the drivers' other tasks (issue 16): the EQ
# interrupt thread (page requests, port changes, command completions), the work items (mlx5_ib's
# port events, the MAD layer's completion and timeout work), and the user tasks that reach the
# drivers through ib_umad. fail-nth (hardening-failslab) reaches only the task that arms it; here
# FAILSLAB and FAIL_PAGE_ALLOC fail an allocation in whatever task, when a return address on its
# stack lies in a range of one module's code (the stack-trace filter, require-start/require-end,
# CONFIG_FAULT_INJECTION_STACKTRACE_FILTER).
# stacks: rust
# timeout: 1500
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held
#
# The sweep, for each of mlx5_core, mlx5_ib, ib_core and ib_umad: the same workload runs again and
# again -- the device asks for 32 pages and offers them back, port 1 goes down and up, perfquery
# asks the port's PMA (a MAD through umad0, the MAD layer, mlx5_ib's MAD_IFC command) and a LID
# nobody has (the MAD layer's response timeout) -- with
# `times` 1: the first allocation (slab, or page) whose stack has a return address in the range
# fails. A run that injects a failure names, from the fault's stack dump (verbose 2), the
# innermost frame of the module in the range; the range is then split around that address and
# both halves run again; a range whose run injects nothing is done. The first range is the whole
# of the module's code, so every return address of the module found on the stack of an
# allocation the workload makes (32 frames deep) fails in some run, each in a run of its own.
# The workload's timing varies (which MAD or event comes first), and so, a little, does the set
# of addresses it reaches: 71 to 75 in four runs on 2026-11-27.
# After each run: no kernel report other than the injected failures' own dumps and the kernel's
# allocation-failure warnings. After each module's sweep: a workload without faults works (pages
# given and taken back, port 1 ACTIVE, perfquery answers). At the end the stack unloads, every
# firmware page is back and kmemleak is clean.
# Not covered: a failure at the n-th time a code address is reached when n > 1 (a loop's later
# allocations); hardening-failslab's fail-nth sweeps do that for the loading tasks.
# Rust only: the C stack's own failure paths are not ours to test here.

dbg=/sys/kernel/debug
MODULES="mlx5_core mlx5_ib ib_core ib_umad"


# settle <secs> <command...>: runs the command every 0.2 s until it succeeds or <secs> pass.
settle() {
	_tries=$(($1 * 5))
	shift
	while [ $_tries -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
		_tries=$((_tries - 1))
	done
	return 1
}

# given <held> <cannot-give>: the device holds <held> pages, or it was answered "cannot give" once
# more than <cannot-give> times (a failed allocation refuses the request at once).
given() { [ "$(pages_held)" = "$1" ] || [ "$(cannot_give)" -gt "$2" ]; }
held_at_most() { [ "$(pages_held)" -le "$1" ]; }
port_state() { grep -q "$1" /sys/class/infiniband/mlx5_0/ports/1/state; }

# device_events: the device asks for 32 pages and offers them back, port 1 goes down and up: the
# interrupt thread's work, and mlx5_ib's port-event work. Under injected failures a step may not
# complete (a request answered "cannot give", an event dropped): each waits a bounded time and the
# next runs anyway. Returns 0 when every step completed.
device_events() {
	_ok=0
	_held=$(pages_held)
	_cg=$(cannot_give)
	model_ctl page-request 32 >/dev/null
	settle 4 given $((_held + 32)) "$_cg"
	[ "$(pages_held)" = $((_held + 32)) ] || _ok=1
	model_ctl page-request -32 >/dev/null
	settle 4 held_at_most "$_held" || _ok=1
	model_ctl port 1 down >/dev/null
	settle 4 port_state DOWN || _ok=1
	model_ctl port 1 up >/dev/null
	settle 8 port_state ACTIVE || _ok=1
	return $_ok
}

# workload: device_events, then perfquery asks the port's PMA (a MAD through umad0, the MAD
# layer's send and completion work, mlx5_ib's MAD_IFC command), and asks LID 0x77, which nobody
# has (the MAD layer's response timeout: its timer's work, the ETIMEDOUT packet to umad0).
# Returns 0 when all completed (the second perfquery must fail).
workload() {
	_ok=0
	device_events || _ok=1
	perfquery -t 500 >/dev/null 2>&1 || _ok=1
	perfquery -t 50 0x77 >/dev/null 2>&1 && _ok=1
	return $_ok
}

# arm_filter: both fault attributes fail in any task, only through the stack-trace filter, at
# most `times` failures, each printed with its stack (no rate limit), GFP_KERNEL and order 0
# included; user pages and the page cache left alone (as hardening-failslab).
arm_filter() {
	for a in failslab fail_page_alloc; do
		echo 0 >$dbg/$a/times || return 1
		echo N >$dbg/$a/task-filter &&
			echo N >$dbg/$a/ignore-gfp-wait &&
			echo 1 >$dbg/$a/interval &&
			echo 0 >$dbg/$a/space &&
			echo 32 >$dbg/$a/stacktrace-depth &&
			echo 2 >$dbg/$a/verbose &&
			echo 0 >$dbg/$a/verbose_ratelimit_interval_ms &&
			echo 100 >$dbg/$a/probability || return 1
	done
	echo Y >$dbg/fail_page_alloc/ignore-gfp-highmem && echo 0 >$dbg/fail_page_alloc/min-order
}

disarm_filter() {
	for a in failslab fail_page_alloc; do
		echo 0 >$dbg/$a/times && echo 0 >$dbg/$a/probability && echo 0 >$dbg/$a/verbose || return 1
	done
}

# Module code is mapped in the top 2 GiB; addresses are handled as their low 32 bits (the shell's
# arithmetic is signed 64-bit).
low32() { echo $((0x${1#ffffffff})); }
full_addr() { printf '0xffffffff%08x' "$1"; }

# text_range <module>: "<start> <end>" (low 32 bits) of the module's code: from its first code
# symbol to the next symbol of anything after its last one.
text_range() {
	_first=$(awk -v m="[$1]" '$4 == m && ($2 == "t" || $2 == "T") { print $1 }' /proc/kallsyms | sort | head -n 1)
	_last=$(awk -v m="[$1]" '$4 == m && ($2 == "t" || $2 == "T") { print $1 }' /proc/kallsyms | sort | tail -n 1)
	_next=$(awk -v l="$_last" '$1 > l { print $1 }' /proc/kallsyms | sort | head -n 1)
	[ -n "$_first" ] && [ -n "$_last" ] || return 1
	if [ -z "$_next" ]; then _end=$(($(low32 "$_last") + 65536)); else _end=$(low32 "$_next"); fi
	echo "$(low32 "$_first") $_end"
}

# picks <module> <base> <lo> <hi>: for each injected failure in the kernel log, the innermost
# reliable frame of <module> whose address (symbol + offset) less <base> is in [lo, hi); those
# offsets, one per line.
picks() {
	dmesg | awk -v m="[$1]" '
		/FAULT_INJECTION: forcing a failure/ { dump++; next }
		dump && $NF == m && $(NF - 1) !~ /^\?/ && $(NF - 2) != "?" {
			split($(NF - 1), a, "+"); split(a[2], b, "/"); print dump, a[1], b[1]
		}' | while read -r _dump _sym _off; do
		_addr=$(awk -v s="$_sym" '$3 == s { print $1; exit }' /tmp/ksyms)
		[ -n "$_addr" ] || continue
		_a=$(($(low32 "$_addr") + _off - $2))
		[ $_a -ge "$3" ] && [ $_a -lt "$4" ] && echo "$_dump $_a"
	done | awk '!seen[$1]++ { print $2 }' | sort -n -u
}

REPORT='WARNING:|BUG:|Oops|Call Trace:|general protection|possible (circular|recursive) locking|suspicious RCU|UBSAN|KASAN'

# reported: the kernel log of this run has a report other than the injected failures' dumps
# (each "Call Trace:" follows a "FAULT_INJECTION: forcing a failure" or an allocation-failure
# warning of the kernel's own: "page allocation failure", "vmalloc error").
reported() {
	dmesg | grep -E "$REPORT" | grep -v 'Call Trace:' | grep -q . && return 0
	_traces=$(dmesg | grep -c 'Call Trace:')
	_explained=$(dmesg | grep -c -E 'FAULT_INJECTION: forcing a failure|page allocation failure:|vmalloc error:')
	[ "$_traces" -gt "$_explained" ]
}

fired() { echo $((2 - $(cat $dbg/failslab/times) - $(cat $dbg/fail_page_alloc/times))); }

# sweep <module>: the sweep of one module (see the header); prints its figures, fails on the
# first bad run with its details.
sweep() {
	_m=$1
	_range=$(text_range "$_m") || { echo "$_m: no code symbols in /proc/kallsyms"; return 1; }
	# The module's symbols, to turn the dumps' symbol+offset into addresses.
	awk -v m="[$_m]" '$4 == m' /proc/kallsyms >/tmp/ksyms
	_base=${_range% *}
	_todo="0:$((${_range#* } - _base))"
	_runs=0
	_points=0
	_clean=0
	_incomplete=0
	_blind=0
	while [ -n "$_todo" ]; do
		_cur=${_todo%% *}
		if [ "$_cur" = "$_todo" ]; then _todo=""; else _todo=${_todo#* }; fi
		_lo=${_cur%:*}
		_hi=${_cur#*:}
		_runs=$((_runs + 1))
		full_addr $((_base + _lo)) >$dbg/failslab/require-start
		full_addr $((_base + _hi)) >$dbg/failslab/require-end
		full_addr $((_base + _lo)) >$dbg/fail_page_alloc/require-start
		full_addr $((_base + _hi)) >$dbg/fail_page_alloc/require-end
		dmesg -c >/dev/null
		echo 1 >$dbg/failslab/times
		echo 1 >$dbg/fail_page_alloc/times
		workload || _incomplete=$((_incomplete + 1))
		_n=$(fired)
		echo 0 >$dbg/failslab/times
		echo 0 >$dbg/fail_page_alloc/times
		if reported; then
			echo "$_m: range +$_lo..+$_hi ($_n fault(s)): kernel report:"
			dmesg | grep -v -E '^\[ *[0-9.]+\] +(\? )?[^ ]+\+0x' | tail -n 40
			return 1
		fi
		if [ "$_n" = 0 ]; then
			_clean=$((_clean + 1))
			continue
		fi
		_p=$(picks "$_m" "$_base" "$_lo" "$_hi")
		echo "rdma-rs: $_m run $_runs: +$_lo..+$_hi: $_n fault(s) at" $_p >/dev/console
		if [ -z "$_p" ]; then
			# No frame of the module in the range was printed: split in the middle.
			_blind=$((_blind + 1))
			_p=$(((_lo + _hi) / 2))
		else
			_points=$((_points + $(echo "$_p" | wc -l)))
		fi
		_from=$_lo
		for _a in $_p; do
			[ $_a -gt "$_from" ] && _todo="$_from:$_a $_todo"
			_from=$((_a + 1))
		done
		[ "$_from" -lt "$_hi" ] && _todo="$_from:$_hi $_todo"
		_todo=${_todo% }
	done
	dmesg -c >/dev/null
	{
		echo "$_m: $_runs runs, $_points code addresses failed, $_clean ranges done"
		echo "  runs whose workload did not complete: $_incomplete; splits without a frame: $_blind"
	} | tee -a /tmp/sweeps
}

# recovered: with no fault armed, the workload completes.
recovered() {
	workload || { echo "the workload does not complete without faults"; return 1; }
}

# The interrupt thread's sweep: the same thread allocates again and again (EQ polls, pages for a
# request, their address lists, command mailboxes), so its n-th allocation is failed too, with
# fail-nth armed on the thread itself, for n = 1, 1 + IRQ_STRIDE, ... until a workload of page
# requests and port changes does not reach its n-th.
# IRQ_STRIDE is 10 here (155 points on 2026-11-27, 1 to 3 s each), to keep make test short;
# hardening-failslab-async-full runs every point.
IRQ_STRIDE=${FAILSLAB_IRQ_STRIDE:-10}

# irq_thread: the pid of mlx5_core's event interrupt thread (irq/<n>-mlx5_async0@pci:...).
irq_thread() {
	for _p in /proc/[0-9]*; do
		case $(cat "$_p/comm" 2>/dev/null) in
		irq/*-mlx5_as*) echo "${_p#/proc/}" && return 0 ;;
		esac
	done
	return 1
}

# irq_sweep: prints its figures; fails on the first run with a kernel report.
irq_sweep() {
	_t=$(irq_thread) || { echo "no mlx5_core interrupt thread"; return 1; }
	_n=1
	_runs=0
	_hit=0
	_incomplete=0
	while :; do
		_runs=$((_runs + 1))
		dmesg -c >/dev/null
		echo $_n >/proc/$_t/fail-nth
		device_events || _incomplete=$((_incomplete + 1))
		_left=$(cat /proc/$_t/fail-nth)
		echo 0 >/proc/$_t/fail-nth
		if reported; then
			echo "interrupt thread: fail-nth $_n: kernel report:"
			dmesg | tail -n 40
			return 1
		fi
		[ "$_left" = 0 ] || break
		_hit=$((_hit + 1))
		_n=$((_n + IRQ_STRIDE))
	done
	dmesg -c >/dev/null
	{
		echo "interrupt thread: $_runs runs up to point $_n (stride $IRQ_STRIDE), $_hit with a fault"
		echo "  runs whose workload did not complete: $_incomplete"
	} | tee -a /tmp/sweeps
}

check "the stack loads" load_stack
wait_for "mlx5_0 port 1 ACTIVE" 60 "state ACTIVE" rdma link show mlx5_0/1
check "the workload completes before any fault" workload
check "fault injection armed (GFP_KERNEL and order 0 included, verbose; times 0 until a run)" arm_filter
check_output "the interrupt thread: its n-th allocation failed, for every n the workload reaches" \
	"^interrupt thread: [0-9]+ runs up to point [0-9]+ \\(stride $IRQ_STRIDE\\), [0-9]+ with a fault\$" irq_sweep
check "after the interrupt thread's sweep, the workload completes without faults" recovered
for m in $MODULES; do
	check_output "sweep $m: every failure in its code, in any task, handled" \
		"^$m: [0-9]+ runs, [0-9]+ code addresses failed, [0-9]+ ranges done\$" sweep "$m"
	check "after the $m sweep, the workload completes without faults" recovered
done
check "fault injection disarmed" disarm_filter
sed 's/^/# /' /tmp/sweeps
check "the stack unloads" unload_stack
check_output "every firmware page is back" " 0 pages held" model_ctl status
kmemleak_clean "kmemleak: no leak after the sweeps"
check "no kernel report other than the injected failures' dumps" sh -c '! dmesg | grep -E "WARNING:|BUG:|Oops|general protection|possible (circular|recursive) locking|suspicious RCU|UBSAN|KASAN|kmemleak: [0-9]+ new suspected"'

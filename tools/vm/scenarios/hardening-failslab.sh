# hardening-failslab: failing allocations (issue 16).
# stacks: rust
# timeout: 1500
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held
# KUnit is off (the harness default): the suites a module runs at load would take the allocation points.
# For each step of bringing the Rust stack up -- loading ib_core; ib_uverbs (its device numbers
# and class; its device for mlx5_0 comes with mlx5_ib's step); ib_umad (the same for umad0 and
# issm0); mlx5_core (the PCI probe and the HCA bring-up of the emulated ConnectX-5 run in the
# loading task); mlx5_ib (the auxiliary probe and the registration of mlx5_0, with the MAD
# layer's QP0/QP1, CQ and buffers and ib_umad's devices, which clients add then); ib_verbs_client (the kernel verbs consumer: its client
# add on mlx5_0, PD, CQ, QPs, MR and 1000s of messages) -- the step runs again and again with
# /proc/<pid>/fail-nth = N: the N-th slab or page allocation of the loading task fails
# (FAILSLAB and FAIL_PAGE_ALLOC, sleeping allocations and order-0 pages included, user and
# page-cache pages not), for N = 1, 1 + STRIDE, 1 + 2 STRIDE, ... until a run completes without
# reaching its N-th allocation. The load is one finit_module() call (tools/load-once: busybox
# insmod would retry a failed load with init_module). After each run: the load failed or
# worked, and either way the state is whole (the module is loaded and works, or it is gone;
# mlx5_0 is registered or absent; the function is bound or not); the module then unloads (or
# stays for the next step once the sweep is done), and the kernel log of the run has no report.
# After the main sweeps, mlx5_ib's load again with only the allocations under kobj_map counted
# (`narrowed_sweep`: FAILSLAB's stack-trace filter narrows fail-nth), every point.
# Then the teardown: each module of the stack (the client first) unloaded by one delete_module()
# call with its N-th allocation failing (tools/unload-once arms fail-nth just before the call),
# N = 1, 1 + TSTRIDE, ... until one does not reach its N-th: an unload cannot fail, so each must
# complete and leave nothing of the module, with no kernel report.
# At the end, every firmware page is back (cx-model's count) and kmemleak is clean.
# Whether the fault fired is read from the fault attributes' `times` counter (each injected
# failure decrements it). Covered: what runs in insmod's task; work the drivers do in other tasks
# (the EQ interrupt thread, work items) is hardening-failslab-async's (fail-nth is per task).
# STRIDE is 41 here (about 1 run in 41 of the points, to keep make test short); hardening-failslab-full runs every point
# (and the client's first 600).
# Rust only: the C stack's own failure paths are not ours to test here (run it with STACK=c by
# hand for comparison).

STRIDE=${FAILSLAB_STRIDE:-41}
# The client allocates for every message it checks (thousands of points, seconds per run): its
# sweep covers the first CLIENT_LAST points (the client's add: PD, CQ, QP, MR, the first
# transitions and messages of phase 1), then one run without a fault.
CLIENT_LAST=${FAILSLAB_CLIENT_LAST:-150}
# The teardown sweeps' stride: every point, as unloads allocate far less than loads (under 40
# points each, 95 in all on 2026-11-27).
TSTRIDE=${FAILSLAB_TEARDOWN_STRIDE:-1}
dbg=/sys/kernel/debug
client="$stack_dir/ib_verbs_client.ko"
dev=$(cx_device)

# Arms FAILSLAB and FAIL_PAGE_ALLOC for fail-nth (stack.sh's `failnth_arm`).
arm_faults() {
	failnth_arm
}

# injected: failures injected so far (both attributes).
injected() {
	echo $((2000000 - $(cat $dbg/failslab/times) - $(cat $dbg/fail_page_alloc/times)))
}

REPORT='WARNING:|BUG:|Oops|Call Trace:|general protection|possible (circular|recursive) locking|suspicious RCU|UBSAN|KASAN'
KNOWN=0

# reported: the kernel log of this run has a report, other than the kernel's own: the stack dump
# of an allocation-failure warning (warn_alloc: "vmalloc error", "page allocation failure"), and
# the warning when an interrupt whose /proc/irq/<n>/ entries were lost to an injected failure is
# freed (register_irq_proc ignores the failure, unregister_irq_proc's remove_proc_entry then
# warns); any driver meets these under injection. They are counted in KNOWN.
reported() {
	_lines=$(dmesg | grep -E "$REPORT")
	[ -z "$_lines" ] && return 1
	if dmesg | grep -q -E 'unregister_irq_proc|vmalloc error:|page allocation failure:' &&
		! echo "$_lines" | grep -v -E 'Call Trace:|WARNING: fs/proc/generic.c:[0-9]+ at remove_proc_entry' | grep -q .; then
		KNOWN=$((KNOWN + 1))
		return 1
	fi
	return 0
}

# report_log: the kernel log of the run from just before its first report that `reported` does
# not tolerate (where the cause is, which the log's tail can miss), 64 lines.
report_log() {
	_l=$(dmesg | grep -n -E "$REPORT" | grep -v -E 'Call Trace:|remove_proc_entry' | head -n 1 | cut -d: -f1)
	if [ -n "$_l" ] && [ "$_l" -gt 3 ]; then _l=$((_l - 3)); else _l=1; fi
	dmesg | sed -n "$_l,$((_l + 63))p"
}

# narrow [<function>]: from now on fail-nth counts only the allocations with a return address
# inside the kernel function <function> on their stack (the stack-trace filter, 32 frames deep);
# without <function>, all allocations again (the filter's defaults).
narrow() {
	_start=0
	_end=18446744073709551615
	if [ -n "$1" ]; then
		_s=$(awk -v f="$1" '$3 == f && ($2 == "T" || $2 == "t") { print $1; exit }' /proc/kallsyms)
		[ -n "$_s" ] || { echo "$1: not in /proc/kallsyms"; return 1; }
		# Its end: the next symbol (the addresses have one width: they sort as strings).
		_e=$(awk -v s="$_s" '($1 "") > (s "") { print $1 }' /proc/kallsyms | sort | head -n 1)
		[ -n "$_e" ] || { echo "$1: no symbol after it"; return 1; }
		_start=0x$_s
		_end=0x$_e
	fi
	for a in failslab fail_page_alloc; do
		echo "$_start" >$dbg/$a/require-start && echo "$_end" >$dbg/$a/require-end || return 1
	done
}

# narrowed_sweep <step> <module file> <function>: `sweep` of <step> with every point (stride 1),
# counting only the allocations made under <function> (`narrow`).
narrowed_sweep() {
	narrow "$3" || return 1
	_stride=$STRIDE
	STRIDE=1
	echo "$1, allocations under $3 only:" >>/tmp/sweeps
	sweep "$1" "$2"
	_rc=$?
	STRIDE=$_stride
	narrow || return 1
	return $_rc
}

# whole <step>: the state after a run of <step> is whole (see the header).
whole() {
	case $1 in
	ib_core)
		# Loaded: its class exists; not loaded: nothing of it is left.
		if grep -q '^ib_core ' /proc/modules; then test -d /sys/class/infiniband; else test ! -e /sys/class/infiniband; fi
		;;
	ib_uverbs)
		# Loaded: its class exists; not loaded: no class, no node.
		if grep -q '^ib_uverbs ' /proc/modules; then test -d /sys/class/infiniband_verbs; else
			test ! -e /sys/class/infiniband_verbs && ! ls /dev/infiniband/uverbs* >/dev/null 2>&1; fi
		;;
	ib_umad)
		# Loaded: its class exists; not loaded: no class, no node.
		if grep -q '^ib_umad ' /proc/modules; then test -d /sys/class/infiniband_mad; else
			test ! -e /sys/class/infiniband_mad && ! ls /dev/infiniband/umad* >/dev/null 2>&1; fi
		;;
	mlx5_core)
		if grep -q '^mlx5_core ' /proc/modules; then
			# Bound: its auxiliary device exists; not bound: the probe undid everything.
			if [ -e "$dev/driver" ]; then test -e /sys/bus/auxiliary/devices/mlx5_core.rdma.0; else test ! -e /sys/bus/auxiliary/devices/mlx5_core.rdma.0; fi
		else
			test ! -e "$dev/driver"
		fi
		;;
	mlx5_ib)
		if grep -q '^mlx5_ib ' /proc/modules; then
			# Registered mlx5_0 has its port, or no mlx5_0 at all.
			if [ -e /sys/class/infiniband/mlx5_0 ]; then test -e /sys/class/infiniband/mlx5_0/ports/1/state; else true; fi
		else
			test ! -e /sys/class/infiniband/mlx5_0
		fi
		;;
	ib_verbs_client)
		# Whatever the client made on mlx5_0 is gone once it is unloaded (checked after rmmod).
		true
		;;
	esac
}

# works <step>: after a run without a fault, the step did its work.
works() {
	case $1 in
	ib_core) test -d /sys/class/infiniband ;;
	ib_uverbs) test -d /sys/class/infiniband_verbs ;;
	ib_umad) test -d /sys/class/infiniband_mad ;;
	mlx5_core) test -e "$dev/driver" && test -e /sys/bus/auxiliary/devices/mlx5_core.rdma.0 ;;
	mlx5_ib) test -e /sys/class/infiniband/mlx5_0/ports/1/state ;;
	ib_verbs_client) grep -q '^ib_verbs_client ' /proc/modules ;;
	esac
}

# sweep <step> <module file> [<last point>]: the sweep of one step, up to <last point> if given
# (then one run without a fault must work); prints what it did and fails on the first bad run
# (its details in the message).
sweep() {
	_step=$1
	_ko=$2
	_last=${3:-0}
	KNOWN=0
	_n=1
	_runs=0
	_failed=0
	while :; do
		_runs=$((_runs + 1))
		dmesg -c >/dev/null
		_before=$(injected)
		if [ "$_last" != 0 ] && [ $_n -gt "$_last" ]; then
			insmod "$_ko" 2>/tmp/insmod.err
		else
			sh -c "echo $_n >/proc/self/fail-nth && exec load_once $_ko" 2>/tmp/insmod.err
		fi
		_rc=$?
		_fired=$(($(injected) - _before))
		[ $_rc = 0 ] || _failed=$((_failed + 1))
		if ! whole "$_step"; then
			echo "$_step: fail-nth $_n (insmod exit $_rc, $_fired fault(s)): the state is not whole; log:"
			dmesg | tail -n 30
			return 1
		fi
		if [ $_fired = 0 ]; then
			# The run did not reach its N-th allocation: the sweep is over, and it must have worked.
			if [ $_rc != 0 ] || ! works "$_step"; then
				echo "$_step: fail-nth $_n: no fault injected, and the step did not work (insmod exit $_rc: $(cat /tmp/insmod.err)); log:"
				dmesg | tail -n 30
				return 1
			fi
			break
		fi
		if [ $_rc = 0 ]; then
			if [ "$_step" = ib_verbs_client ] && grep -q '^ib_verbs_client ' /proc/modules; then
				rmmod ib_verbs_client || { echo "$_step: fail-nth $_n: rmmod failed"; return 1; }
				if rdma res show qp 2>/dev/null | grep -q 'comm \[ib_verbs_client\]'; then
					echo "$_step: fail-nth $_n: a QP of the client is left after rmmod"
					return 1
				fi
			elif grep -q "^$_step " /proc/modules; then
				rmmod "$_step" || { echo "$_step: fail-nth $_n: rmmod failed"; return 1; }
			fi
			whole "$_step" || { echo "$_step: fail-nth $_n: not whole after rmmod"; return 1; }
		fi
		if reported; then
			echo "$_step: fail-nth $_n (insmod exit $_rc): kernel report:"
			report_log
			return 1
		fi
		_n=$((_n + STRIDE))
	done
	if reported; then
		echo "$_step: the last run: kernel report:"
		dmesg | grep -E "$REPORT" | head -n 5
		return 1
	fi
	{
		echo "$_step: $_runs runs up to point $_n (stride $STRIDE), $_failed failed loads, then loaded"
		[ "$_last" = 0 ] || echo "  (points 1 to $_last only, then a run without a fault)"
		echo "  kernel allocation-failure or /proc/irq warnings tolerated (see reported): $KNOWN"
	} | tee -a /tmp/sweeps
}

# gone <step>: nothing of <step> is left once it is unloaded.
gone() {
	case $1 in
	ib_core) test ! -e /sys/class/infiniband ;;
	ib_uverbs) test ! -e /sys/class/infiniband_verbs && ! ls /dev/infiniband/uverbs* >/dev/null 2>&1 ;;
	ib_umad) test ! -e /sys/class/infiniband_mad && ! ls /dev/infiniband/umad* >/dev/null 2>&1 ;;
	mlx5_core) test ! -e "$dev/driver" && test ! -e /sys/bus/auxiliary/devices/mlx5_core.rdma.0 ;;
	mlx5_ib) test ! -e /sys/class/infiniband/mlx5_0 ;;
	ib_verbs_client) ! rdma res show qp 2>/dev/null | grep -q 'comm \[ib_verbs_client\]' ;;
	esac
}

# teardown_sweep <step>: the unload of one module with its N-th allocation failing, for N = 1,
# 1 + TSTRIDE, ... until an unload does not reach its N-th allocation. Before each run the whole
# stack is loaded (the client too for its own step) and the modules loaded after <step> are
# unloaded without faults; then one delete_module() of <step> with fail-nth armed (tools/
# unload-once). An unload cannot fail: each must end with the module gone, nothing of it left
# (`gone`), and no kernel report. Prints what it did; fails on the first bad run.
teardown_sweep() {
	_step=$1
	KNOWN=0
	_n=1
	_runs=0
	_hit=0
	while :; do
		_runs=$((_runs + 1))
		load_stack || { echo "$_step: before fail-nth $_n: the stack does not load"; return 1; }
		_above=""
		if [ "$_step" = ib_verbs_client ]; then
			insmod "$client" || { echo "$_step: before fail-nth $_n: the client does not load"; return 1; }
		else
			_above=$(sed -n "/^$_step\$/,\$p" "$stack_dir/order" | sed 1d | sed '1!G;h;$!d')
		fi
		for _m in $_above; do
			rmmod "$_m" || { echo "$_step: before fail-nth $_n: rmmod $_m failed"; return 1; }
		done
		dmesg -c >/dev/null
		_out=$(unload_once "$_step" $_n 2>/tmp/unload.err)
		_rc=$?
		if [ $_rc != 0 ] || grep -q "^$_step " /proc/modules; then
			echo "$_step: fail-nth $_n ($_out): the unload did not complete (exit $_rc: $(cat /tmp/unload.err)); log:"
			dmesg | tail -n 30
			return 1
		fi
		if ! gone "$_step"; then
			echo "$_step: fail-nth $_n ($_out): something of it is left; log:"
			dmesg | tail -n 30
			return 1
		fi
		if reported; then
			echo "$_step: fail-nth $_n ($_out): kernel report:"
			report_log
			return 1
		fi
		case $_out in
		"fault injected") _hit=$((_hit + 1)) ;;
		"fault not reached") break ;;
		*) echo "$_step: fail-nth $_n: unload_once said '$_out'"; return 1 ;;
		esac
		_n=$((_n + TSTRIDE))
	done
	{
		echo "$_step: $_runs unloads up to point $_n (stride $TSTRIDE), $_hit with a fault"
		echo "  kernel allocation-failure or /proc/irq warnings tolerated (see reported): $KNOWN"
	} | tee -a /tmp/sweeps
}

check "fault injection armed (FAILSLAB, FAIL_PAGE_ALLOC; all allocations, silent)" arm_faults
for step in ib_core ib_uverbs ib_umad mlx5_core mlx5_ib; do
	check_output "sweep $step: every run failed cleanly or worked, then it loads" \
		"^$step: [0-9]+ runs up to point [0-9]+ \\(stride $STRIDE\\), [0-9]+ failed loads, then loaded\$" \
		sweep $step "$stack_dir/$step.ko"
done
# The clients' character devices (uverbs0, umad0, issm0), made while mlx5_ib registers mlx5_0:
# every failure of cdev_add's allocation (kobj_map), whatever STRIDE is. A failed cdev_add once
# dropped a reference to the device it had never taken (a refcount underflow, then a use after
# free; hardening-failslab-full found it at one point of its 2000s). At least one fault must fire.
check "mlx5_ib unloads for its narrowed sweep" rmmod mlx5_ib
check_output "sweep mlx5_ib, every point under kobj_map (cdev_add): each failed cleanly or worked" \
	"^mlx5_ib: ([2-9]|[1-9][0-9]+) runs up to point [0-9]+ \\(stride 1\\), [0-9]+ failed loads, then loaded\$" \
	narrowed_sweep mlx5_ib "$stack_dir/mlx5_ib.ko" kobj_map
check_output "the function is bound after the sweeps" "^mlx5_core\$" sh -c "basename \$(readlink $dev/driver)"
wait_for "mlx5_0 port 1 ACTIVE after the sweeps" 60 "state ACTIVE" rdma link show mlx5_0/1
check_output "sweep ib_verbs_client: every run failed cleanly or worked, then it loads" \
	"^ib_verbs_client: [0-9]+ runs up to point [0-9]+ \\(stride $STRIDE\\), [0-9]+ failed loads, then loaded\$" \
	sweep ib_verbs_client "$client" "$CLIENT_LAST"
check_output "the client's last load ran every phase on mlx5_0" "ib_verbs_client: mlx5_0: qp .* in state Rts" dmesg
check "the client unloads" rmmod ib_verbs_client
for step in ib_verbs_client mlx5_ib mlx5_core ib_umad ib_uverbs ib_core; do
	check_output "teardown sweep $step: every unload with a failed allocation completes and leaves nothing" \
		"^$step: [0-9]+ unloads up to point [0-9]+ \\(stride $TSTRIDE\\), [0-9]+ with a fault\$" \
		teardown_sweep $step
done
sed 's/^/# /' /tmp/sweeps
check "the stack unloads" unload_stack
check_output "every firmware page is back" " 0 pages held" model_ctl status
kmemleak_clean "kmemleak: no leak after the sweeps"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

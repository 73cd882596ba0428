# Loading and unloading the selected RDMA stack (sourced by /init). Modules live in
# /lib/modules/<stack>/ in load order, listed in /lib/modules/<stack>/order.

stack_dir=/lib/modules/$STACK

# load_stack [module...]: insmod the stack's modules in order (all of them by default).
load_stack() {
	_want="$*"
	while read -r _m; do
		if [ -n "$_want" ] && ! echo " $_want " | grep -q " $_m "; then continue; fi
		grep -q "^$_m " /proc/modules && continue
		insmod "$stack_dir/$_m.ko" || return 1
	done <"$stack_dir/order"
}

# unload_stack: rmmod every loaded module of the stack, in reverse order. Modules in
# $KEEP_MODULES stay (in two-VM runs the NIC driver uses dimlib, which the C stack shares).
unload_stack() {
	_rc=0
	for _m in $(sed '1!G;h;$!d' "$stack_dir/order"); do
		grep -q "^$_m " /proc/modules || continue
		case " $KEEP_MODULES " in *" $_m "*) continue ;; esac
		rmmod "$_m" || _rc=1
	done
	return $_rc
}

# host_clock_ms: the host's monotonic clock in milliseconds (asked of the harness). A guest's
# own clock is not trusted for durations: under TCG it has been seen running 40 times too fast.
host_clock_ms() {
	host_request 30 host-clock | sed -n 's/^ok host-clock \([0-9]*\)$/\1/p'
}

# unload_within SECS: unload_stack, and fail if it took SECS seconds or more of host time (for a
# device that is dead or gone, teardown must not wait out command timeouts).
unload_within() {
	_t0=$(host_clock_ms)
	unload_stack || return 1
	_t1=$(host_clock_ms)
	[ -n "$_t0" ] && [ -n "$_t1" ] || {
		echo "no host clock"
		return 1
	}
	echo "unloaded in $(((_t1 - _t0) / 1000)) s (host clock)"
	[ $(((_t1 - _t0) / 1000)) -lt "$1" ]
}

# loopback_pair SERVER_SECS CLIENT_SECS CMD...: runs CMD as a server in the background and, once
# it had time to listen, CMD localhost as its client, each under its own timeout. Sets
# LP_CLIENT_RC, LP_SERVER_RC and LP_OUT (both exit codes and outputs, for diagnostics); the
# outputs stay in /tmp/lp-client and /tmp/lp-server.
loopback_pair() {
	_ssecs=$1
	_csecs=$2
	shift 2
	timeout "$_ssecs" "$@" >/tmp/lp-server 2>&1 &
	_srv=$!
	sleep 3
	timeout "$_csecs" "$@" localhost >/tmp/lp-client 2>&1
	LP_CLIENT_RC=$?
	wait $_srv
	LP_SERVER_RC=$?
	LP_OUT="client exit $LP_CLIENT_RC, server exit $LP_SERVER_RC
$(cat /tmp/lp-client)
--- server
$(cat /tmp/lp-server)"
}

# perftest_row TOOL ARGS...: one perftest run looped back through mlx5_0's port, server and client
# pinned to CPU 0 (the benchmarks'); prints the client's result row (its last line of numbers), or
# fails when either side did (their output stays in /tmp/lp-client and /tmp/lp-server).
perftest_row() {
	loopback_pair 200 180 taskset 1 "$@" -d mlx5_0 -i 1
	[ $LP_CLIENT_RC = 0 ] && [ $LP_SERVER_RC = 0 ] || return 1
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' /tmp/lp-client | tail -n 1
}

# stack_loaded: lists the stack's modules currently loaded.
stack_loaded() {
	while read -r _m; do grep -q "^$_m " /proc/modules && echo "$_m"; done <"$stack_dir/order"
}

# cx_device: sysfs path of the emulated ConnectX-5 function (empty if absent).
cx_device() {
	for _d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$_d/vendor")" = 0x15b3 ] && [ "$(cat "$_d/device")" = 0x1017 ]; then
			echo "$_d"
			return
		fi
	done
}

# stack_loaded_line: the loaded modules of the stack on one line, space-separated.
stack_loaded_line() {
	stack_loaded | tr '\n' ' ' | sed 's/ $//'
}

# pci_cap_ids <sysfs device dir>: the standard capability IDs in config space, in list order
# (two hex digits each, space-separated).
pci_cap_ids() {
	_cfg="$1/config"
	_byte() { od -An -tx1 -j "$1" -N1 "$_cfg" | tr -d ' '; }
	_ptr=$((0x$(_byte 52)))
	_ids=""
	_n=0
	while [ "$_ptr" -ne 0 ] && [ $_n -lt 48 ]; do
		_ids="$_ids $(_byte $_ptr)"
		_ptr=$((0x$(_byte $((_ptr + 1)))))
		_n=$((_n + 1))
	done
	echo "${_ids# }"
}

# host_request <secs> <request...>: prints the request on the console for the harness and waits
# up to <secs> for its reply, which the harness types back into the console; prints the reply.
host_request() {
	_secs=$1
	shift
	echo "rdma-rs: host-request: $*" >/dev/console
	while read -r -t "$_secs" _tag _reply </dev/console; do
		if [ "$_tag" = rdma-rs-reply ]; then
			echo "$_reply"
			return 0
		fi
	done
	echo "no reply from the harness"
	return 1
}

# model_ctl <command...>: asks the harness to run a cx-model control command (port <n> up|down,
# health-error <synd> [fatal], health-clear, remove, status) on this guest's cx-model and prints
# the model's reply.
model_ctl() {
	host_request 30 "$@"
}

# model_status_field <sed pattern with one group>: that group of cx-model's status line.
model_status_field() {
	model_ctl status | sed -n "s/$1/\\1/p"
}

# pages_held: the firmware pages the driver has lent cx-model; cannot_give: how many page
# requests the driver answered "cannot give".
pages_held() { model_status_field '.*commands, \([0-9]*\) pages held.*'; }
cannot_give() { model_status_field '.* \([0-9]*\) cannot-give.*'; }

# barrier <name> [secs]: in a two-VM run, waits until the other guest reached the barrier <name>
# too (at most <secs>, default 300). The harness answers "ok barrier <name>" (exit 0), or an error
# at once when the peer has stopped or waits at another barrier (exit 1). Prints the answer.
# With one VM it passes at once.
barrier() {
	_answer=$(host_request "${2:-300}" barrier "$1")
	echo "$_answer"
	[ "$_answer" = "ok barrier $1" ]
}

# probe_fails <modules> <name> <pattern>...: loads <modules> of the stack (all when empty),
# expects the emulated function to stay unbound and each pattern in the kernel log written by
# this attempt, then unloads. For scenarios that inject firmware faults.
probe_fails() {
	_mods=$1
	_what=$2
	shift 2
	_dev=$(cx_device)
	dmesg -c >/dev/null
	load_stack $_mods
	check "$_what: the probe failed, the function is not bound" test ! -e "$_dev/driver"
	for _p in "$@"; do
		check_output "$_what: log says /$_p/" "$_p" dmesg
	done
	check "$_what: the stack unloads" unload_stack
}

# hotplug_start: starts the guest's udev stand-in (hotplug.sh, under busybox `uevent`) and replays
# the `add` event of every device that has a MODALIAS (what `udevadm trigger` does at boot), so
# the installed modules load by themselves; hotplug_stop ends it.
hotplug_start() {
	uevent /lib/rdma-rs/hotplug.sh </dev/null >/dev/null 2>&1 &
	HOTPLUG_PID=$!
	sleep 1
	for _u in /sys/bus/*/devices/*/uevent; do
		grep -q '^MODALIAS=' "$_u" 2>/dev/null && echo add >"$_u"
	done
	return 0
}

hotplug_stop() {
	[ -n "$HOTPLUG_PID" ] && kill "$HOTPLUG_PID" 2>/dev/null
	HOTPLUG_PID=
	return 0
}

# failnth_arm: arms FAILSLAB and FAIL_PAGE_ALLOC for fail-nth: every kernel allocation counts
# (also GFP_KERNEL and order 0), nothing is printed (an injected failure is not a kernel
# report), `times` counts down the failures injected; user pages and the page cache
# (__GFP_HIGHMEM) are left alone (a failed user page fault is retried: those points test
# nothing).
failnth_arm() {
	for _a in failslab fail_page_alloc; do
		echo N >/sys/kernel/debug/$_a/ignore-gfp-wait || return 1
		echo 0 >/sys/kernel/debug/$_a/verbose || return 1
		echo 1000000 >/sys/kernel/debug/$_a/times || return 1
	done
	echo Y >/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem &&
		echo 0 >/sys/kernel/debug/fail_page_alloc/min-order
}

# nvme_target_up NQN ADDR: exports a memory-backed null_blk namespace (1 GiB) as subsystem NQN
# through nvmet's configfs, on nvmet-rdma port 1 at ADDR:4420 (any host allowed): what
# `nvmetcli` writes. nvme_target_down NQN: takes it down and unloads nvmet-rdma, nvmet and
# null_blk.
NVMET_CFG=/sys/kernel/config/nvmet
nvme_target_up() {
	modprobe null_blk nr_devices=1 memory_backed=1 gb=1 || return 1
	modprobe nvmet-rdma || return 1
	grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs none /sys/kernel/config || return 1
	_s=$NVMET_CFG/subsystems/$1
	_p=$NVMET_CFG/ports/1
	mkdir $_s && echo 1 >$_s/attr_allow_any_host && mkdir $_s/namespaces/1 &&
		echo /dev/nullb0 >$_s/namespaces/1/device_path && echo 1 >$_s/namespaces/1/enable &&
		mkdir $_p && echo rdma >$_p/addr_trtype && echo ipv4 >$_p/addr_adrfam &&
		echo "$2" >$_p/addr_traddr && echo 4420 >$_p/addr_trsvcid && ln -s $_s $_p/subsystems/$1
}
nvme_target_down() {
	_s=$NVMET_CFG/subsystems/$1
	rm $NVMET_CFG/ports/1/subsystems/$1 && rmdir $NVMET_CFG/ports/1 &&
		echo 0 >$_s/namespaces/1/enable && rmdir $_s/namespaces/1 && rmdir $_s &&
		rmmod nvmet_rdma nvmet null_blk
}

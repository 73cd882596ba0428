# perftest: perftest's bandwidth and latency tools over ib_uverbs, on both stacks (issue 17: the
# set passes on the Rust stack as on C) and cx-model, server and client in one VM looped back
# through the port. Each run must finish and print its result table; the
# numbers are recorded in the log (under TCG they say little about the hardware) but not judged.
# RDMA WRITE and READ and atomics exercise the model's responder through remote keys; send
# latency exercises receives and completions one message at a time.
# stacks: rust c
# timeout: 600
# exclusive: yes
# Two CPUs: server and client poll their completion queues in one guest; on one CPU each waits
# out the other's time slice (a run took 53 s instead of 35, 2026-11-27).
# cpus: 2
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

# perf <name> <tool> <args...>: server in the background, client in the foreground; both must
# exit 0 and the client must print a result row (a line starting with the message size).
# perftest times with the CPU's cycle counter, which it calibrates first; under TCG on a loaded
# host the calibration sometimes fails ("Correlation coefficient r^2: 0.88 < 0.9", then either
# "Can't produce a report" and a failed exit, or, from the latency tools, exit 0 with a table of
# "inf") after the traffic itself went well. Such a run is tried once more, and the retry is
# said in the result's name. The scenario runs alone in make test (`exclusive`): with two other
# guests beside it, ib_send_lat's calibration failed (r^2 0.36, 2026-11-26).
perf() {
	_name=$1
	_tool=$2
	shift 2
	_try=""
	loopback_pair 200 180 $_tool -d mlx5_0 -i 1 "$@"
	if ! grep -Eq '^ *[0-9]+ +[0-9]+ +[0-9.]+' /tmp/lp-client &&
		printf '%s\n' "$LP_OUT" | grep -Eq "Can't produce a report|Correlation coefficient r\^2"; then
		_try=" (retried: the first run could not calibrate perftest's cycle counter)"
		loopback_pair 200 180 $_tool -d mlx5_0 -i 1 "$@"
	fi
	[ $LP_CLIENT_RC = 0 ] && [ $LP_SERVER_RC = 0 ] && grep -Eq '^ *[0-9]+ +[0-9]+ +[0-9.]+' /tmp/lp-client
	ktap_result $? "$_name$_try" "$LP_OUT"
	# The result table, for the record.
	grep -E '^ *#bytes|^ *[0-9]+ +[0-9]+ +[0-9.]+' /tmp/lp-client | sed 's/^/# /'
}

check "load the stack" load_stack
perf "ib_write_bw: 2000 x 64 KiB RDMA writes" ib_write_bw -s 65536 -n 2000
perf "ib_read_bw: 2000 x 64 KiB RDMA reads" ib_read_bw -s 65536 -n 2000
perf "ib_send_lat: 1000 x 2 bytes" ib_send_lat -s 2 -n 1000
perf "ib_write_lat: 1000 x 2 bytes" ib_write_lat -s 2 -n 1000
perf "ib_atomic_bw: 1000 fetch-and-add" ib_atomic_bw -n 1000
perf "ib_atomic_bw: 1000 compare-and-swap" ib_atomic_bw -n 1000 -A CMP_AND_SWAP
check "unload the stack" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

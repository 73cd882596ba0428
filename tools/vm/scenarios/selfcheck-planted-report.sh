# selfcheck-planted-report: a run that must FAIL. It writes a line shaped like a kernel warning
# into the kernel log (/dev/kmsg) and passes its own check; the harness's host check of the guest
# kernel log must still fail the run. `make test` runs it only in the harness self-check
# (tools/test/run_all.py), which expects exactly that failure.
# Rust only: it tests the harness's log check, not a stack (no module is loaded), so one
# stack is enough.
# stacks: rust

check "plant a warning-shaped line in the kernel log" sh -c \
	'echo "<4>WARNING: CPU: 0 PID: 1 at planted/by/the/harness-selfcheck.c:1 planted+0x0/0x0" >/dev/kmsg'

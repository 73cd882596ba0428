# c-errors: RC error completions through user space, the same on both stacks (the name is from
# when only C had user verbs; issue 17 runs it on the Rust stack too) and cx-model. verbs_errors (tools/verbs-errors)
# connects pairs of RC QPs on mlx5_0 port 1 to each other and drives them into errors: a bad
# lkey, a bad rkey, a receive too small for the SEND, an RDMA WRITE past the end of an MR. Each
# case checks the error status, the flushes that follow, the QP states and that no byte landed.
# Good SEND, WRITE and READ cases come first to show the path works. Then an SRQ: its sizes,
# modify and query, its limit event through the async event file, EBUSY while a QP uses it.
# stacks: rust c
# timeout: 400
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

out=/tmp/verbs-errors.out

# errors_case <case> <description>: one KTAP result from verbs_errors' `PASS/FAIL <case>` line;
# the diagnostics are the program's lines for that case.
errors_case() {
	_lines=$(grep -E "^(case $1:|FAIL $1:)" $out)
	if grep -qx "PASS $1" $out; then
		ktap_result 0 "$1: $2"
	elif grep -q "^FAIL $1:" $out; then
		ktap_result 1 "$1: $2" "$_lines"
	else
		ktap_result 1 "$1: $2" "verbs_errors (exit $rc) printed no result for $1; its last lines:
$(tail -n 15 $out)"
	fi
}

check "load the stack" load_stack
# C's mlx5 changes an MR's rights in place with a UMR work request, which cx-model does not
# execute: on C the old rights stay, so rereg-access runs on the Rust stack only (which makes
# the MR again, as C does where it cannot use UMR).
skip=""
[ "$STACK" = c ] && skip="-s rereg-access"
timeout 150 verbs_errors -d mlx5_0 -i 1 $skip >$out 2>&1
rc=$?
sed 's/^/verbs_errors| /' $out
errors_case good-send "SEND 4096 bytes succeeds, data verified"
errors_case good-write "RDMA WRITE 4096 bytes succeeds, data verified"
errors_case good-read "RDMA READ 4096 bytes succeeds, data verified"
errors_case bad-lkey "SEND with a bad lkey: LOC_PROT_ERR, two flushes, requester in ERR"
errors_case bad-rkey "RDMA WRITE with a bad rkey: REM_ACCESS_ERR, two flushes, requester in ERR"
errors_case recv-too-small "4096-byte SEND into a 64-byte receive: LOC_LEN_ERR and flush at the responder, REM_INV_REQ_ERR at the requester, both in ERR"
errors_case write-past-mr-end "RDMA WRITE past the end of the MR: REM_ACCESS_ERR, two flushes, requester in ERR, nothing written"
errors_case large-mr "RDMA WRITE and READ at 60 MiB of a 64 MiB MR (a page list past the command mailbox pool), data verified"
errors_case cq-resize "a CQ resized (past max_cqe: EINVAL), then completions on it"
errors_case rereg-mr "an MR moved to another buffer: writes with its key land there"
[ "$STACK" = rust ] && errors_case rereg-access "an MR's rights cut to local write: a remote write is REM_ACCESS_ERR, nothing written"
errors_case memlock "pinned memory charged to the process: past RLIMIT_MEMLOCK without CAP_IPC_LOCK, ENOMEM; given back on deregistration"
errors_case grh-path "QPs connected with a GRH and SL 2: the path reads back as set, a SEND goes through"
errors_case srq-limit "an SRQ: sizes as made, no resize, its limit armed, SRQ_LIMIT_REACHED when receives fall below it, EBUSY while its QP exists"
check "the stack unloads" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# hardening-user: what an unprivileged process, or a node on the fabric, can do to the stack
# (issue "Hardening II"), the same checks on both stacks unless said:
#  - completion events piled up (EVENTS rounds of arm + one completion on a CQ whose channel is
#    never read), then the CQ destroyed: its unread events are dropped in one linear pass with
#    interrupts off (before: one memmove per event, quadratic: seconds with interrupts off);
#  - short management datagrams (24-byte Get()s) to QP1 after full ones, from a UD QP with the
#    GSI Q_Key: the stack's "unsupported" answer echoes the MAD, and may carry nothing the
#    sender did not send (before, on rust: the tail of the receive slot's earlier MAD). C 7.3.4
#    reposts the buffer that held its previous answer (mad.c:2431), so its echoes of short MADs
#    carry that answer's tail (seen: every one of them), and it answers most of them late: on c
#    those figures are printed, not judged. The same to QP0 gets no answer on either stack: the
#    fabric (cx-model) drops datagrams to QP0 from any QP but QP0;
#  - an MR moved to a newer PD by REREG_MR, then the device file closed with both alive: the MR
#    goes first, no firmware command fails (cx-model refuses DEALLOC_PD of a PD in use), every
#    firmware object is back;
#  - uverbs_badinput --hostile: QP_CREATE with receive WQEs of 8 bytes and of 4 KiB (rust
#    EINVAL; C makes both QPs, telling the device of a receive stride the memory given does not
#    match: 256 bytes and 16 bytes, its `shift - 4` masked into 3 bits); then, on rust, 16 commands (PD, MR with rereg, completion channel, UAR, CQ,
#    QP with modify and query, SRQ with modify: each create, change and destroy) each run with
#    its N-th kernel allocation failing, for every N (fail-nth armed by the process itself):
#    each fails cleanly or works; afterwards `rdma res show qp` lists none of its QPs (before,
#    on rust: a QP freed after a failure stayed listed, and the listing read freed memory) and
#    every firmware object is back; then, on both stacks, the umad calls (open, REGISTER_AGENT,
#    REGISTER_AGENT2, a Get written, UNREGISTER_AGENT) the same way, after which an agent
#    registers and its Get is answered. (The uverbs sweeps on C 7.3.4 leave firmware QPs behind:
#    DESTROY_CQ then fails "resource busy" at close and ib_uverbs warns; not ours to test.)
#  - the new cases of uverbs_badinput's main run (mlx5's request at the top of the address
#    space, P_Key index and RDMA read depth past the device's) run in uverbs-devices.
# The test kernel has CONFIG_RUST_OVERFLOW_CHECKS: an arithmetic overflow a user causes panics
# the guest and fails the run.
# stacks: c rust
# timeout: 900

EVENTS=${HOSTILE_EVENTS:-100000}

check "load the stack" load_stack
wait_for "mlx5_0 port 1 ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1
wait_for "uverbs0 is there" 30 uverbs0 ls /dev/infiniband

# Completion events never read.
verbs_hostile events "$EVENTS" >/tmp/events.out 2>&1
echo "# $(tr '\n' ' ' </tmp/events.out)"
check_output "$EVENTS completion events made, none read" "^events queued $EVENTS\$" \
	sed -n '/^events queued/p' /tmp/events.out
us=$(sed -n 's/^destroy_cq us \([0-9]*\)$/\1/p' /tmp/events.out)
ktap_result $([ -n "$us" ] && [ "$us" -lt 2000000 ] && echo 0 || echo 1) \
	"destroying the CQ drops its unread events in under 2 s (took ${us:-?} us)"

# Short MADs to QP1 (and QP0).
verbs_hostile mad-short >/tmp/mad.out 2>&1
sed 's/^/# /' /tmp/mad.out
if [ "$STACK" = rust ]; then
	check_output "QP1: every full and every short vendor-class Get() answered" \
		'^QP1 vendor class: replies full 600 short 600 ' sed -n '/^QP1 vendor class: replies/p' /tmp/mad.out
	check_output "QP1: no answer to a short MAD carries bytes it did not send" \
		'^QP1 vendor class: short replies with bytes past the 24 sent: 0$' \
		sed -n '/^QP1 vendor class: short/p' /tmp/mad.out
fi
check_output "QP0: datagrams from a QP other than QP0 get no answer (the fabric drops them)" \
	'^QP0 Get\(SMInfo\): replies full 0 short 0 ' sed -n '/^QP0 Get(SMInfo): replies/p' /tmp/mad.out

# An MR moved to a newer PD, left for close. (C's mlx5_ib makes its UMR QP and CQ at the first
# rereg: only the PDs and memory keys are compared.)
pds_mkeys() { model_ctl objects | sed -n 's/.*\(pds [0-9]*\).*\(mkeys [0-9]*\).*/\1 \2/p'; }
pm_before=$(pds_mkeys)
check_output "rereg of an MR to a newer PD, then close with both alive" '^rereg to PD2: ok closed$' \
	sh -c 'echo $(verbs_hostile rereg-pd)'
check_output "its PDs and memory key are gone after the close" "^$pm_before\$" pds_mkeys
check "no firmware command failed (the MR went before its PD)" sh -c '! dmesg | grep -i -E "DEALLOC_PD|syndrome"'

# The process's own fail-nth over the command paths (stack.sh's `failnth_arm`).
check "fault injection armed for fail-nth" failnth_arm
objects_before=$(model_ctl objects)
uverbs_badinput --hostile "$STACK" >/tmp/hostile.out 2>&1
sed -n '/^#\|^failnth\|^sweep\|^not ok/p' /tmp/hostile.out
check_output "uverbs_badinput --hostile: every case as expected" '^uverbs_badinput: [0-9]+ passed, 0 failed$' \
	sed -n '/^uverbs_badinput:/p' /tmp/hostile.out
if [ "$STACK" = rust ]; then
	check_output "QP_CREATE's allocations were reached (some runs failed)" '^sweep QP_CREATE: [0-9]+ runs, [1-9][0-9]* failed$' \
		sed -n '/^sweep QP_CREATE:/p' /tmp/hostile.out
	check_output "every command's allocations were reached" '^failnth: [1-9][0-9]* points failed over 16 commands$' \
		sed -n '/^failnth:/p' /tmp/hostile.out
	check_output "rdma res show qp lists none of its QPs" '^# QPs of this process rdma res lists after the sweeps: 0$' \
		sed -n '/^# QPs of this process/p' /tmp/hostile.out
fi
check_output "every firmware object is back after it" "^$objects_before\$" model_ctl objects
lid=$(($(cat /sys/class/infiniband/mlx5_0/ports/1/lid)))
umad_badinput --failnth /dev/infiniband/umad0 "$lid" >/tmp/umad.out 2>&1
sed -n '/^#\|^sweep\|^umad\|^not ok/p' /tmp/umad.out
check_output "umad: every call's allocations were reached" '^umad failnth: [1-9][0-9]* points over 5 calls$' \
	sed -n '/^umad failnth/p' /tmp/umad.out
check_output "umad: afterwards an agent registers and its Get is answered" '^ok after the sweeps' \
	sed -n '/after the sweeps/p' /tmp/umad.out

check "unload the stack" unload_stack
# C 7.3 leaks the task of a process that registered MRs (see uverbs-devices): kmemleak is
# checked on rust only.
if [ "$STACK" = rust ]; then
	kmemleak_clean "rust: kmemleak: nothing leaked"
fi
dmesg_clean "dmesg: no warnings, oopses or lockdep reports"

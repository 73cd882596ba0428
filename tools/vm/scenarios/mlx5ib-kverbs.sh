# mlx5ib-kverbs: kernel verbs on the emulated ConnectX-5's hardware queues. The sample consumer
# (samples/ib_verbs_client.rs, an ib_core client) runs on mlx5_0 the sequence ibcore-verbs runs
# on the software test provider:
#   - a PD (ALLOC_PD), a CQ (CREATE_CQ on completion vector 0), an RC QP (CREATE_QP) walked
#     RESET->INIT->RTR->RTS connected to itself (the core refuses the two wrong transitions
#     first), a DMA MR (CREATE_MKEY, PA mode); one of each live;
#   - a 4096-byte SEND with immediate 0x1234 into a posted receive: both completions from the
#     CQ, the data intact, completion events through the UAR arm doorbell: one or two (the
#     client re-arms when its first poll finds nothing; if the device wrote the CQEs in between,
#     that arm, with the old consumer index, raises a second event at once, as C's mlx5_cq_arm
#     semantics say; the software provider completes synchronously and raises exactly one);
#   - an RDMA write and an RDMA read of 4096 bytes, data intact;
#   - a receive too short for the message: LocLenErr on the receive and RemInvReqErr on the
#     SEND (the QP is its own peer: cx-model delivers the NAK before the responder's error
#     flushes the QP, as a remote peer would), the QP in error (QUERY_QP says so), the next
#     receive, posted in the error state, flushed;
#   - a wrong rkey: RemAccessErr; after RESET and reconnect a SEND works again;
#   - the client's later phases, the C twin's (tools/verbs-twin; mlx5ib-verbs checks the lines C
#     prints on mlx5_0), with the twin's lines where the Rust stack prints them already:
#     UD (1000 datagrams to the QP itself through an AH, byte_len 296 with the 40-byte GRH
#     area), SRQ (1000 messages through an SRQ (an RMP) of 16 asked, 31 made; its limit armed
#     once: one event), RC ring wrap-around (1000 messages, SQ/RQ 8, CQ 16, 1 send in 8
#     signalled; the driver made sq 10 rq 8 cq 31, as C), inline sends (1000 of 64 bytes,
#     max_inline_data 120 as C) (the C lines); atomics
#     refused with EOPNOTSUPP as C's mlx5_ib does (the C line); errors (RNR retries exhausted and
#     the flush after, wrong lkey, wrong rkey on a read, recovery through RESET: the C line);
#     CQs the core polls: from its workqueue (the SEND and one receive done before the drain, the
#     other receive flushed to the done callback) and directly (nothing done until the consumer
#     asks, then both) (the C lines); a QP on an SRQ with a polled CQ: both completions done
#     before the drain, which ends on the last-WQE-reached event cx-model raises when the QP
#     enters the error state (the C line); mlx5ib-verbs compares every one of these lines with
#     the C twin's; this scenario adds the reload and the unbind under the client;
#   - unloading the client releases everything (DESTROY_QP, DESTROY_MKEY, DESTROY_CQ,
#     DEALLOC_PD); loaded again, it runs the whole sequence again; unloading mlx5_ib under it
#     unregisters mlx5_0, which removes it from the client first (its objects released while
#     the function is still there); then the stack unloads; a clean dmesg and kmemleak.
# Both stacks, the same checks and values: on c the consumer is the C twin (tools/verbs-twin),
# and the C stack passes every check, the reload and the unbind under the client included.
# stacks: rust c

client="$stack_dir/ib_verbs_client.ko"
v='ib_verbs_client: mlx5_0'

check "load the stack" load_stack
wait_for "mlx5_0 is registered" 20 '^mlx5_0$' ls /sys/class/infiniband
check "the verbs client loads" insmod "$client"
# ls shows mlx5_0 before its registration ends: the client's add can then run in the probing
# thread after insmod returns, so the checks below wait for its last line first.
wait_for "the client's add ran to its end" 60 '^1$' \
	sh -c "dmesg | grep -c 'ib_verbs_client: mlx5_0: 4 receive(s) left posted on qp'"
check_output "mlx5_0: PD, CQ, QP at RTS, MR; wrong transitions refused; one of each live" \
	"$v: qp 0x[0-9a-f]+ in state Rts \\(driver says Rts, dest qp 0x[0-9a-f]+\\), 2 wrong transition\\(s\\) refused, mr lkey 0x[0-9a-f]+; live: pd 1 cq 1 qp 1 mr 1\$" dmesg
check_output "mlx5_0: 4096-byte SEND with imm 0x1234 lands intact, both completions, one or two events" \
	"$v: send Send Success; recv Recv Success 4096 bytes imm 0x1234 from qp 0x[0-9a-f]+; data intact; [12] completion event\\(s\\)\$" dmesg
qpn=$(dmesg | sed -n 's/.*ib_verbs_client: mlx5_0: qp \(0x[0-9a-f]*\) in state.*/\1/p' | head -1)
check_output "mlx5_0: the receive names the QP itself ($qpn) as the sender" \
	"$v: send Send Success; recv .* from qp $qpn;" dmesg
check_output "mlx5_0: RDMA write and RDMA read of 4096 bytes, data intact" \
	"$v: rdma write RdmaWrite Success data intact; rdma read RdmaRead Success 4096 bytes data intact\$" dmesg
check_output "mlx5_0: a short receive fails both sides, the QP goes to error, the next receive is flushed" \
	"$v: short receive: recv LocLenErr, send RemInvReqErr, next recv Some\\(WrFlushErr\\); core says Rts, driver says Err\$" dmesg
check_output "mlx5_0: a wrong rkey gives RemAccessErr; after RESET and reconnect a SEND works again" \
	"$v: bad rkey: RemAccessErr; after reset and reconnect: send Success, recv Success, data intact\$" dmesg
check_output "mlx5_0: ud: 1000 messages through an AH, all intact behind the 40-byte GRH area (the C line)" \
	"$v: ud: 1000 messages of 256 bytes to own qp through an AH: 1000 sends completed, 1000 received intact with byte_len 296 \\(40-byte GRH area first\\), 0 failed completion\\(s\\)\$" dmesg
check_output "mlx5_0: srq: 1000 messages through an SRQ (16 asked, 31 made), the limit armed once raises one event (the C line)" \
	"$v: srq: 1000 messages of 512 bytes through an SRQ of 16 asked \\(driver: 31\\): 1000 received intact, 125 send completion\\(s\\) \\(1 in 8 signalled\\), 0 failed completion\\(s\\); limit 4 armed once: 1 limit event\\(s\\)\$" dmesg
check_output "mlx5_0: rc wrap: 1000 messages around rings of 8 and a CQ of 16, 1 send in 8 signalled, sizes as C made them (the C line)" \
	"$v: rc wrap: 1000 messages of 512 bytes, sq 8 rq 8 cq 16 asked \\(driver: sq 10 rq 8 cq 31\\): 1000 received intact, 125 send completion\\(s\\) \\(1 in 8 signalled\\), 0 failed completion\\(s\\)\$" dmesg
check_output "mlx5_0: inline: 1000 inline sends, max_inline_data 120 as C (the C line)" \
	"$v: inline: 1000 sends of 64 bytes inline \\(max_inline_data 120\\): 1000 received intact, 125 send completion\\(s\\), 0 failed completion\\(s\\)\$" dmesg
check_output "mlx5_0: atomics: as C mlx5_ib, post_send refuses both on a kernel QP and memory stays" \
	"$v: atomics: post_send refuses compare-and-swap \\(err -95\\) and fetch-and-add \\(err -95\\) on a kernel QP; memory 0x1111 untouched\$" dmesg
check_output "mlx5_0: errors: RNR retries exhausted then flush, wrong lkey, wrong rkey; recovery through RESET" \
	"$v: errors: send without receive, rnr_retry 0: RnrRetryExcErr, next send WrFlushErr; wrong lkey: LocProtErr; rdma read with wrong rkey: RemAccessErr; after reset and reconnect: send Success, recv Success, data intact\$" dmesg
check_output "mlx5_0: a CQ polled from the core's workqueue: done callbacks, then the drain's flush" \
	"$v: polled cq Workqueue \\(poll-ctx 1\\): 2 done before drain; drained; then 1 flushed to done, 0 other\$" dmesg
check_output "mlx5_0: a CQ polled directly: nothing until asked, then both, the drain flushes nothing" \
	"$v: direct cq: 0 done before asked, process_direct 2 \\(2 done\\), drained, 0 flushed\$" dmesg
check_output "mlx5_0: a QP on an SRQ with a polled CQ: both done before the drain, which ends on the last-WQE-reached event; the SRQ keeps its other receive (the C line)" \
	"$v: polled cq, qp on an srq: 2 done before drain; drained, 1 last wqe reached event\\(s\\); 0 flushed\$" dmesg
check "mlx5_0: no phase failed and no data was corrupt" \
	sh -c '! dmesg | grep -E "ib_verbs_client: .*(failed: err|CORRUPT)"'
check "no data path failure was logged" sh -c '! dmesg | grep "data path failed"'
check "the client unloads" rmmod ib_verbs_client
check_output "unloading the client released mlx5_0's objects" \
	"$v: released qp 0x[0-9a-f]+; live: pd 0 cq 0 qp 0 mr 0\$" dmesg
check "the client loads again" insmod "$client"
wait_for "the whole sequence runs again" 20 '^2$' sh -c "dmesg | grep -c '$v: bad rkey: RemAccessErr; after reset and reconnect: send Success, recv Success, data intact'"
check "mlx5_ib unloads under the client" rmmod mlx5_ib
check_output "unregistering mlx5_0 released its objects first" '^2$' sh -c "dmesg | grep -c '$v: released qp 0x[0-9a-f]*; live: pd 0 cq 0 qp 0 mr 0'"
check "the client unloads" rmmod ib_verbs_client
check "the stack unloads" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# mlx5ib-verbs: the kernel verbs consumer ib_verbs_client on mlx5_0 (the emulated ConnectX-5),
# compared line for line with the C stack.
# stacks: c rust
# timeout: 600
# On c the consumer is the C twin (tools/verbs-twin),
# on rust the Rust sample (samples/ib_verbs_client.rs); both are $stack_dir/ib_verbs_client.ko.
#   - phase 1, the Rust sample's sequence (as in ibcore-verbs): PD, CQ, RC QP at RTS looped back
#     to itself, DMA MR; 2 wrong transitions refused; one of each live; SEND with imm 0x1234,
#     RDMA write and read, short receive, bad rkey, reset and reconnect;
#   - further phases, one line each: UD (1000 messages through an AH, 40-byte GRH area), SRQ
#     (1000 messages, its limit armed once: one limit event), RC ring wrap-around (1000
#     messages, SQ/RQ 8, CQ 16, 1 send in 8 signalled), inline sends (1000), atomics (C mlx5_ib
#     refuses them on kernel QPs with EOPNOTSUPP: that is the C line), errors (RNR retries
#     exhausted and flush, wrong lkey, wrong rkey on a read) with recovery through RESET; CQs
#     the core polls (ib_alloc_cq): from its workqueue (done per completion, ib_drain_qp
#     flushes the outstanding receive to done), directly (nothing until ib_process_cq_direct;
#     the drain polls it itself), and a QP on an SRQ (the drain waits for last-WQE-reached);
#   - rust only, CQ resize: a CQ of 16 grown to 100 and shrunk to 10, 1000 messages at each
#     size; its own size again is a no-op, one past max_cqe EINVAL; then resized with a batch's
#     9 completions not polled yet, which all come after, in order (the model's MODIFY_CQ counts
#     them). Not compared with C: C 7.3 has no kernel API to resize a CQ (ib_resize_cq is gone;
#     only uverbs reaches mlx5_ib_resize_cq, as resize_user_cq), so the twin cannot; the driver
#     code is C's kernel-CQ branch (resize_kernel, copy_resize_cqes, the RESIZE_CQ entry in
#     mlx5_poll_one), except that C indexes the new ring with `(i + 1) & nent` (entry 0 or one
#     past its end) where ours masks with nent - 1;
#   - `rdma res show pd|cq|mr|qp` list exactly one object of each type for comm
#     [ib_verbs_client] while it is loaded, none after;
#   - the device unregistering under the client releases its objects; a device registering
#     later is added; unloading the client releases everything; kmemleak and dmesg clean.
# The phase 1 SEND raises one or two completion events on either stack: the client re-arms
# when its first poll finds nothing, and if the device wrote the CQEs in between, that arm (with
# the old consumer index) raises a second event at once (see mlx5ib-kverbs).
# Fields matched by regex because they legitimately differ between stacks: QP numbers (phase 1
# lines, lqpn/rqpn), memory keys (lkey, rkey, local_dma_lkey), pdn, cqn, mrn (restrack ids).
# Everything else is literal, as C prints it (sizes the C driver rounds: SRQ 16 -> 31, SQ 8 ->
# 10, CQ 16 -> 31, CQ 64 -> 127; max_inline_data 120; rust only: CQ 100 -> 127, 10 -> 15,
# 50 -> 63). rq-psn/sq-psn are the PSNs the client gave at RTR and RTS (4660): cx-model's
# QUERY_QP reports what the transitions set and does not advance the PSNs with traffic (both
# stacks query the same model).

# c-abi-twin runs this scenario on the Rust core with the C twin (client set, C_TWIN=1).
client="${client:-$stack_dir/ib_verbs_client.ko}"
qpn='0x[0-9a-f]+'
key='0x[0-9a-f]+'
setup="ib_verbs_client: mlx5_0: qp ($qpn) in state Rts \(driver says Rts, dest qp $qpn\), 2 wrong transition\(s\) refused, mr lkey $key; live: pd 1 cq 1 qp 1 mr 1\$"
# mine ARGS...: the lines of `rdma res show ARGS` that are the client's objects.
mine() {
	rdma res show "$@" | grep 'comm \[ib_verbs_client\]'
}

check "load the stack" load_stack
wait_for "mlx5_0 is registered" 30 '^mlx5_0$' ls /sys/class/infiniband
check "the verbs client loads" insmod "$client"
# ls shows mlx5_0 before its registration ends: the client's add can then run in the probing
# thread after insmod returns, so the checks below wait for its last line first.
wait_for "the client's add ran to its end" 60 '^1$' \
	sh -c "dmesg | grep -c 'ib_verbs_client: mlx5_0: 4 receive(s) left posted on qp'"
check_output "phase 1: PD, CQ, QP at RTS (its own dest qp), MR; wrong transitions refused; one of each live" \
	"$setup" dmesg
check_output "phase 1: the QP is its own destination" \
	'ib_verbs_client: mlx5_0: qp (0x[0-9a-f]+) in state Rts \(driver says Rts, dest qp \1\)' dmesg
check_output "phase 1: 4096-byte SEND with imm 0x1234 lands intact, both completions, one event" \
	"ib_verbs_client: mlx5_0: send Send Success; recv Recv Success 4096 bytes imm 0x1234 from qp $qpn; data intact; [12] completion event\(s\)\$" dmesg
check_output "phase 1: RDMA write and RDMA read of 4096 bytes, data intact" \
	'ib_verbs_client: mlx5_0: rdma write RdmaWrite Success data intact; rdma read RdmaRead Success 4096 bytes data intact$' dmesg
check_output "phase 1: a short receive fails both sides, the QP goes to error, the next receive is flushed" \
	'ib_verbs_client: mlx5_0: short receive: recv LocLenErr, send RemInvReqErr, next recv Some\(WrFlushErr\); core says Rts, driver says Err$' dmesg
check_output "phase 1: a wrong rkey gives RemAccessErr; after RESET and reconnect a SEND works again" \
	'ib_verbs_client: mlx5_0: bad rkey: RemAccessErr; after reset and reconnect: send Success, recv Success, data intact$' dmesg
check_output "ud: 1000 messages through an AH, all intact behind the 40-byte GRH area" \
	'ib_verbs_client: mlx5_0: ud: 1000 messages of 256 bytes to own qp through an AH: 1000 sends completed, 1000 received intact with byte_len 296 \(40-byte GRH area first\), 0 failed completion\(s\)$' dmesg
check_output "srq: 1000 messages through an SRQ, all intact; the limit armed once raises one event" \
	'ib_verbs_client: mlx5_0: srq: 1000 messages of 512 bytes through an SRQ of 16 asked \(driver: 31\): 1000 received intact, 125 send completion\(s\) \(1 in 8 signalled\), 0 failed completion\(s\); limit 4 armed once: 1 limit event\(s\)$' dmesg
check_output "rc wrap: 1000 messages around small rings, 1 send in 8 signalled" \
	'ib_verbs_client: mlx5_0: rc wrap: 1000 messages of 512 bytes, sq 8 rq 8 cq 16 asked \(driver: sq 10 rq 8 cq 31\): 1000 received intact, 125 send completion\(s\) \(1 in 8 signalled\), 0 failed completion\(s\)$' dmesg
check_output "inline: 1000 inline sends from unmapped memory, all intact" \
	'ib_verbs_client: mlx5_0: inline: 1000 sends of 64 bytes inline \(max_inline_data 120\): 1000 received intact, 125 send completion\(s\), 0 failed completion\(s\)$' dmesg
check_output "atomics: as C mlx5_ib, post_send refuses both on a kernel QP and memory stays" \
	'ib_verbs_client: mlx5_0: atomics: post_send refuses compare-and-swap \(err -95\) and fetch-and-add \(err -95\) on a kernel QP; memory 0x1111 untouched$' dmesg
check_output "errors: RNR retries exhausted then flush, wrong lkey, wrong rkey; recovery through RESET" \
	'ib_verbs_client: mlx5_0: errors: send without receive, rnr_retry 0: RnrRetryExcErr, next send WrFlushErr; wrong lkey: LocProtErr; rdma read with wrong rkey: RemAccessErr; after reset and reconnect: send Success, recv Success, data intact$' dmesg
check_output "polled cq: a CQ polled from ib_core's workqueue: done per completion, the drain flushes the outstanding receive" \
	'ib_verbs_client: mlx5_0: polled cq Workqueue \(poll-ctx 1\): 2 done before drain; drained; then 1 flushed to done, 0 other$' dmesg
check_output "polled cq: a CQ polled directly: nothing until asked, then both; the drain polls it itself" \
	'ib_verbs_client: mlx5_0: direct cq: 0 done before asked, process_direct 2 \(2 done\), drained, 0 flushed$' dmesg
# C's ib_drain_qp of a QP on an SRQ waits (up to 60 s) for IB_EVENT_QP_LAST_WQE_REACHED, which
# cx-model raises (MLX5_EVENT_TYPE_SRQ_LAST_WQE) when the QP enters the error state; the twin's
# QP event handler counts it.
check_output "polled cq: draining a QP on an SRQ after its last-WQE-reached event; the SRQ keeps its other receive" \
	'ib_verbs_client: mlx5_0: polled cq, qp on an srq: 2 done before drain; drained, 1 last wqe reached event\(s\); 0 flushed$' dmesg
# Rust only (see the header): CQ resize.
if [ "$STACK" = rust ] && [ -z "${C_TWIN:-}" ]; then
	check_output "rust only: cq resize: grown to 100, then shrunk to 10, 1000 messages at each size; the size it has changes nothing; past max_cqe EINVAL" \
		'ib_verbs_client: mlx5_0: cq resize: 16 asked \(driver: 31\); grown to 100 \(driver: 127\): 1000 received intact, 125 send completion\(s\), 0 failed; shrunk to 10 \(driver: 15\): 1000 received intact, 125 send completion\(s\), 0 failed; 15 again: 0 \(cqe 15\); max_cqe \+ 1: err -22$' dmesg
	check_output "rust only: cq resize with a batch's 9 completions waiting: all polled after, in order, intact" \
		'ib_verbs_client: mlx5_0: cq resize with completions waiting: a batch.s 9 completion\(s\) in the CQ \(event: true\) when it grew to 50 \(driver: 63\): 8 received intact in order, 1 send completion\(s\), 0 failed$' dmesg
	check_output "rust only: the model's MODIFY_CQ found those 9 completions not consumed" \
		'^ok cq resizes [0-9]+, most not consumed 9$' model_ctl cq-resizes
fi
check "no phase failed and no data was corrupt" sh -c '! dmesg | grep -E "ib_verbs_client: .*(failed: err|CORRUPT)"'

# The client's objects as `rdma res show` lists them, into the console for the record.
{ for t in pd cq mr; do mine $t dev mlx5_0; done; mine qp link mlx5_0; } | sed 's/^/# rdma res: /'
check_output "rdma res: one PD of the client (pdn, local_dma_lkey by regex), used by the QP and the MR" \
	"^dev mlx5_0 pdn [0-9]+ local_dma_lkey $key users 2 comm \[ib_verbs_client\] ?\$" mine pd dev mlx5_0
check_output "rdma res: one CQ of the client (cqn by regex): 64 asked, 127 made, no poll context" \
	'^dev mlx5_0 cqn [0-9]+ cqe 127 users 2 poll-ctx DIRECT adaptive-moderation off comm \[ib_verbs_client\] ?$' mine cq dev mlx5_0
check_output "rdma res: one MR of the client (mrn, keys by regex), a DMA MR" \
	"^dev mlx5_0 mrn [0-9]+ rkey $key lkey $key mrlen 0 comm \[ib_verbs_client\] ?\$" mine mr dev mlx5_0
check_output "rdma res: one RC QP of the client at RTS, looped back (lqpn, rqpn by regex)" \
	'^link mlx5_0/1 lqpn [0-9]+ rqpn [0-9]+ type RC state RTS rq-psn 4660 sq-psn 4660 path-mig-state MIGRATED comm \[ib_verbs_client\] ?$' mine qp link mlx5_0
check_output "rdma res: exactly one object of each type is the client's" '^1 1 1 1$' \
	sh -c 'for t in pd cq mr; do rdma res show $t dev mlx5_0 | grep -c "comm \[ib_verbs_client\]"; done | tr "\n" " "; rdma res show qp link mlx5_0 | grep -c "comm \[ib_verbs_client\]"'

check "the device unregisters under the client (mlx5_ib unloads)" rmmod mlx5_ib
check_output "the client released mlx5_0 first, nothing of it left live" \
	"ib_verbs_client: mlx5_0: released qp $qpn; live: pd 0 cq 0 qp 0 mr 0\$" dmesg
check "mlx5_ib loads again" load_stack mlx5_ib
wait_for "mlx5_0 registered again is added to the client: phase 1 again" 60 '^2$' \
	sh -c "dmesg | grep -cE '$setup'"
wait_for "and the last phase again" 60 '^2$' sh -c "dmesg | grep -c 'ib_verbs_client: mlx5_0: polled cq, qp on an srq: '"
check "the client unloads while the device stays" rmmod ib_verbs_client
check_output "unloading the client released the device's objects" '^2$' \
	sh -c "dmesg | grep -cE 'ib_verbs_client: mlx5_0: released qp $qpn; live: pd 0 cq 0 qp 0 mr 0\$'"
check_output "rdma res: nothing of the client is left" '^0 0 0 0 ?$' \
	sh -c 'for t in pd cq mr; do rdma res show $t dev mlx5_0 | grep -c "comm \[ib_verbs_client\]"; done | tr "\n" " "; rdma res show qp link mlx5_0 | grep -c "comm \[ib_verbs_client\]" || true'
check "no phase failed on the second device either" sh -c '! dmesg | grep -E "ib_verbs_client: .*(failed: err|CORRUPT)"'
check "the stack unloads" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

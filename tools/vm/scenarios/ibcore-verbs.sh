# ibcore-verbs: the kernel verbs API of the Rust ib_core, from a sample consumer
# (samples/ib_verbs_client.rs, an ib_core client) on the test provider's software devices:
#   - on every device it gets a PD, a CQ, an RC QP and a DMA MR; the core refuses wrong QP
#     transitions (RESET to RTR, RESET to INIT without a port) with EINVAL and takes the QP to
#     RTS; resource tracking counts each live object;
#   - the data path, through the QP connected to itself and two DMA buffers: a 4096-byte SEND
#     with immediate data 0x1234 lands intact in the posted receive, with both completions and
#     one completion event; an RDMA write and an RDMA read move 4096 bytes intact; a receive too
#     short for the message fails both sides (LocLenErr, RemInvReqErr), puts the QP in error
#     (the driver says so; the core keeps the state of the last modify, as C drivers do) and
#     flushes the next receive; a wrong rkey gives RemAccessErr; after RESET and reconnect a
#     SEND works again;
#   - the C twin's later phases (tools/verbs-twin), each on objects of its own freed at once:
#     UD (1000 messages through an AH, 40-byte GRH area), SRQ (1000 messages, its limit armed
#     once: one event), RC ring wrap-around (1000 messages, SQ/RQ 8, CQ 16, the sizes from
#     Qp::cap and Cq::cqe), inline sends (1000 of 64 bytes, SendWr::inline_data), atomics
#     (compare-and-swap and fetch-and-add, signalled and not), errors (RNR retries exhausted and
#     flush, wrong lkey, wrong rkey on a read) with recovery through RESET; CQs the core polls
#     (workqueue: `done` per completion, drain flushes what is outstanding; direct: nothing until
#     `process_direct`, drain polls itself; a QP on an SRQ: drain waits for last-WQE-reached);
#   - resource tracking lists the objects as C does (`rdma res show pd|cq|qp|mr`);
#   - a device that unregisters under the client is removed from it first (its objects freed),
#     then unregisters; a device that registers later is added; unloading the client frees
#     everything on every device; then a clean dmesg and kmemleak.
# stacks: rust

prov="$stack_dir/ib_test_provider.ko"
client="$stack_dir/ib_verbs_client.ko"
line() { # DEVICE: the client's report for it
	echo "ib_verbs_client: $1: qp 0x[0-9a-f]+ in state Rts \(driver says Rts, dest qp 0x[0-9a-f]+\), 2 wrong transition\(s\) refused, mr lkey 0x[0-9a-f]+; live: pd 1 cq 1 qp 1 mr 1\$"
}

check "load ib_core" load_stack ib_core
check "the test provider registers two devices" insmod "$prov" devices=2 ports=2
check "the verbs client loads" insmod "$client"
check_output "ibtest0: PD, CQ, QP at RTS, MR; wrong transitions refused; one of each live" "$(line ibtest0)" dmesg
check_output "ibtest1: the same" "$(line ibtest1)" dmesg
check_output "QP numbers and MR keys come from the driver" \
	'ibtest0: qp 0x100 in state Rts \(driver says Rts, dest qp 0x100\).*mr lkey 0x1001;' dmesg
for dev in ibtest0 ibtest1; do
	check_output "$dev: 4096-byte SEND with imm 0x1234 lands intact, both completions, one event" \
		"ib_verbs_client: $dev: send Send Success; recv Recv Success 4096 bytes imm 0x1234 from qp 0x100; data intact; 1 completion event\(s\)\$" dmesg
	check_output "$dev: RDMA write and RDMA read of 4096 bytes, data intact" \
		"ib_verbs_client: $dev: rdma write RdmaWrite Success data intact; rdma read RdmaRead Success 4096 bytes data intact\$" dmesg
	check_output "$dev: a short receive fails both sides, the QP goes to error, the next receive is flushed" \
		"ib_verbs_client: $dev: short receive: recv LocLenErr, send RemInvReqErr, next recv Some\(WrFlushErr\); core says Rts, driver says Err\$" dmesg
	check_output "$dev: a wrong rkey gives RemAccessErr; after RESET and reconnect a SEND works again" \
		"ib_verbs_client: $dev: bad rkey: RemAccessErr; after reset and reconnect: send Success, recv Success, data intact\$" dmesg
done
# The later phases are the C twin's (tools/verbs-twin), with the same lines; what differs from
# mlx5_0 (mlx5ib-verbs) is the device's: the provider makes queues as asked (SRQ 16, SQ/RQ 8,
# CQ 16, inline 64) and does atomics.
for dev in ibtest0 ibtest1; do
	check_output "$dev: ud: 1000 messages through an AH, all intact behind the 40-byte GRH area" \
		"ib_verbs_client: $dev: ud: 1000 messages of 256 bytes to own qp through an AH: 1000 sends completed, 1000 received intact with byte_len 296 \(40-byte GRH area first\), 0 failed completion\(s\)\$" dmesg
	check_output "$dev: srq: 1000 messages through an SRQ, all intact; the limit armed once raises one event" \
		"ib_verbs_client: $dev: srq: 1000 messages of 512 bytes through an SRQ of 16 asked \(driver: 16\): 1000 received intact, 125 send completion\(s\) \(1 in 8 signalled\), 0 failed completion\(s\); limit 4 armed once: 1 limit event\(s\)\$" dmesg
	check_output "$dev: rc wrap: 1000 messages around rings of 8 (the QP's and CQ's sizes as the driver made them), 1 send in 8 signalled" \
		"ib_verbs_client: $dev: rc wrap: 1000 messages of 512 bytes, sq 8 rq 8 cq 16 asked \(driver: sq 8 rq 8 cq 16\): 1000 received intact, 125 send completion\(s\) \(1 in 8 signalled\), 0 failed completion\(s\)\$" dmesg
	check_output "$dev: inline: 1000 sends of 64 bytes from SendWr::inline_data, all intact" \
		"ib_verbs_client: $dev: inline: 1000 sends of 64 bytes inline \(max_inline_data 64\): 1000 received intact, 125 send completion\(s\), 0 failed completion\(s\)\$" dmesg
	check_output "$dev: cq resize: the provider has no resize_cq, so the core refuses with EOPNOTSUPP" \
		"ib_verbs_client: $dev: cq resize: the driver cannot resize CQs \(err -95\)\$" dmesg
	check_output "$dev: atomics: compare-and-swap (equal and not) and fetch-and-add, signalled and not, with C's semantics" \
		"ib_verbs_client: $dev: atomics: cas 0x1111->0x2222 CompSwap Success old 0x1111 mem 0x2222; cas 0x1111->0x3333 Success old 0x2222 mem 0x2222; fetch-add 0x10 FetchAdd Success old 0x2222 mem 0x2232; unsignalled fetch-add 1 then signalled fetch-add 1: Success old 0x2233 mem 0x2234, 0 more completion\(s\)\$" dmesg
	check_output "$dev: errors: RNR retries exhausted then flush, wrong lkey, wrong rkey; recovery through RESET" \
		"ib_verbs_client: $dev: errors: send without receive, rnr_retry 0: RnrRetryExcErr, next send WrFlushErr; wrong lkey: LocProtErr; rdma read with wrong rkey: RemAccessErr; after reset and reconnect: send Success, recv Success, data intact\$" dmesg
	check_output "$dev: a CQ polled from a workqueue gives each completion to done; draining the QP flushes the outstanding receive to done, not the markers" \
		"ib_verbs_client: $dev: polled cq Workqueue \(poll-ctx 1\): 2 done before drain; drained; then 1 flushed to done, 0 other\$" dmesg
	check_output "$dev: a direct CQ is polled only when asked; its drain polls it itself" \
		"ib_verbs_client: $dev: direct cq: 0 done before asked, process_direct 2 \(2 done\), drained, 0 flushed\$" dmesg
	check_output "$dev: draining a QP on an SRQ waits for last-WQE-reached; the SRQ keeps its other receive" \
		"ib_verbs_client: $dev: polled cq, qp on an srq: 2 done before drain; drained, 1 last wqe reached event\(s\); 0 flushed\$" dmesg
done
check "no phase failed and no data was corrupt" sh -c '! dmesg | grep -E "ib_verbs_client: .*(failed: err|CORRUPT)"'
check "no data path failure was logged" sh -c '! dmesg | grep "data path failed"'
# Resource tracking lists the objects as C does (`rdma res show pd|cq|qp|mr`, netlink
# RES_{PD,CQ,QP,MR}_GET dumps and doits): ids per device and type from 0 (QPs: their number),
# the creating module as `comm`, C's use counts, keys for CAP_NET_ADMIN (root here). The PD's
# local_dma_lkey is its internal DMA MR's (the test provider has no device-wide one). A CQ of
# `Cq::create` has C's `ib_create_cq` poll context, 0 (IB_POLL_SOFTIRQ), which iproute2 names
# DIRECT (its table is older than the kernel enum); the PSNs are the client's 0x1234.
for dev in ibtest0 ibtest1; do
	check_output "$dev: rdma res show pd" \
		"^dev $dev pdn 0 local_dma_lkey 0x1001 users 2 comm \[ib_verbs_client\] ?\$" rdma res show pd dev $dev
	check_output "$dev: rdma res show cq" \
		"^dev $dev cqn 0 cqe 64 users 2 poll-ctx DIRECT adaptive-moderation off comm \[ib_verbs_client\] ?\$" rdma res show cq dev $dev
	check_output "$dev: rdma res show mr" \
		"^dev $dev mrn 0 rkey 0x1001 lkey 0x1001 mrlen 0 comm \[ib_verbs_client\] ?\$" rdma res show mr dev $dev
	check_output "$dev: rdma res show qp" \
		"^link $dev/1 lqpn 256 rqpn 256 type RC state RTS rq-psn 4660 sq-psn 4660 path-mig-state MIGRATED comm \[ib_verbs_client\] ?\$" rdma res show qp link $dev
done
check_output "rdma -j res show pd" '^\[\{"ifindex":0,"ifname":"ibtest0","pdn":0,"local_dma_lkey":"1001","users":2,"comm":"ib_verbs_client"\}\]$' rdma -j res show pd dev ibtest0
check_output "rdma -j res show qp" '^\[\{"ifindex":0,"ifname":"ibtest0","port":1,"lqpn":256,"rqpn":256,"type":"RC","state":"RTS","rq-psn":4660,"sq-psn":4660,"path-mig-state":"MIGRATED","comm":"ib_verbs_client"\}\]$' rdma -j res show qp link ibtest0
check_output "a QP by number (doit)" "^link ibtest1/1 lqpn 256 .*comm \[ib_verbs_client\]" rdma res show qp link ibtest1/1 lqpn 256
check_output "a CQ by number (doit)" "^dev ibtest1 cqn 0 cqe 64 " rdma res show cq dev ibtest1 cqn 0
check_output "no QP 257, no CQ 1" '^$' sh -c 'rdma res show qp link ibtest1/1 lqpn 257 2>&1; rdma res show cq dev ibtest1 cqn 1 2>&1'
check_output "no QP on port 2 of ibtest1" '^$' sh -c 'rdma res show qp link ibtest1/2 2>&1'
check "the provider unloads under the client" rmmod ib_test_provider
check_output "the client released ibtest1 first, nothing left live" \
	'ib_verbs_client: ibtest1: released qp 0x100; live: pd 0 cq 0 qp 0 mr 0$' dmesg
check_output "and ibtest0" 'ib_verbs_client: ibtest0: released qp 0x100; live: pd 0 cq 0 qp 0 mr 0$' dmesg
check "devices registered later are added to the client" insmod "$prov" devices=1 ports=1
wait_for "ibtest0 added again" 5 '^2$' sh -c "dmesg | grep -cE '$(line ibtest0)'"
check "the client unloads while the device stays" rmmod ib_verbs_client
check_output "unloading the client released the device's objects" \
	'ib_verbs_client: ibtest0: released qp 0x100; live: pd 0 cq 0 qp 0 mr 0$' sh -c "dmesg | tail -n 20"
check "the provider unloads" rmmod ib_test_provider
check "ib_core unloads" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

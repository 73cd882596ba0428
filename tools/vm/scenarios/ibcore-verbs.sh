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
#   - on objects of its own, freed at once: a UD datagram through an AH (with a GRH) into a QP
#     receiving from an SRQ, whose armed limit fires once; that QP in error raises
#     last-WQE-reached; fetch-and-add and compare-and-swap on an RC QP; CQs the core polls
#     (workqueue: `done` per completion, drain flushes what is outstanding; direct: nothing until
#     `process_direct`, drain polls itself);
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
for dev in ibtest0 ibtest1; do
	check_output "$dev: a UD datagram with a GRH through an AH lands in an SRQ receive (GRH space, source QP, SL), the SRQ limit fires once" \
		"ib_verbs_client: $dev: ud: send Send Success; recv Recv Success 296 bytes from qp 0x101 sl 3 grh yes; data intact; srq limit event\(s\) 1, limit now 0\$" dmesg
	check_output "$dev: the SRQ's QP in error raises last-WQE-reached" \
		"ib_verbs_client: $dev: srq: qp 0x102 in error: last wqe reached event\(s\) 1\$" dmesg
	check_output "$dev: fetch-and-add and compare-and-swap with C's semantics" \
		"ib_verbs_client: $dev: atomics: fetch-add FetchAdd Success 8 bytes old 5 now 8; cmp-swap CompSwap Success old 8 now 100; unequal cmp-swap old 100 now 100\$" dmesg
	check_output "$dev: a CQ polled from a workqueue gives each completion to done; draining the QP flushes the outstanding receive to done, not the markers" \
		"ib_verbs_client: $dev: polled cq Workqueue \(poll-ctx 1\): 2 done before drain; drain Ok\(\(\)\); then 1 flushed to done, 0 other\$" dmesg
	check_output "$dev: a direct CQ is polled only when asked; its drain polls it itself" \
		"ib_verbs_client: $dev: direct cq: 0 done before asked, process_direct 2 \(2 done\), drain Ok\(\(\)\), 0 flushed\$" dmesg
	check_output "$dev: draining a QP on an SRQ waits for last-WQE-reached; the SRQ keeps its other receive" \
		"ib_verbs_client: $dev: polled cq, qp on an srq: 2 done before drain; drain Ok\(\(\)\) after last wqe reached; 0 flushed\$" dmesg
done
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

# mlx5ib-verbs-removal: surprise removal of the function under the kernel verbs consumer
# ib_verbs_client, compared with the C stack. The client is loaded and has finished its phases,
# with 4 receives left posted on phase 1's QP; then the model drops off the bus (every register
# reads all ones, commands are never answered). The health poll sees the device gone and puts it
# in the internal-error state; mlx5_ib's internal-error handling (C's
# mlx5_ib_handle_sys_error_event) gives the client DEVICE_FATAL on port 1, polling its CQ gives
# the 4 receives back flushed (completed in software) and a send is refused with EIO; the client
# and the stack then unload without waiting out command timeouts, nothing leaks.
# Meanwhile messages flow: ib_verbs_peer's flow (samples/ib_verbs_peer/flow.rs, on C its twin)
# keeps 16 sends and 16 receives posted on a looped-back RC QP, re-posted from the completion
# handler; the removal ends it as a fatal error does (see mlx5ib-verbs-traffic-faults): every
# slot ends exactly once (flushed in software or its re-post refused), a new send gets EIO.
# stacks: c rust
# timeout: 400

dev=$(cx_device)
bdf=${dev##*/}
client="$stack_dir/ib_verbs_client.ko"

check "load the stack" load_stack
wait_for "mlx5_0 is registered" 30 '^mlx5_0$' ls /sys/class/infiniband
check "the client loads" insmod "$client"
# (waited for: the add can still be running in the probing thread when insmod returns)
wait_for "it leaves 4 receives posted on phase 1's QP" 60 \
	'ib_verbs_client: mlx5_0: 4 receive\(s\) left posted on qp 0x[0-9a-f]+ for a fatal error to flush$' dmesg
flow=/sys/kernel/debug/ib_verbs_peer/mlx5_0/flow
check "ib_verbs_peer loads" insmod "$stack_dir/ib_verbs_peer.ko"
check "its flow starts" sh -c "echo start > $flow"
wait_for "messages keep flowing (over 3000 moved)" 120 '^flow: running; messages ([3-9][0-9]{3}|[1-9][0-9]{4,})$' cat $flow
check_output "model: surprise removal while messages flow" '^ok removed$' model_ctl remove
# Usually sensor 1 (PCI communication error: the health words read all ones). A poll that
# read the health words just before the removal and the NIC state just after sees sensor 4 (the
# NIC interface field of all ones is SW_RESET), on either stack: C checks them in that order too.
wait_for "the health poll sees the device gone (PCI communication error, or NIC reset in a poll the removal cut in two)" 20 \
	"mlx5_core $bdf: .*Fatal error [14] detected" dmesg
wait_for "the client's handler gets DEVICE_FATAL on port 1" 20 \
	'ib_verbs_client: mlx5_0: event DEVICE_FATAL on port 1$' dmesg
wait_for "its 4 receives come back flushed (WrFlushErr, wr_ids 100..103), a send fails with EIO" 10 \
	'ib_verbs_client: mlx5_0: after the fatal error: 4 completion\(s\) flushed \(WrFlushErr, wr_id 100\.\.103\), 0 other; a send fails with err -5$' dmesg
wait_for "the flow's handler gets DEVICE_FATAL on port 1" 20 \
	'ib_verbs_peer: mlx5_0: flow: event DEVICE_FATAL on port 1$' dmesg
wait_for "the flow ended: every slot ended exactly once (flushed in software or its re-post refused)" 20 \
	'ib_verbs_peer: mlx5_0: flow: ended after [1-9][0-9]* messages: each of the 16 send and 16 receive slots ended exactly once \(flushed, refused or left\), 0 other error\(s\)$' dmesg
check_output "a new send after the removal is refused with EIO" \
	'ib_verbs_peer: mlx5_0: flow: a new send after the failure: err -5$' dmesg
check "ib_verbs_peer unloads" sh -c "! grep -q '^ib_verbs_peer ' /proc/modules || rmmod ib_verbs_peer"
check "the client unloads" sh -c "! grep -q '^ib_verbs_client ' /proc/modules || rmmod ib_verbs_client"
check "the stack unloads within 60 s" unload_within 60
check "no module of the stack is left" test -z "$(stack_loaded)"
check_output "the client's objects were released: none left" \
	'ib_verbs_client: mlx5_0: released qp 0x[0-9a-f]+; live: pd 0 cq 0 qp 0 mr 0$' dmesg
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

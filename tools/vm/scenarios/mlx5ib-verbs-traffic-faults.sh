# mlx5ib-verbs-traffic-faults: faults while messages flow, compared with the C stack. The flow
# of ib_verbs_peer (samples/ib_verbs_peer/flow.rs; on C its twin tools/verbs-twin/ib_verbs_peer.c)
# keeps 16 sends and 16 receives posted on an RC QP looped back to itself and re-posts each from
# the CQ's completion handler, in the driver's interrupt context (DEBUG_ATOMIC_SLEEP is on: a
# sleep there is a splat dmesg_clean fails on). Four ways it ends:
#   1. `stop`: the QP goes to the error state, the device flushes what is outstanding;
#   2. unloading the module while messages flow (the client's remove stops it the same way);
#   3. a PCI unbind of mlx5_core while messages flow (mlx5_ib unregisters mlx5_0 under the client,
#      whose remove stops the flow); mlx5_core binds again and mlx5_0 comes back;
#   4. a fatal health error while messages flow: mlx5_ib's internal-error handling calls the
#      completion handler of the CQ, whose outstanding requests come back flushed in software,
#      the client gets DEVICE_FATAL, re-posts and a new send are refused with EIO.
# Each time every one of the 16 send and 16 receive slots must end exactly once (its request
# flushed, its re-post refused, or not re-posted because of the stop) and nothing else may fail;
# the flow logs that itself, with the counts. Then everything unloads; kmemleak and dmesg clean.
# stacks: c rust
# timeout: 600

dev=$(cx_device)
bdf=${dev##*/}
flow=/sys/kernel/debug/ib_verbs_peer/mlx5_0/flow
started='ib_verbs_peer: mlx5_0: flow: started on rc qp 0x[0-9a-f]+ looped back: 16 sends and 16 receives of 64 bytes kept posted, re-posted from the completion handler$'
once='each of the 16 send and 16 receive slots ended exactly once \(flushed, refused or left\), 0 other error\(s\)$'
stopped="ib_verbs_peer: mlx5_0: flow: stopped after [1-9][0-9]* messages: $once"

# start_flow: starts the flow and waits until over 3000 messages have moved (a handler that
# spends its budget must re-arm, or the flow stalls after a few hundred).
start_flow() {
	check "the flow starts" sh -c "echo start > $flow"
	wait_for "messages keep flowing (over 3000 moved)" 120 '^flow: running; messages ([3-9][0-9]{3}|[1-9][0-9]{4,})$' cat $flow
}

# count PATTERN: how many kernel log lines match.
count() {
	dmesg | grep -cE "$1" || true
}

check "load the stack" load_stack
wait_for "mlx5_0 is registered" 30 '^mlx5_0$' ls /sys/class/infiniband
check "ib_verbs_peer loads" insmod "$stack_dir/ib_verbs_peer.ko"
check_output "no flow yet" '^flow: idle$' cat $flow

# 1. stop.
start_flow
check_output "it started with every slot posted" "$started" dmesg
check "a second start is refused" sh -c "! echo start > $flow"
check_output "with EBUSY" 'ib_verbs_peer: mlx5_0: flow: command failed: err -16$' dmesg
check "stop" sh -c "echo stop > $flow"
check_output "stopped: every slot ended exactly once, no other error" "$stopped" dmesg
check_output "the flow is idle again" '^flow: idle$' cat $flow

# 2. The module unloads while messages flow.
start_flow
check "ib_verbs_peer unloads while messages flow" rmmod ib_verbs_peer
check_output "its remove stopped the flow: every slot ended exactly once" '^2 1$' \
	sh -c "echo \$(dmesg | grep -cE '$stopped') \$(dmesg | grep -c 'ib_verbs_peer: mlx5_0: released$')"

# 3. PCI unbind while messages flow.
check "ib_verbs_peer loads again" insmod "$stack_dir/ib_verbs_peer.ko"
start_flow
check "unbind mlx5_core from $bdf while messages flow" sh -c "echo $bdf > /sys/bus/pci/drivers/mlx5_core/unbind"
check_output "mlx5_0 went away under the client: the flow stopped, every slot ended exactly once" '^3 2$' \
	sh -c "echo \$(dmesg | grep -cE '$stopped') \$(dmesg | grep -c 'ib_verbs_peer: mlx5_0: released$')"
check "bind mlx5_core to $bdf again" sh -c "echo $bdf > /sys/bus/pci/drivers/mlx5_core/bind"
wait_for "mlx5_0 is back and the client is added to it" 60 '^3$' \
	sh -c "dmesg | grep -c 'ib_verbs_peer: mlx5_0: ready: '"
wait_for "mlx5_0 port 1 is ACTIVE again" 60 '^4: ACTIVE$' cat /sys/class/infiniband/mlx5_0/ports/1/state

# 4. A fatal health error while messages flow.
start_flow
check_output "model: fatal health syndrome 0xb" '^ok health syndrome 0xb$' model_ctl health-error 0xb fatal
wait_for "the health poll declares a fatal error" 20 "mlx5_core $bdf: .*Fatal error 5 detected" dmesg
wait_for "the client gets DEVICE_FATAL on port 1" 20 'ib_verbs_peer: mlx5_0: flow: event DEVICE_FATAL on port 1$' dmesg
wait_for "the flow ended: every slot ended exactly once (flushed in software or its re-post refused)" 20 \
	"ib_verbs_peer: mlx5_0: flow: ended after [1-9][0-9]* messages: $once" dmesg
check_output "a new send after the failure is refused with EIO" \
	'ib_verbs_peer: mlx5_0: flow: a new send after the failure: err -5$' dmesg
check_output "the flow's counts (for the record)" 'flow: slots: sends' sh -c "dmesg | grep 'flow: slots:'"
check_output "no flow was left with requests outstanding" '^0$' sh -c "dmesg | grep -c 'still outstanding' || true"
check "ib_verbs_peer unloads" sh -c "! grep -q '^ib_verbs_peer ' /proc/modules || rmmod ib_verbs_peer"
check "the stack unloads" unload_within 60
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

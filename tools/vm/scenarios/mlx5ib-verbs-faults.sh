# mlx5ib-verbs-faults: firmware error statuses met by the kernel verbs consumer ib_verbs_client
# on mlx5_0, compared with the C stack. cx-model answers the next CREATE_CQ, CREATE_QP,
# CREATE_MKEY (the DMA MR) and RST2INIT_QP (the first modify of phase 1's connect) with a bad
# status, one load of the client each; the driver returns C's errno for that status
# (cmd_status_to_err: limits exceeded -> ENOMEM, no resources -> EAGAIN, bad parameter and bad
# resource state -> EINVAL), mlx5_core logs the failed command as C words it, the client reports
# "setup failed: err N", frees what it had made (no object left in restrack, kmemleak clean),
# and, with no fault left, the next load works.
# The client's add failing is not a load failure on either stack: ib_core leaves the device
# without the client and insmod succeeds (C's add_client_context ignores the add's error).
# Then a fatal health error while the client's objects are alive, with 4 receives left posted
# on its QP (see that case's comment): DEVICE_FATAL, the receives flushed in software, EIO for
# a send, on both stacks.
# Faults while messages flow (a consumer re-posting from its completion handler; stop, unload,
# PCI unbind, fatal error): mlx5ib-verbs-traffic-faults; surprise removal: mlx5ib-verbs-removal.
# stacks: c rust
# timeout: 900

dev=$(cx_device)
bdf=${dev##*/}
client="$stack_dir/ib_verbs_client.ko"

# fw_fault OPCODE STATUS STATUS_NAME ERRNO: one load of the client under a bad status for OPCODE.
fw_fault() {
	fw_op=$1
	fw_st=$2
	fw_status=$3
	fw_errno=$4
	dmesg -c >/dev/null
	check_output "model: the next $fw_op answers $fw_status" "^ok fault status:$fw_op:$fw_st:0xbad1:1 added\$" \
		model_ctl fault "status:$fw_op:$fw_st:0xbad1:1"
	check "the client loads (its add fails, not the module)" insmod "$client"
	check_output "mlx5_core logs the failed $fw_op as C does" \
		"mlx5_core $bdf: .*$fw_op\(0x[0-9a-f]+\) op_mod\(0x[0-9a-f]+\) failed, status $fw_status\($fw_st\), syndrome \(0xbad1\), err\($fw_errno\)" dmesg
	check_output "the client sees err $fw_errno" "ib_verbs_client: mlx5_0: setup failed: err $fw_errno\$" dmesg
	check_output "no phase ran" '^0$' \
		sh -c "dmesg | grep -c 'ib_verbs_client: mlx5_0: qp .* in state' || true"
	check_output "nothing of the client is left (pd, cq, qp, mr)" '^0$' \
		sh -c "for t in pd cq qp mr; do rdma res show \$t; done | grep -c 'comm \[ib_verbs_client\]' || true"
	check "the client unloads" rmmod ib_verbs_client
}

check "load the stack" load_stack
wait_for "mlx5_0 is registered" 30 '^mlx5_0$' ls /sys/class/infiniband
fw_fault CREATE_CQ 0x8 'limits exceeded' -12
fw_fault CREATE_QP 0xf 'no resources' -11
fw_fault CREATE_MKEY 0x3 'bad parameter' -22
fw_fault RST2INIT_QP 0x9 'bad resource state' -22
dmesg -c >/dev/null
check "with no fault left, the client loads" insmod "$client"
check_output "and phase 1 sets up its QP at RTS" \
	'ib_verbs_client: mlx5_0: qp 0x[0-9a-f]+ in state Rts \(driver says Rts' dmesg
check_output "at the end it leaves 4 receives posted on that QP" \
	'ib_verbs_client: mlx5_0: 4 receive\(s\) left posted on qp 0x[0-9a-f]+ for a fatal error to flush$' dmesg
# A fatal health error with the client's objects alive (no traffic yet). C's health recovery
# unregisters mlx5_0 at once (the client's remove releases its objects then), the Rust stack
# when mlx5_ib unloads; either way every destroy succeeds on the dead device (as C's
# mlx5_internal_err_ret_value: DESTROY_QP/CQ/MKEY, 2RST, DEALLOC_PD answer OK) and nothing leaks.
check_output "model: fatal health syndrome 0xb" '^ok health syndrome 0xb$' model_ctl health-error 0xb fatal
wait_for "the health poll declares a fatal error" 10 "mlx5_core $bdf: .*Fatal error 5 detected" dmesg
# mlx5_ib's internal-error handling (C's mlx5_ib_handle_sys_error_event): the consumer's device
# event handler gets DEVICE_FATAL for port 1; polling its CQ gives its 4 posted receives back
# flushed (completed in software: the device completes nothing any more), and a send is refused
# with EIO.
wait_for "the client's handler gets DEVICE_FATAL on port 1" 20 \
	'ib_verbs_client: mlx5_0: event DEVICE_FATAL on port 1$' dmesg
wait_for "its 4 receives come back flushed (WrFlushErr, wr_ids 100..103), a send fails with EIO" 10 \
	'ib_verbs_client: mlx5_0: after the fatal error: 4 completion\(s\) flushed \(WrFlushErr, wr_id 100\.\.103\), 0 other; a send fails with err -5$' dmesg
check "the client unloads" rmmod ib_verbs_client
check "the stack unloads" unload_within 30
check_output "the client's objects were released: none left" \
	'ib_verbs_client: mlx5_0: released qp 0x[0-9a-f]+; live: pd 0 cq 0 qp 0 mr 0$' dmesg
check_output "no destroy failed on the dead device" '^0$' sh -c "dmesg | grep -c 'failed: err' || true"
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# hardening-mad-wire: a hostile node on the fabric (issue "Hardening II"), the same checks on both
# stacks. cx-model plays the node (`model_ctl mad-inject DQPN SQPN SLID QKEY COUNT HEX`: datagrams
# from the wire, through the fabric's checks) while perfquery, a third client, keeps querying the
# port's own counters (LID-routed PMA Gets through QP1 and umad0). Sent to QP1: MADs of base
# version 0, 2 and 255, a class version and a method the PMA does not have, datagrams of 1, 23,
# 24 and 100 bytes, floods of unsolicited GetResp()s (no send waits for them), and MADs with
# a Q_Key that is not the GSI's. Sent to QP0: SMPs from a QP other than QP0 (the fabric drops
# them: VL15 is QP0's), directed-route SMPs with hop counts and pointers the SMI rules refuse
# (hop count 64 and 200, pointer past the count, the return bit with pointer 0), short SMPs,
# and a flood of unsolicited SMP GetResp()s. Floods come 200 at a time, so that the stack takes
# them while they arrive. Afterwards every perfquery succeeded, smpquery and ibstat still
# answer, the stack unloads, and the kernel log has no report (kmemleak clean on rust).
# stacks: c rust
# timeout: 600

check "load the stack" load_stack
wait_for "mlx5_0 port 1 ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1
wait_for "umad0 is there" 30 umad0 ls /dev/infiniband
lid=$(($(cat /sys/class/infiniband/mlx5_0/ports/1/lid)))
check_output "perfquery answers before" 'PortXmitData' perfquery "$lid" 1

# mad <class> <version> <method> <attr> <base> <hop_ptr> <hop_cnt> <status> <len>: the hex of a
# MAD of <len> bytes (at most 256): the 24-byte common header, then 0x5a bytes.
mad() {
	_h=$(printf '%02x%02x%02x%02x%04x%02x%02x%016x%04x0000%08x' "$5" "$1" "$2" "$3" "$8" "$6" "$7" \
		$((0x1234 + $9)) "$4" 0)
	_f=$(head -c 232 /dev/zero | tr '\0' 'Z' | sed 's/Z/5a/g')
	echo "$_h$_f" | cut -c1-$((2 * $9))
}

# inject <name> <dqpn> <sqpn> <qkey> <batches> <per batch> <hex>
inject() {
	_i=0
	_ok=1
	while [ $_i -lt "$5" ]; do
		model_ctl mad-inject "$2" "$3" 0x0999 "$4" "$6" "$7" | grep -q ' injected ' || _ok=0
		_i=$((_i + 1))
	done
	ktap_result $((1 - _ok)) "$1: $(($5 * $6)) datagram(s) sent"
}

# The third client.
rm -f /tmp/stop /tmp/pq
(ok=0; bad=0
	while [ ! -f /tmp/stop ]; do
		if perfquery "$lid" 1 >/dev/null 2>&1; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
		echo "$ok $bad" >/tmp/pq
	done) &
pq=$!

GSI=0x80010000
inject "QP1: base version 0" 1 5 $GSI 1 50 "$(mad 4 1 1 0x12 0 0 0 0 256)"
inject "QP1: base version 2" 1 5 $GSI 1 50 "$(mad 4 1 1 0x12 2 0 0 0 256)"
inject "QP1: base version 255" 1 5 $GSI 1 50 "$(mad 4 1 1 0x12 255 0 0 0 256)"
inject "QP1: PMA class version 9" 1 5 $GSI 1 50 "$(mad 4 9 1 0x12 1 0 0 0 256)"
inject "QP1: PMA method 0x7f" 1 5 $GSI 1 50 "$(mad 4 1 0x7f 0x12 1 0 0 0 256)"
for len in 1 23 24 100; do
	inject "QP1: a vendor Get of $len bytes" 1 5 $GSI 1 20 "$(mad 0x0a 1 1 0x10 1 0 0 0 $len)"
done
inject "QP1: unsolicited PMA GetResp() flood" 1 5 $GSI 20 200 "$(mad 4 1 0x81 0x12 1 0 0 0 256)"
inject "QP1: a Q_Key other than the GSI's" 1 5 0x1234 1 50 "$(mad 4 1 1 0x12 1 0 0 0 256)"
inject "QP0: an SMP from QP 5" 0 5 0 1 50 "$(mad 1 1 1 0x11 1 0 0 0 256)"
inject "QP0: directed route, hop count 200" 0 0 0 1 20 "$(mad 0x81 1 1 0x11 1 0 200 0 256)"
inject "QP0: directed route, hop count 64" 0 0 0 1 20 "$(mad 0x81 1 1 0x11 1 1 64 0 256)"
inject "QP0: directed route, pointer 70 past count 3" 0 0 0 1 20 "$(mad 0x81 1 1 0x11 1 70 3 0 256)"
inject "QP0: directed route, return bit with pointer 0" 0 0 0 1 20 "$(mad 0x81 1 1 0x11 1 0 2 0x8000 256)"
inject "QP0: a directed-route SMP of 24 bytes" 0 0 0 1 20 "$(mad 0x81 1 1 0x11 1 0 0 0 24)"
inject "QP0: a datagram of one byte" 0 0 0 1 20 01
inject "QP0: unsolicited SMP GetResp() flood" 0 0 0 20 200 "$(mad 1 1 0x81 0x11 1 0 0 0 256)"

touch /tmp/stop
wait $pq
set -- $(cat /tmp/pq)
ktap_result $([ "${1:-0}" -gt 0 ] && [ "${2:-1}" = 0 ] && echo 0 || echo 1) \
	"perfquery kept answering during the attacks (${1:-0} answered, ${2:-?} failed)"
check_output "smpquery nodeinfo still answers" '^PortGuid:\.+0x' smpquery nodeinfo "$lid"
check_output "the port is still ACTIVE" 'State: Active' ibstat mlx5_0 1
check "unload the stack" unload_stack
if [ "$STACK" = rust ]; then
	kmemleak_clean "rust: kmemleak: nothing leaked"
fi
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# c-abi-cm-2vm: C's connection manager between a Rust-core host and a C host (issue "ib_core's C
# ABI": C connection management on the Rust core, against a C VM). VM 0 runs the Rust stack, VM 1
# the C stack, each with its own cx-model, linked by the wire (LIDs 6 and 10); both load C's
# ib_cm.ko (the same file) and tools/verbs-twin/ib_c_cm.ko with the other port's LID and GUID
# (the GUID read with smpquery nodeinfo across the wire). Round 1: VM 0 listens (passive) and VM 1
# connects (active); round 2 the other way. Each round: the REQ over the wire, the passive QP to
# RTR and the REP, the active QP to RTS and the RTU, the passive QP to RTS, a SEND of 64 bytes
# whose data the passive end checks, DREQ, DREP and time-wait; each end prints a line per step,
# which must be the text below, recorded from two C hosts (--vm-stacks "c c"). ib_cm's counters
# then read the same on both hosts; everything unloads; kmemleak (rust), dmesg.
# vms: 2
# vm-stacks: rust c
# timeout: 500

# The lines of each end (the oracle: recorded with both VMs on the C stack).
PASSIVE_LINES=$(cat <<'EOF2'
ib_c_cm: mlx5_0: port 1: cm supported 1 (ib_cm set it)
ib_c_cm: passive: listening: 0
ib_c_cm: passive req: listen id ours 1, port 1, remote qpn the active QP's 1, qp type 2, psn 0x111, resp 1 init 1, timeouts 20/20, retry 7 rnr 7, srq 0, private "ib_c_cm req"; path type 0 dlid the peer's 1 slid the port's 1, pkey 0xffff, mtu 3, sl 0, rate 0, life 14, hop 0, sgid index 0 -1, alternate 0
ib_c_cm: passive init: 0, mask 0x39, access 0xe, pkey index 0, port 1
ib_c_cm: passive rtr: 0, mask 0x129181, mtu 3, dest qp the other end's 1, rq_psn 0x0, rd_atomic 1, min_rnr 0, ah type 1 dlid the peer's 1 sl 0 path_bits 0 rate 0 grh 0 port 1
ib_c_cm: passive sent the rep: 0
ib_c_cm: passive rtu: private "ib_c_cm rtu"; rts: 0, mask 0x12e01, sq_psn 0x111, timeout 15, retry 7, rnr_retry 7, rd_atomic 1; state 10
ib_c_cm: the peer's send: 1 completion(s): status 0, opcode 128, 64 bytes, on the passive QP 1; data intact
ib_c_cm: passive got the dreq: dreq: private "ib_c_cm dreq"; drep sent 0
ib_c_cm: passive time-wait ended 1; state 0
ib_c_cm: mlx5_0: done
EOF2
)
ACTIVE_LINES=$(cat <<'EOF2'
ib_c_cm: mlx5_0: port 1: cm supported 1 (ib_cm set it)
ib_c_cm: req to the peer: 0, state 2
ib_c_cm: active rep: remote qpn the passive QP's 1, psn 0x222, resp 1 init 1, failover 0, flow 0, rnr 7, srq 0, private "ib_c_cm rep"
ib_c_cm: active init: 0, mask 0x39, access 0xe, pkey index 0, port 1
ib_c_cm: active rtr: 0, mask 0x129181, mtu 3, dest qp the other end's 1, rq_psn 0x111, rd_atomic 1, min_rnr 0, ah type 1 dlid the peer's 1 sl 0 path_bits 0 rate 0 grh 0 port 1
ib_c_cm: active rts: 0, mask 0x12e01, sq_psn 0x222, timeout 15, retry 7, rnr_retry 7, rd_atomic 1
ib_c_cm: active sent the rtu: 0, state 10
ib_c_cm: send to the peer: post 0; 1 completion(s): status 0, opcode 0
ib_c_cm: dreq: 0, state dreq sent or past it 1
ib_c_cm: active got the drep 1; time-wait ended 1; state 0
ib_c_cm: mlx5_0: done
EOF2
)
# ib_cm's counters after both rounds (`grep . cm_*/*`), the same on both hosts.
COUNTERS=$(cat <<'EOF2'
cm_rx_duplicates/apr:0 cm_rx_duplicates/drep:0 cm_rx_duplicates/dreq:0 cm_rx_duplicates/lap:0 cm_rx_duplicates/mra:0 cm_rx_duplicates/rej:0 cm_rx_duplicates/rep:0 cm_rx_duplicates/req:0 cm_rx_duplicates/rtu:0 cm_rx_duplicates/sidr_rep:0 cm_rx_duplicates/sidr_req:0 cm_rx_msgs/apr:0 cm_rx_msgs/drep:1 cm_rx_msgs/dreq:1 cm_rx_msgs/lap:0 cm_rx_msgs/mra:0 cm_rx_msgs/rej:0 cm_rx_msgs/rep:1 cm_rx_msgs/req:1 cm_rx_msgs/rtu:1 cm_rx_msgs/sidr_rep:0 cm_rx_msgs/sidr_req:0 cm_tx_msgs/apr:0 cm_tx_msgs/drep:1 cm_tx_msgs/dreq:1 cm_tx_msgs/lap:0 cm_tx_msgs/mra:0 cm_tx_msgs/rej:0 cm_tx_msgs/rep:1 cm_tx_msgs/req:1 cm_tx_msgs/rtu:1 cm_tx_msgs/sidr_rep:0 cm_tx_msgs/sidr_req:0 cm_tx_retries/apr:0 cm_tx_retries/drep:0 cm_tx_retries/dreq:0 cm_tx_retries/lap:0 cm_tx_retries/mra:0 cm_tx_retries/rej:0 cm_tx_retries/rep:0 cm_tx_retries/req:0 cm_tx_retries/rtu:0 cm_tx_retries/sidr_rep:0 cm_tx_retries/sidr_req:0 
EOF2
)

if [ "$VM_INDEX" = 0 ]; then
	lid=6
	peer_lid=10
else
	lid=10
	peer_lid=6
fi
port=/sys/class/infiniband/mlx5_0/ports/1
counters() { (cd $port && grep . cm_*/* | tr '\n' ' '); }

check "load the stack ($STACK)" load_stack
wait_for "mlx5_0 port 1 ACTIVE with LID $lid" 60 "lid $lid sm_lid 1 lmc 0 state ACTIVE" \
	rdma link show mlx5_0/1
check "insmod ib_cm.ko (C's, the same file on both stacks)" insmod $stack_dir/ib_cm.ko
meet loaded
peer_guid=$(smpquery nodeinfo $peer_lid | sed -n 's/^PortGuid:\.*\(0x[0-9a-f]*\)$/\1/p')
check_output "the peer's port GUID, asked across the wire" '^0x[0-9a-f]{16}$' echo "$peer_guid"

for round in 1 2; do
	# Round 1: VM 0 listens; round 2: VM 1.
	if [ "$round$VM_INDEX" = 10 ] || [ "$round$VM_INDEX" = 21 ]; then
		role=passive
		want=$PASSIVE_LINES
	else
		role=active
		want=$ACTIVE_LINES
	fi
	m=$(module_lines ib_c_cm | wc -l)
	args="peer_lid=$peer_lid peer_guid=$peer_guid role=$role"
	if [ "$role" = passive ]; then
		insmod $stack_dir/ib_c_cm.ko $args &
		pid=$!
		wait_for "round $round: the passive end listens" 60 'ib_c_cm: passive: listening: 0' \
			module_lines_since ib_c_cm $m
		meet "listen-$round"
		wait $pid
		check "round $round: insmod ib_c_cm $role (its run ended)" test $? = 0
	else
		meet "listen-$round"
		check "round $round: insmod ib_c_cm $role (its run ended)" insmod $stack_dir/ib_c_cm.ko $args
	fi
	expect_lines "round $round: the $role end prints the C stack's lines" ib_c_cm $m "$want"
	check "round $round: rmmod ib_c_cm" rmmod ib_c_cm
	meet "round-$round"
done

check_output "ib_cm's counters count both connections as on C" "^$COUNTERS\$" counters
check "rmmod ib_cm" rmmod ib_cm
check "the stack unloads" unload_stack
[ "$STACK" = rust ] && kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

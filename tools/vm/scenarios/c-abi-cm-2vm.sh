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
EOF2
)
ACTIVE_LINES=$(cat <<'EOF2'
EOF2
)
# ib_cm's counters after both rounds (`grep . cm_*/*`), the same on both hosts.
COUNTERS=$(cat <<'EOF2'
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
	if [ "$round" = 1 ] && [ "$VM_INDEX" = 0 ] || [ "$round" = 2 ] && [ "$VM_INDEX" = 1 ]; then
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

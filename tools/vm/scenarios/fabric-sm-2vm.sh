# fabric-sm-2vm: an InfiniBand fabric run by a subnet manager (issue 36). Two VMs, VM 0 on the Rust
# stack and VM 1 on the C stack, their cx-models linked by the wire in managed mode: each port
# comes up INIT without a LID and goes ACTIVE only when an SM says so.
#   - before any SM: both ports INIT, LID 0 (rdma link, sysfs); an SM's Sets a port cannot take
#     (INIT -> ACTIVE, more VLs than it has), sent with ibportstate as directed-route SMPs to the
#     local port, are refused by its SMA (status 0x1c) and change nothing;
#   - Debian's opensm, unmodified, in VM 0 (priority 1) sweeps the fabric with directed-route SMPs
#     (through each stack's SMI and the peer's SMA), assigns LIDs and arms and activates both
#     ports; each stack reports the port ACTIVE with the LID and SM LID the SM gave it, and
#     ibv_asyncwatch sees the LID change, client reregistration and PORT_ACTIVE events the
#     firmware raised;
#   - sminfo on both VMs names the SM's port; smpquery LID-routed to the peer, ibnetdiscover,
#     ibroute (what a channel adapter answers); the SMs set an M_Key (protection 1): a Get
#     without it reads it as 0, a Set without it goes unanswered, is counted and trapped (opensm
#     logs Trap 256 from each port);
#   - saquery on both VMs (NodeRecords, PathRecords, MCMemberRecords: the SA's GetTable answers
#     in RMPP segments, sent by the SM's MAD layer and put back together by the querier's),
#     osmtest -f c then -f a in VM 1;
#   - a second opensm in VM 1 with priority 15 takes over (SMInfo handover): sminfo then names
#     VM 1's port as the master, VM 0's SM goes STANDBY, both ports keep their LIDs; saquery on
#     both VMs and osmtest in VM 0 against the new master's SA;
#   - a hostile node's RMPP (below) leaves the SA answering;
#   - ib_core's SA client (Rust VM): a kernel consumer (ib_mad_agent sa_path_to=LID) asking for a
#     path gets EAGAIN before any SM, then, from VM 1's SA, the record saquery gets;
#   - rdma_cm with AF_IB addresses between the VMs, both ways (ib_c_rdmacm); rdma_ucm loads;
#     IPoIB (ib_ipoib) makes ib0 with its 20-byte address; ping and 64 MiB over TCP each way;
#     rping and ib_write_bw -R (librdmacm through rdma_ucm) between the ib0 addresses, each way;
#   - the SMs stop; the ports keep their LIDs; the stacks unload cleanly.
# vms: 2
# vm-stacks: rust c
# cx-model: --fabric managed
# timeout: 600

# topology OWN PEER OWN_LID PEER_LID: what ibnetdiscover prints from node OWN (GUID digits after
# 0002c903000) to its peer, as the C stack prints it (recorded from a run with both VMs on C),
# without its date line.
topology() {
	node() {
		printf 'vendid=0x2c9\ndevid=0x1017\nsysimgguid=0x2c903000%s00\ncaguid=0x2c903000%s00\n' "$1" "$1"
		printf 'Ca\t1 "H-0002c903000%s00"\t\t# "MT4119 ConnectX5   Mellanox Technologies"\n' "$1"
		printf '[1](2c903000%s01) \t"H-0002c903000%s00"[1] (2c903000%s01) \t\t' "$1" "$2" "$2"
		printf '# lid %s lmc 0 "MT4119 ConnectX5   Mellanox Technologies" lid %s 4xEDR\n' "$3" "$4"
	}
	printf '#\n#\n# Initiated from node 0002c903000%s00 port 0002c903000%s01\n\n' "$1" "$1"
	node "$2" "$1" "$4" "$3"
	echo
	node "$1" "$2" "$3" "$4"
}

# ib_c_sa_expected: what ib_c_sa prints on the C stack (a run with both VMs on C), LIDs and GIDs
# named.
ib_c_sa_expected() {
	cat <<'EOF'
mlx5_0: port 1 ACTIVE, own LID OWN, SM LID SM
path with a RoCE record: -22, query null
path to the peer: asked: an id, query set
path to the peer: status 0, 1 record(s)
path: type 0 service_id 0x0 dgid PEER_GID sgid OWN_GID dlid PEER slid OWN raw 0
path: flow_label 0x0 hop_limit 0 tclass 0 reversible 1 numb_path 0 pkey 0xffff qos_class 0 sl 0
path: mtu 2/5 rate 2/16 packet_life_time 2/18 preference 0 flags 0x0
packed: 0000000000000000 | PEER_GID | OWN_GID | PEER_LID OWN_LID | 000000000080ffff000085909200000000000000
unpacked again: the same record
cancel of an ended query: no callback
path to LID 0x77: status -22, 1 record(s), dlid 119
services: status -61, 0 record(s), records none
GUIDInfo of the own port, block 0: status 0, record given
GUIDInfo of the own port, block 0: lid OWN block 0, GUID 0 the port GUID, GUIDs 1-7 zero
GUIDInfo of LID 0x77: status -22, record given
GUIDInfo with GetTable: -22, query null
service packed: 1122334455667788f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff | ffff0000ffffffff | 69625f635f7361000000000000000000 | 00000000000000000a0b0c0d0e0f1011
service unpacked: reserved aaaa, the rest the same
join: status 0, 1 callback(s)
joined: mgid ff12:601b:ffff:0000:0000:0000:0001:005a port_gid OWN_GID qkey 0xb1b mlid 0xc001
joined: mtu 2/5 tclass 0 pkey 0xffff rate 2/16 packet_life_time 2/0 sl 0 flow_label 0x0 hop_limit 0 scope 0 join_state 1 proxy 0
the membership's record is the callback's: yes
get_mcmember_rec: 0, the joined record
get_mcmember_rec of a group never joined: -99
init_ah_from_mcmember: 0 type 1 dlid 0xc001 sl 0 port 1 rate 16 flags 0x1
init_ah_from_mcmember: dgid ff12:601b:ffff:0000:0000:0000:0001:005a sgid_index 0 hop_limit 0 tclass 0 flow_label 0x0 sgid_attr held
init_ah_from_mcmember with a RoCE GID type: -2
second join: status 0, 1 callback(s), mlid the group's
join with another Q_Key: status -22, 1 callback(s)
join freed by its callback: status 0, 1 callback(s)
create without a Q_Key: status -22, 1 callback(s)
mlx5_0: done
EOF
}

# ib_c_rdmacm_expected ROLE: what ib_c_rdmacm prints on the C stack in ROLE (a run with both VMs
# on C), GIDs and LIDs named.
ib_c_rdmacm_expected() {
	case "$1" in
	passive) cat <<'EOF'
bind to the service (any GID): 0, sid 0x1061d2f
listening: 0
connect request 0, status 0; request: mlx5_0 port 1, private "0000 ib_c_rdmacm connect", resources 1 depth 1 rnr 7; src OWN_GID sid 0x1061d2f, dst PEER_GID sid 0x0; path dlid PEER slid OWN pkey 0xffff mtu 5; qp 0, recv 0, accept 0
established 0, status 0
the peer's send: 1 completion(s): status 0, opcode 128, 64 bytes; data intact
disconnected 0, on the connection's id 1
done
EOF
		;;
	active) cat <<'EOF'
address resolved 0, status 0: mlx5_0 port 1, src OWN_GID family 27 pkey 0xffff
route resolved 0, 1 path(s): dgid PEER_GID sgid OWN_GID dlid PEER slid OWN sid 0x0 pkey 0xffff sl 0 mtu 2/5 rate 2/16 life 2/18 reversible 1 hop 0 tclass 0 numb 0 pref 0 type 0
qp 0
established 0, status 0, accept's private "0000 ib_c_rdmacm accept"
send: post 0; 1 completion(s): status 0, opcode 0
disconnected 0
done
EOF
		;;
	esac
}

meet() {
	_answer=$(barrier "$1") || ktap_result 1 "barrier $1: meet the other VM" "$_answer"
}

port=/sys/class/infiniband/mlx5_0/ports/1

# records FILE PATTERN: how many lines of FILE match PATTERN; the file's end too when none do.
records() {
	_n=$(grep -c "$2" "$1")
	echo "$_n"
	[ "$_n" != 0 ] || tail -n 20 "$1"
}

check "load the stack ($STACK)" load_stack
wait_for "umad0 serves mlx5_0" 30 '^mlx5_0$' cat /sys/class/infiniband_mad/umad0/ibdev
check_output "before any SM: the port is INIT" '^2: INIT$' cat $port/state
check_output "before any SM: LID 0, SM LID 0" '^0x0 0x0$' sh -c "echo \$(cat $port/lid $port/sm_lid)"
check_output "rdma link: INIT, LINK_UP, no LID" 'state INIT physical_state LINK_UP' rdma link show mlx5_0/1
if [ "$STACK" = rust ]; then
	check "before any SM: ib_mad_agent asks ib_core's SA client for a path" \
		insmod "$stack_dir/ib_mad_agent.ko" sa_path_to=2
	wait_for "the SA client has no SM to ask: EAGAIN, as C" 10 'SA path 0 -> 2: not asked, error -11' dmesg
	check "rmmod ib_mad_agent" rmmod ib_mad_agent
fi
ibv_asyncwatch -d mlx5_0 >/tmp/asyncwatch 2>&1 &
watcher=$!
# An SM that sets what a port cannot take: the port's SMA refuses it (status 0x1c) and stays as
# it was. Through the stack's SMI as directed-route SMPs to the local port (hop count 0).
check_output "ibportstate -D 0 1 active (INIT -> ACTIVE skips ARMED): the SMA refuses the Set" \
	'smp set portinfo failed' sh -c 'ibportstate -D 0 1 active 2>&1; echo "rc $?"'
check_output "ibportstate -D 0 1 vls 5 (VL0-14; the port has VL0-7): refused" \
	'smp set portinfo failed' sh -c 'ibportstate -D 0 1 vls 5 2>&1; echo "rc $?"'
check_output "after both: still INIT, LID 0" '^2: INIT 0x0$' sh -c "echo \$(cat $port/state) \$(cat $port/lid)"
meet loaded

mkdir -p /var/cache/opensm /var/log
# Both SMs protect the ports with an M_Key (protection 1: a Get without it reads the M_Key as 0,
# a Set without it is dropped, counted and trapped).
mkey=0x00000000cafe0001
printf 'm_key %s\nm_key_protection_level 1\nm_key_lease_period 0\nm_key_lookup FALSE\n' "$mkey" >/tmp/opensm.conf
if [ "$VM_INDEX" = 0 ]; then
	opensm -F /tmp/opensm.conf -p 1 -s 2 -f /tmp/opensm.log >/tmp/opensm.out 2>&1 &
	sm=$!
fi
wait_for "the SM made the port ACTIVE" 90 '^4: ACTIVE$' cat $port/state
check_output "a unicast LID from the SM" '^0x([1-9a-f]|[1-9a-f][0-9a-f]+)$' cat $port/lid
lid=$(($(cat $port/lid)))
sm_lid=$(($(cat $port/sm_lid)))
check_output "rdma link: ACTIVE with the SM's LID $lid and SM LID $sm_lid" \
	"lid $lid sm_lid $sm_lid lmc 0 state ACTIVE physical_state LINK_UP" rdma link show mlx5_0/1
wait_for "ibv_asyncwatch: IBV_EVENT_LID_CHANGE" 20 'IBV_EVENT_LID_CHANGE.*port 1' cat /tmp/asyncwatch
wait_for "ibv_asyncwatch: IBV_EVENT_CLIENT_REREGISTER" 20 'IBV_EVENT_CLIENT_REREGISTER.*port 1' cat /tmp/asyncwatch
wait_for "ibv_asyncwatch: IBV_EVENT_PORT_ACTIVE" 20 'IBV_EVENT_PORT_ACTIVE.*port 1' cat /tmp/asyncwatch
echo "$lid" >/tmp/lid
meet active

check_output "sminfo: the master SM, at the SM LID" "^sminfo: sm lid $sm_lid sm guid 0x[0-9a-f]+, activity count [0-9]+ priority 1 state 3 SMINFO_MASTER\$" sminfo
wait_for "ibnetdiscover: two channel adapters" 30 '^2$' sh -c "ibnetdiscover 2>/dev/null | grep -c '^Ca'"
ibnetdiscover >/tmp/ibnet 2>&1
peer_lid=$(sed -n 's/.*lid \([0-9]*\) .*/\1/p' /tmp/ibnet | grep -vx "$lid" | head -n 1)
if [ "$VM_INDEX" = 0 ]; then
	topology 001 002 "$lid" "$peer_lid" >/tmp/ibnet.expected
else
	topology 002 001 "$lid" "$peer_lid" >/tmp/ibnet.expected
fi
check_output "ibnetdiscover: the topology as C prints it (both ports, the link, LIDs $lid and $peer_lid)" '^same$' \
	sh -c "grep -v '^# Topology file' /tmp/ibnet | tr -d '\r' | diff -u /tmp/ibnet.expected - && echo same"
check_output "ibroute to the peer: C's answer for a channel adapter (exit 255)" \
	'^ibroute: iberror: failed: dump tables: not a switch exit 255$' \
	sh -c "out=\$(ibroute $peer_lid 2>&1); echo \$out exit \$?"
check_output "smpquery portinfo LID-routed to the peer ($peer_lid): its LID" "^Lid:\\.+$peer_lid\$" smpquery portinfo "$peer_lid"
check_output "smpquery nodeinfo of the peer: a channel adapter" '^NodeType:\.+Channel Adapter$' smpquery nodeinfo "$peer_lid"
# M_Key protection, by each port's SMA in firmware (cx-model; the SMPs cross both stacks' QP0):
# a Get without the key answers with the M_Key read as 0, one with it (-y) shows it; a Set
# without it (ibportstate: OperationalVLs as they are) is not answered, the port counts the
# violation and sends Trap 256 (Bad M_Key) to the SM, whose opensm (VM 0) logs it.
check_output "M_Key: smpquery portinfo of the peer without the key reads it as 0" '^Mkey:\.+0x0000000000000000$' \
	smpquery -K portinfo "$peer_lid"
check_output "M_Key: with the key (-y $mkey) the peer's PortInfo shows it" "^Mkey:\\.+$mkey\$" \
	smpquery -K -y "$mkey" portinfo "$peer_lid"
meet mkey-read
check_output "M_Key: a Set to the peer without the key gets no answer" 'smp set portinfo failed' \
	sh -c "ibportstate $peer_lid 1 vls 4 2>&1; echo rc \$?"
meet mkey-set
check_output "M_Key: the port counted the peer's Set as a violation" '^MkeyViolations:\.+[1-9][0-9]*$' \
	smpquery -K -y "$mkey" portinfo "$lid"
if [ "$VM_INDEX" = 0 ]; then
	wait_for "M_Key: opensm got Trap 256 from the peer's port (LID $peer_lid, over the wire)" 20 \
		"num:256 .*from LID:$peer_lid " cat /tmp/opensm.log
	wait_for "M_Key: opensm got Trap 256 from its own port (LID $lid)" 20 \
		"num:256 .*from LID:$lid " cat /tmp/opensm.log
	grep 'num:256 ' /tmp/opensm.log | head -n 2 | sed 's/^/# opensm: /'
fi
saquery >/tmp/sa-nodes 2>&1
check_output "saquery: the SA's NodeRecords name both nodes (an RMPP answer)" '^2$' records /tmp/sa-nodes '^NodeRecord dump'
saquery -p >/tmp/sa-paths 2>&1
check_output "saquery -p: PathRecords between the LIDs" '^[1-9][0-9]*$' records /tmp/sa-paths '^PathRecord dump'
saquery -g >/tmp/sa-mcast 2>&1
check_output "saquery -g: the SA's multicast groups" '^[1-9][0-9]*$' records /tmp/sa-mcast '^MCMemberRecord group dump'
if [ "$VM_INDEX" = 1 ]; then
	check_output "osmtest -f c: the inventory from the SA" 'OSMTEST: TEST "Create Inventory" PASS' osmtest -f c -i /tmp/osmtest.dat
	check_output "osmtest -f a: every validation of the inventory" 'OSMTEST: TEST "All Validations" PASS' osmtest -f a -i /tmp/osmtest.dat
fi
# A hostile node sends RMPP to the SA class (cx-model's `mad-inject`, from LID 0x999): headers
# C's RMPP code refuses (version 2: UNV; type 9: BADT; a first segment without FIRST and a
# FIRST on segment 2: BAD_SEG; a DATA with a status: BAD_STATUS; an ACK whose window is below
# its segment: W2S; STOP and ABORT with statuses they cannot carry), 50 messages started and
# never finished, repeated first segments, and segments of no message. In VM 0 opensm's SA
# agent (kernel RMPP) takes them, in VM 1 nobody does; afterwards the SA still answers both VMs.
# rmpp_mad <tid> <version> <type> <flags> <status> <seg> <newwin>: the hex of an SA GetTable
# (NodeRecord) MAD with that RMPP header.
rmpp_mad() {
	printf '01030212000000000000%012x0011000000000000%02x%02x%02x%02x%08x%08x%0440d' "$1" "$2" "$3" \
		"$4" "$5" "$6" "$7" 0
}
# rmpp_inject <what> <count> <hex> <answer>: the datagrams arrive; in VM 0, where opensm's SA agent
# takes them, the device sends back <answer> (cx-model's `mad-replies`: `replies N` and each
# MAD as class.method.status.rmpp-type.rmpp-status), as it does under C.
rmpp_inject() {
	model_ctl mad-inject 1 7 0x0999 0x80010000 "$2" "$3" | grep -q ' injected '
	ktap_result $? "hostile RMPP: $1: sent"
	if [ "$VM_INDEX" != 0 ]; then
		return
	fi
	if [ "$4" = "replies 0" ]; then
		sleep 1
		check_output "hostile RMPP: $1: no answer, as C" "^ok $4\$" model_ctl mad-replies
	else
		wait_for "hostile RMPP: $1: answered as C ($4)" 10 "^ok $4\$" model_ctl mad-replies
	fi
}
# An ABORT with <status> (hex) answering a GetTable.
abort() { echo "replies 1 03.92.0000.04.$1"; }
rmpp_inject "version 2" 1 "$(rmpp_mad 1 2 1 7 0 1 0)" "$(abort 7d)"
rmpp_inject "type 9" 1 "$(rmpp_mad 2 1 9 7 0 1 0)" "$(abort 79)"
rmpp_inject "segment 1 without FIRST" 1 "$(rmpp_mad 3 1 1 1 0 1 0)" "$(abort 78)"
rmpp_inject "FIRST on segment 2" 1 "$(rmpp_mad 4 1 1 3 0 2 0)" "$(abort 78)"
rmpp_inject "a DATA with status 5" 1 "$(rmpp_mad 5 1 1 7 5 1 0)" "$(abort 7c)"
rmpp_inject "an ACK of segment 5 with window 2" 1 "$(rmpp_mad 6 1 2 1 0 5 2)" "$(abort 7a)"
rmpp_inject "a STOP with status 7" 1 "$(rmpp_mad 7 1 3 1 7 0 0)" "$(abort 7c)"
rmpp_inject "an ABORT with status 3" 1 "$(rmpp_mad 8 1 4 1 3 0 0)" "$(abort 7c)"
rmpp_inject "an ABORT with status 120, for no send" 1 "$(rmpp_mad 9 1 4 1 120 0 0)" "replies 0"
acks="replies 3"
for _ in 1 2 3; do acks="$acks 03.92.0000.02.00"; done
rmpp_inject "the first segment of a message, 3 times: an ACK each" 3 "$(rmpp_mad 10 1 1 3 0 1 0)" "$acks"
rmpp_inject "segment 2 of no message, 5 times" 5 "$(rmpp_mad 11 1 1 1 0 2 0)" "replies 0"
# C compares segment numbers as ints: 0xffffffff is -1, below the last ACK: it is acknowledged.
acks="replies 5"
for _ in 1 2 3 4 5; do acks="$acks 03.92.0000.02.00"; done
rmpp_inject "segment 0xffffffff of a message under way, 5 times: an ACK each" 5 \
	"$(rmpp_mad 10 1 1 1 0 4294967295 0)" "$acks"
n=0
while [ $n -lt 50 ]; do
	model_ctl mad-inject 1 7 0x0999 0x80010000 1 "$(rmpp_mad $((100 + n)) 1 1 3 0 1 0)" >/dev/null
	n=$((n + 1))
done
rmpp_inject "a message started and left" 1 "$(rmpp_mad 99 1 1 3 0 1 0)" "replies 1 03.92.0000.02.00"
saquery >/tmp/sa-nodes 2>&1
check_output "after the hostile RMPP: the SA still answers (both NodeRecords)" '^2$' records /tmp/sa-nodes '^NodeRecord dump'

# ib_c_sa (tools/verbs-twin): a C module built against include/rdma/ib_sa.h, the same file on both
# stacks, uses the SA client's C API: path queries (the peer's path, a LID nobody has, refusals,
# a record packed and unpacked), GUIDInfo records (the own port's block 0, a LID nobody has, a
# method the query refuses), a service record packed and unpacked, multicast joins (the group ff12:601b:ffff::1:5a created by the
# first of the VMs, joined by the other; joins the core answers itself; a create the SA refuses).
# Its lines, with the LIDs and GIDs named, are what the C stack prints (recorded from a run with
# both VMs on C). Then the SA lists both ports as members; when the modules go, the SA forgets
# the group (each stack sent its leave).
own_gid=$(cat $port/gids/0)
case "$own_gid" in
*0101) peer_gid=${own_gid%0101}0201 ;;
*) peer_gid=${own_gid%0201}0101 ;;
esac
own_hex=$(echo "$own_gid" | tr -d :)
peer_hex=$(echo "$peer_gid" | tr -d :)
meet sa-client
check "insmod ib_c_sa peer_lid=$peer_lid (the SA client's C API)" insmod "$stack_dir/ib_c_sa.ko" peer_lid="$peer_lid"
wait_for "ib_c_sa: done" 90 'ib_c_sa: mlx5_0: done' dmesg
dmesg | sed -n 's/^\[[^]]*\] ib_c_sa: //p' | grep -v 'taints kernel' | sed -e "s/own LID $lid,/own LID OWN,/" -e "s/SM LID $sm_lid\$/SM LID SM/" \
	-e "s/dlid $peer_lid slid $lid /dlid PEER slid OWN /" -e "s/$own_gid/OWN_GID/g" -e "s/$peer_gid/PEER_GID/g" \
	-e "s/$own_hex/OWN_GID/g" -e "s/$peer_hex/PEER_GID/g" \
	-e "s/| $(printf '%04x%04x' "$peer_lid" "$lid") |/| PEER_LID OWN_LID |/" >/tmp/ib_c_sa.out
sed 's/^/# ib_c_sa: /' /tmp/ib_c_sa.out
[ -f /tmp/opensm.log ] && grep -h 'ERR 1B' /tmp/opensm.log | sed 's/^/# opensm: /'
ib_c_sa_expected >/tmp/ib_c_sa.expected
check_output "ib_c_sa prints what it prints on the C stack" '^same$' \
	sh -c 'diff -u /tmp/ib_c_sa.expected /tmp/ib_c_sa.out && echo same'
meet sa-joined
# The SM_Key (opensm's default, 1) makes the request trusted: one record per member port.
saquery --smkey 1 -m >/tmp/sa-members 2>&1
check_output "saquery -m (trusted): both ports are members of ff12:601b:ffff::1:5a" '^2$' records /tmp/sa-members 'MGID.*ff12:601b:ffff::1:5a$'
meet sa-counted
check "rmmod ib_c_sa (the membership freed: a leave)" rmmod ib_c_sa
check_output "ib_c_sa freed its membership" 'the kept membership freed \(1 callback\(s\) in all, the last with status 0\)' dmesg
meet sa-left
wait_for "the SA forgot the group once both ports left" 30 '^0$' sh -c "saquery -g 2>&1 | grep -c 'ff12:601b:ffff::1:5a'"
# Joined again (just_join), the port goes down under the membership: the port error ends it
# (C's mcast_groups_event), its callback gets ENETRESET, and the module frees it without a leave
# (C's). The SM brings the port back (what its SA then keeps depends on the SM: VM 0's port is
# the SM's own, whose flap makes opensm discover the subnet anew).
meet sa-rejoin
check "insmod ib_c_sa just_join=1" insmod "$stack_dir/ib_c_sa.ko" just_join=1
wait_for "ib_c_sa joined again" 60 '^2$' sh -c "dmesg | grep -c 'ib_c_sa: join: status 0, 1 callback'"
meet sa-rejoined
model_ctl port 1 down >/dev/null
wait_for "port down: the membership ends with ENETRESET (-102)" 30 'callback 2 of a membership: status -102' dmesg
model_ctl port 1 up >/dev/null
wait_for "the SM made the port ACTIVE again" 90 '^4: ACTIVE$' cat $port/state
check_output "the port kept its LID $lid" "^$(printf '0x%x' "$lid")\$" cat $port/lid
check "rmmod ib_c_sa (the membership ended by the event: no leave)" rmmod ib_c_sa
check_output "ib_c_sa freed it after the event" 'the kept membership freed \(2 callback\(s\) in all, the last with status -102\)' dmesg
meet sa-reset

# rdma_cm with AF_IB addresses (GIDs and a service ID: no IP, so no IPoIB): C's rdma_cm.ko (the
# same file on both stacks, with ib_cm and iw_cm below it) and tools/verbs-twin/ib_c_rdmacm.ko.
# Round 1: VM 0 listens (passive) and VM 1 connects (active); round 2 the other way. The active
# end resolves the peer's GID to its own device and port, the route (a PathRecord from the SA),
# connects (ib_cm's REQ, REP, RTU), sends 64 bytes the passive end checks, and disconnects. Each
# end's lines, GIDs and LIDs named, are what it prints on the C stack (recorded from two C VMs).
# rdma_ucm (user space's rdma_cm) loads on it and makes /dev/infiniband/rdma_cm.
check "insmod ib_cm, iw_cm, rdma_cm (C's; configfs first)" sh -c "{ [ -d /sys/module/configfs ] || insmod $stack_dir/configfs.ko; } && insmod $stack_dir/ib_cm.ko && insmod $stack_dir/iw_cm.ko && insmod $stack_dir/rdma_cm.ko"
check "insmod rdma_ucm (C's)" insmod "$stack_dir/rdma_ucm.ko"
check_output "rdma_ucm's device /dev/infiniband/rdma_cm" 'rdma_cm' ls /dev/infiniband
# rdmacm_lines ROLE FROM: ib_c_rdmacm's lines in ROLE after dmesg line FROM, GIDs and LIDs named.
rdmacm_lines() {
	dmesg | tail -n "+$(($2 + 1))" | sed -n "s/^\[[^]]*\] ib_c_rdmacm: $1: //p" | \
		sed -e "s/$own_gid/OWN_GID/g" -e "s/$peer_gid/PEER_GID/g" \
		-e "s/dlid $lid /dlid OWN /" -e "s/dlid $peer_lid /dlid PEER /" \
		-e "s/slid $lid /slid OWN /" -e "s/slid $peer_lid /slid PEER /"
}
# rdmacm_round N PASSIVE_VM: one connection, VM PASSIVE_VM listening.
rdmacm_round() {
	meet "rdmacm-$1"
	_from=$(dmesg | wc -l)
	if [ "$VM_INDEX" = "$2" ]; then
		insmod "$stack_dir/ib_c_rdmacm.ko" role=passive &
		_pid=$!
		wait_for "round $1: ib_c_rdmacm listens" 30 'ib_c_rdmacm: passive: listening: 0' dmesg
		meet "rdmacm-listening-$1"
		wait "$_pid"
		_role=passive
	else
		meet "rdmacm-listening-$1"
		check "round $1: insmod ib_c_rdmacm role=active peer_gid=PEER" \
			insmod "$stack_dir/ib_c_rdmacm.ko" role=active peer_gid="$peer_gid"
		_role=active
	fi
	rdmacm_lines $_role "$_from" >/tmp/rdmacm.out
	ib_c_rdmacm_expected $_role >/tmp/rdmacm.expected
	sed "s/^/# ib_c_rdmacm round $1: $_role: /" /tmp/rdmacm.out
	check_output "round $1 ($_role): ib_c_rdmacm prints what it prints on the C stack" '^same$' \
		sh -c 'diff -u /tmp/rdmacm.expected /tmp/rdmacm.out && echo same'
	check "round $1: rmmod ib_c_rdmacm" rmmod ib_c_rdmacm
	meet "rdmacm-done-$1"
}
rdmacm_round 1 0
rdmacm_round 2 1

# IPoIB (C's ib_ipoib.ko, the same file on both stacks): loaded on the port, it makes ib0, an
# InfiniBand net device in datagram mode (the only one built; the model offers no enhanced IPoIB,
# so both stacks use the verbs), whose 20-byte address is the UD QP's number and the port's GID,
# its broadcast address the P_Key's broadcast group's. Up, it joins the broadcast group through
# the SA (from its lock: the Rust core begins such joins and path queries from a work item),
# attaches its QP to it (ATTACH_TO_MCG), and the VMs ping each other over ib0 (ARP on the
# group, the path to the peer from the SA); then 64 MiB of random data go over TCP each way and
# the receiver's SHA-256 must be the sender's.
check "insmod ib_ipoib (C's)" insmod "$stack_dir/ib_ipoib.ko"
wait_for "ib_ipoib made ib0" 10 '^ib0$' ls /sys/class/net
gid_bytes=$(echo "$own_hex" | sed 's/../&:/g; s/:$//')
check_output "ib0's address: a QP number, then the port's GID; its broadcast the P_Key's group" \
	"link/infiniband 00:[0-9a-f][0-9a-f]:[0-9a-f][0-9a-f]:[0-9a-f][0-9a-f]:$gid_bytes brd 00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff\$" \
	sh -c "ip link show ib0 | sed -n 's/^ *//p'"
check_output "ib0: P_Key 0xffff, MTU 4092 (the port's 4096 less the 4-byte IPoIB header)" '^0xffff 4092$' \
	sh -c 'echo $(cat /sys/class/net/ib0/pkey /sys/class/net/ib0/mtu)'
ipoib_own=10.24.0.$((VM_INDEX + 1))
ipoib_peer=10.24.0.$((2 - VM_INDEX))
check "ib0 up with $ipoib_own/24" sh -c "ip addr add $ipoib_own/24 dev ib0 && ip link set ib0 up"
wait_for "ib0 joined the broadcast group (its carrier is on)" 30 '^1$' cat /sys/class/net/ib0/carrier
meet ipoib-up
wait_for "ping $ipoib_peer over ib0" 30 ' 0% packet loss' ping -c 3 -W 2 "$ipoib_peer"
meet ipoib-pinged
# listen PORT FILE: nc listens on PORT in the background, writing what it receives to FILE, its
# pid in $_pid; its standard input (fd 9's FIFO) stays open until listened_out. Busybox nc ends
# as soon as the peer half-closes, and shuts its own sending half when its input ends: a listener
# reading /dev/null would end the sender's nc before its data were out.
listen() {
	rm -f /tmp/hold && mkfifo /tmp/hold
	timeout 300 nc -l -p "$1" </tmp/hold >"$2" &
	_pid=$!
	exec 9>/tmp/hold
}
listened_out() {
	wait "$_pid"
	exec 9>&-
}
# ipoib_tcp SENDER_VM: 64 MiB over TCP from VM SENDER_VM to the other; the receiver sends its
# SHA-256 back, which the sender compares with its own.
ipoib_tcp() {
	if [ "$VM_INDEX" = "$1" ]; then
		dd if=/dev/urandom of=/tmp/ipoib-tx bs=1M count=64 2>/dev/null
		sent=$(sha256sum /tmp/ipoib-tx | cut -d' ' -f1)
		listen 5101 /tmp/ipoib-sum
		meet "ipoib-tcp-$1"
		check "64 MiB to $ipoib_peer over TCP on ib0" timeout 300 nc "$ipoib_peer" 5100 </tmp/ipoib-tx
		listened_out
		check_output "the receiver's SHA-256 is the sender's" "^$sent\$" cat /tmp/ipoib-sum
		rm -f /tmp/ipoib-tx
	else
		listen 5100 /tmp/ipoib-rx
		meet "ipoib-tcp-$1"
		listened_out
		check_output "64 MiB received over TCP on ib0" '^67108864$' sh -c 'wc -c </tmp/ipoib-rx'
		sha256sum /tmp/ipoib-rx | cut -d' ' -f1 >/tmp/ipoib-rx.sum
		check "the SHA-256 sent back" timeout 30 nc "$ipoib_peer" 5101 </tmp/ipoib-rx.sum
		rm -f /tmp/ipoib-rx
	fi
	meet "ipoib-tcp-done-$1"
}
ipoib_tcp 1
ipoib_tcp 0
# IP addresses through rdma_cm (rdma_ucm for user space): each end's ib0 address resolves, with
# the route and ARP over IPoIB, to mlx5_0 port 1 and the peer's GID; the route's path comes from
# the SA; then ib_cm connects. cm_pair N SERVER_VM WHAT PATTERN SERVER CLIENT: SERVER runs in VM
# SERVER_VM, CLIENT (tried until it connects) in the other; both outputs must match PATTERN.
cm_pair() {
	if [ "$VM_INDEX" = "$2" ]; then
		timeout 120 sh -c "$5" >/tmp/cm-server 2>&1 &
		_pid=$!
		meet "cm-$1"
		wait "$_pid"
		_rc=$?
		check_output "$3: the server on $ipoib_own (exit $_rc)" "$4" sh -c "cat /tmp/cm-server; [ $_rc = 0 ]"
	else
		meet "cm-$1"
		wait_for "$3: the client to $ipoib_peer" 60 "$4" timeout 60 sh -c "$6"
	fi
	meet "cm-done-$1"
}
rping_args="-p 7174 -C 10 -S 64 -v"
cm_pair rping-0 0 "rping over IPoIB, server on VM 0" 'rdma-ping-9: ' \
	"rping -s -a $ipoib_own $rping_args" "rping -c -a $ipoib_peer $rping_args"
cm_pair rping-1 1 "rping over IPoIB, server on VM 1" 'rdma-ping-9: ' \
	"rping -s -a $ipoib_own $rping_args" "rping -c -a $ipoib_peer $rping_args"
bw_args="-R -d mlx5_0 -i 1 -p 18600 -s 65536 -n 1000"
cm_pair write-bw-0 0 "ib_write_bw -R over IPoIB, server on VM 0" '^ *65536 +1000 ' \
	"ib_write_bw $bw_args" "ib_write_bw $bw_args $ipoib_peer"
cm_pair write-bw-1 1 "ib_write_bw -R over IPoIB, server on VM 1" '^ *65536 +1000 ' \
	"ib_write_bw $bw_args" "ib_write_bw $bw_args $ipoib_peer"
ip link set ib0 down
check "rmmod ib_ipoib" rmmod ib_ipoib
check "rmmod rdma_ucm, rdma_cm, iw_cm, ib_cm" rmmod rdma_ucm rdma_cm iw_cm ib_cm
meet discovered

if [ "$VM_INDEX" = 1 ]; then
	opensm -F /tmp/opensm.conf -p 15 -s 2 -f /tmp/opensm.log >/tmp/opensm.out 2>&1 &
	sm=$!
fi
wait_for "handover: sminfo names the priority-15 SM as master" 90 'priority 15 state 3 SMINFO_MASTER$' sminfo
if [ "$VM_INDEX" = 0 ]; then
	check_output "the first SM is STANDBY" 'priority 1 state 2 SMINFO_STANDBY$' sminfo -s "$sm_lid" "$sm_lid"
fi
check_output "the port kept its LID $lid" "^$(printf '0x%x' "$lid")\$" cat $port/lid
saquery >/tmp/sa-nodes 2>&1
check_output "saquery from the new master's SA (VM 1's): both NodeRecords, two segments" '^2$' records /tmp/sa-nodes '^NodeRecord dump'
if [ "$VM_INDEX" = 0 ]; then
	check_output "osmtest -f c against VM 1's SA" 'OSMTEST: TEST "Create Inventory" PASS' osmtest -f c -i /tmp/osmtest.dat
	check_output "osmtest -f a against VM 1's SA" 'OSMTEST: TEST "All Validations" PASS' osmtest -f a -i /tmp/osmtest.dat
fi
if [ "$VM_INDEX" = 0 ] && [ "$STACK" = rust ]; then
	# ib_core's SA client, as a kernel consumer uses it: the path to the peer from VM 1's SA.
	# What saquery (user space, through umad) gets for the same path: the kernel consumer must
	# get the same record.
	saquery -p --src-to-dst "$lid:$peer_lid" >/tmp/sa-path 2>&1
	field() { sed -n "s/^[[:space:]]*$1\.\.*\(.*\)\$/\1/p" /tmp/sa-path | head -n 1; }
	expected="SA path $lid -> $peer_lid: sl $(($(field sl))) mtu $(($(field mtu) & 0x3f))"
	expected="$expected rate $(($(field rate) & 0x3f)) pkey $(printf '%#06x' $(($(field pkey))))"
	expected="$expected packet_life_time $(($(field pkt_life) & 0x3f))"
	expected="$expected reversible $((($(field num_path_revers) >> 7) & 1)) hop_limit $(($(field hop_flow_raw) & 0xff))"
	check "ib_mad_agent asks ib_core's SA client for the path to LID $peer_lid" \
		insmod "$stack_dir/ib_mad_agent.ko" sa_path_to="$peer_lid"
	wait_for "the kernel consumer gets the path saquery gets ($expected)" 30 "$expected\$" dmesg
	check "rmmod ib_mad_agent" rmmod ib_mad_agent
fi
meet handed-over

[ -n "$sm" ] && kill "$sm" && wait "$sm" 2>/dev/null
sleep 3
check_output "with no SM left the port keeps LID $lid, ACTIVE" "lid $lid .* state ACTIVE" rdma link show mlx5_0/1
kill $watcher
wait $watcher 2>/dev/null
meet stopped
check "the stack unloads" unload_stack
# C 7.3 leaks the task of a process (see mad-tools), sometimes found by the scan: kmemleak on rust.
[ "$STACK" = rust ] && kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# c-abi-sw-drivers-2vm: C's software drivers, soft-RoCE (rdma_rxe.ko) and soft-iWARP (siw.ko),
# the same files on both stacks, on the Rust core (issue "ib_core's C ABI", step 4: C drivers;
# docs/c-abi.md). VM 0 runs the Rust stack,
# VM 1 the C stack, joined by their virtio-net link. On each, `rdma link add rxe0 type rxe
# netdev <the NIC>` loads rdma_rxe through the link type's alias (`rdma-link-rxe`) and registers
# rxe0: a C driver's device allocated with `_ib_alloc_device`, its ops set with
# `ib_set_device_ops`, its port's net device set with `ib_device_set_netdev` and registered with
# `ib_register_device`, which the Rust core drives through the driver's ops table. What `rdma
# link`, `rdma dev` and sysfs show of it must be what the C stack shows (lines recorded from
# two C VMs; the node GUID, default GID and IPv4 GID follow each VM's MAC and address): the
# port's net device, its attributes and state, the driver's own `parent` file, the RoCE GID
# table the core makes from the NIC (the default GID and the IPv4-mapped one, RoCE v2, on the
# NIC), its hardware counters (the driver's `alloc_hw_port_stats`/`get_hw_stats`: sysfs
# `hw_counters` and `rdma stat`). Then `rdma link delete` (the driver's dellink, the device
# unregistered and freed by its dealloc_driver), a second device, refused links. Then siw0 on
# the same NIC: an RNIC whose one GID the driver reports (its MAC), on eth0, no counters. The
# stack unloads clean; kmemleak (rust), dmesg.
# The MAD layer opens QP1 on rxe0's RoCE port through the driver's kernel verbs (a PD, a CQ,
# the GSI QP, receives posted): `rdma res` counts them as on C, and the QP's socket holds
# rdma_rxe, which `rmmod` then refuses, as on C; the port's PerfMgmt counters are read through
# the driver's process_mad (sysfs `counters`). A C kernel verbs consumer
# (tools/verbs-twin/ib_c_roce.c) runs RC and UD traffic on rxe0 (RoCE v2 addresses to itself)
# and prints C's lines: C's inline data path through the core's ops table, the core's objects,
# the driver's through its ops table; then rxe0 is deleted under it (its remove destroys what
# it holds). The counters' values are printed, not compared (the peer's traffic moves them).
# User verbs on rxe0 between the two VMs (rdma-core's librxe through ib_uverbs on the Rust
# core: user PDs, CQs and QPs made by the C driver with the context's udata, memory regions
# pinned by the core, the driver's queues mapped by its mmap, POST_SEND to start its send
# queue, the next hop's MAC resolved by the core when the QP gets its RoCE path):
# ibv_rc_pingpong (received data checked) and ib_write_bw, each way; afterwards `rdma res`
# counts what it counted before.
# C's connection managers on rxe0 (ib_cm, iw_cm, rdma_cm, rdma_ucm loaded on the Rust core: CM
# MADs through the MAD layer on the RoCE port, addresses answered from the packets' RoCE v2
# headers and the IP stack's next hop, RoCE path records, user AHs): rping with its data
# verified, ib_write_bw -R, ucmatose, udaddy (UD, its replies through user AHs) and cmtime,
# each way. NVMe over RDMA on rxe0 (nvmet-rdma and nvme-rdma), each VM target and host at once:
# 64 MiB written through the other's namespace, read back and compared; rxe0 deleted under the
# target's listener.
# vms: 2
# vm-stacks: rust c
# timeout: 600
# exclusive: yes
# It runs alone because soft-iWARP's TCP framing between the two guests lost its place under
# make test's full load (a third guest beside them on two CPUs): ib_write_bw -R over siw0 ended
# with "Bad wc status 2" after the receiving siw found a DDP segment ahead of the one it
# expected, then ucmatose could not connect (twice on 2026-12-01, in make test only; never in
# a run alone, which takes about 135 s).
# install-modules: yes udp_tunnel ip6_udp_tunnel rdma_rxe siw null_blk nvme-core nvme-fabrics nvme-rdma nvmet nvmet-rdma

N=$((VM_INDEX + 1))
SYS=/sys/class/infiniband/rxe0

check "load the stack" load_stack
meet net-up
NIC=$(net_ifname "$NET_MAC")
check "the NIC is eth0" sh -c "[ '$NIC' = eth0 ]"
# Jumbo frames: rxe's port MTU follows the NIC's (4096 rather than 1024 at 1500 bytes), a quarter
# of the packets for the traffic below.
check "eth0's MTU 9000" ip link set eth0 mtu 9000
check "rdma link add rxe0 type rxe netdev eth0" rdma link add rxe0 type rxe netdev eth0
check "rdma_rxe was loaded through its alias" grep -q '^rdma_rxe ' /proc/modules
check_output "rdma link show: ACTIVE, LINK_UP, on eth0" \
	'^link rxe0/1 state ACTIVE physical_state LINK_UP netdev eth0 $' rdma link show rxe0/1
check_output "rdma -d link show: eth0's index" \
	'^link rxe0/1 state ACTIVE physical_state LINK_UP netdev eth0 netdev_index 2 $' rdma -d link show rxe0/1
check_output "rdma dev show: CA, GUIDs from the MAC" \
	"^[0-9]+: rxe0: node_type ca node_guid 5054:00ff:fe23:000$N sys_image_guid 5054:00ff:fe23:000$N \$" \
	rdma dev show rxe0
check_output "rdma -d dev show: the driver's capabilities" \
	'caps: <BAD_PKEY_CNTR, BAD_QKEY_CNTR, AUTO_PATH_MIG, CHANGE_PHY_PORT, UD_AV_PORT_ENFORCE_PORT_ENFORCE, PORT_ACTIVE_EVENT, SYS_IMAGE_GUID, RC_RNR_NAK_GEN, SRQ_RESIZE, MEM_WINDOW, MEM_MGT_EXTENSIONS, MEM_WINDOW_TYPE_2B, UNKNOWN, UNKNOWN, UNKNOWN>' \
	rdma -d dev show rxe0

# <file>=<value> as C shows them.
SYSFS_EXPECTED="node_type=1: CA
node_guid=5054:00ff:fe23:000$N
sys_image_guid=5054:00ff:fe23:000$N
node_desc=rxe
fw_ver=
parent=eth0
ports/1/state=4: ACTIVE
ports/1/phys_state=5: LinkUp
ports/1/link_layer=Ethernet
ports/1/rate=2.5 Gb/sec (1X SDR)
ports/1/lid=0x0
ports/1/cap_mask=0x00010000
ports/1/gids/0=fe80:0000:0000:0000:5054:00ff:fe23:000$N
ports/1/gid_attrs/types/0=RoCE v2
ports/1/gid_attrs/ndevs/0=eth0
ports/1/gids/1=0000:0000:0000:0000:0000:ffff:0a17:000$N
ports/1/gid_attrs/types/1=RoCE v2
ports/1/gid_attrs/ndevs/1=eth0
ports/1/gids/2=0000:0000:0000:0000:0000:0000:0000:0000
ports/1/gid_attrs/types/2=
ports/1/gid_attrs/ndevs/2="
# same <name> <expected> <got>: passes when the texts are equal.
same() {
	if [ "$3" = "$2" ]; then
		ktap_result 0 "$1"
	else
		ktap_result 1 "$1" "expected:
$2
got:
$3"
	fi
}
seen=$(printf '%s\n' "$SYSFS_EXPECTED" | while IFS='=' read -r f _; do
	printf '%s=%s\n' "$f" "$(cat "$SYS/$f" 2>/dev/null)"
done)
same "sysfs: rxe0's attributes, port and GID table (default and IPv4 GIDs, RoCE v2 on eth0)" \
	"$SYSFS_EXPECTED" "$seen"
same "sysfs: rxe0's files" "fw_ver node_desc node_guid node_type parent ports subsystem sys_image_guid uevent" \
	"$(ls $SYS | tr '\n' ' ' | sed 's/ $//')"
same "sysfs: a virtual device" /sys/devices/virtual/infiniband/rxe0 "$(readlink -f $SYS)"
same "sysfs: 1024 GID entries" 1024 "$(ls $SYS/ports/1/gids | wc -l)"
check_output "the driver's log lines name the device as C's" 'infiniband rxe0: added eth0' dmesg
RXE_COUNTERS="ack_deferred completer_retry_err duplicate_request lifespan link_downed out_of_seq_request rcvd_bytes rcvd_pkts rcvd_rnr_err rcvd_seq_err rdma_recvs rdma_sends retry_exceeded_err retry_rnr_exceeded_err send_err send_rnr_err sent_bytes sent_pkts"
same "sysfs: the driver's hardware counters" "$RXE_COUNTERS" "$(ls $SYS/ports/1/hw_counters | tr '\n' ' ' | sed 's/ $//')"
same "sysfs: their lifespan (10 ms in jiffies, as C shows it)" 12 "$(cat $SYS/ports/1/hw_counters/lifespan)"
same "rdma stat show link rxe0/1: every counter, none counted yet" \
	"link rxe0/1 sent_pkts 0 rcvd_pkts 0 duplicate_request 0 out_of_seq_request 0 rcvd_rnr_err 0 send_rnr_err 0 rcvd_seq_err 0 ack_deferred 0 retry_exceeded_err 0 retry_rnr_exceeded_err 0 completer_retry_err 0 send_err 0 link_downed 0 rdma_sends 0 rdma_recvs 0 sent_bytes 0 rcvd_bytes 0 " \
	"$(rdma stat show link rxe0/1)"
same "rdma res show rxe0: the MAD layer's PD, CQ and QP1 on the RoCE port" \
	"1: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0 comp_cntr 0 " "$(rdma res show rxe0)"
same "rdma_rxe is held once (its QP1's socket)" 1 "$(cat /sys/module/rdma_rxe/refcnt)"
# What `ibv_devinfo -v` prints of rxe0 on C (rdma-core's librxe on the device's uverbs file:
# the context, the extended device query, the port, the GID table with types).
DEVINFO_EXPECTED="hca_id:	rxe0
	transport:			InfiniBand (0)
	fw_ver:				0.0.0
	node_guid:			5054:00ff:fe23:000$N
	sys_image_guid:			5054:00ff:fe23:000$N
	vendor_id:			0xffffff
	vendor_part_id:			0
	hw_ver:				0x0
	phys_port_cnt:			1
	max_mr_size:			0xffffffffffffffff
	page_size_cap:			0xfffff000
	max_qp:				1048560
	max_qp_wr:			1048576
	device_cap_flags:		0x01223c76
					BAD_PKEY_CNTR
					BAD_QKEY_CNTR
					AUTO_PATH_MIG
					CHANGE_PHY_PORT
					UD_AV_PORT_ENFORCE
					PORT_ACTIVE_EVENT
					SYS_IMAGE_GUID
					RC_RNR_NAK_GEN
					SRQ_RESIZE
					MEM_WINDOW
					MEM_MGT_EXTENSIONS
					MEM_WINDOW_TYPE_2B
	max_sge:			32
	max_sge_rd:			32
	max_cq:				1048576
	max_cqe:			32767
	max_mr:				524287
	max_pd:				1048576
	max_qp_rd_atom:			128
	max_ee_rd_atom:			0
	max_res_rd_atom:		258048
	max_qp_init_rd_atom:		128
	max_ee_init_rd_atom:		0
	atomic_cap:			ATOMIC_HCA (1)
	max_ee:				0
	max_rdd:			0
	max_mw:				524287
	max_raw_ipv6_qp:		0
	max_raw_ethy_qp:		0
	max_mcast_grp:			8192
	max_mcast_qp_attach:		56
	max_total_mcast_qp_attach:	458752
	max_ah:				32767
	max_fmr:			0
	max_srq:			917503
	max_srq_wr:			1048576
	max_srq_sge:			27
	max_pkeys:			64
	local_ca_ack_delay:		15
	general_odp_caps:
	rc_odp_caps:
					NO SUPPORT
	uc_odp_caps:
					NO SUPPORT
	ud_odp_caps:
					NO SUPPORT
	xrc_odp_caps:
					NO SUPPORT
	completion_timestamp_mask not supported
	core clock not supported
	device_cap_flags_ex:		0x1C001223C76
					Unknown flags: 0x1C000000000
	tso_caps:
		max_tso:			0
	rss_caps:
		max_rwq_indirection_tables:			0
		max_rwq_indirection_table_size:			0
		rx_hash_function:				0x0
		rx_hash_fields_mask:				0x0
	max_wq_type_rq:			0
	packet_pacing_caps:
		qp_rate_limit_min:	0kbps
		qp_rate_limit_max:	0kbps
	tag matching not supported
	num_comp_vectors:		1
		port:	1
			state:			PORT_ACTIVE (4)
			max_mtu:		4096 (5)
			active_mtu:		4096 (5)
			sm_lid:			0
			port_lid:		0
			port_lmc:		0x00
			link_layer:		Ethernet
			max_msg_sz:		0x80000000
			port_cap_flags:		0x00010000
			port_cap_flags2:	0x0000
			max_vl_num:		1 (1)
			bad_pkey_cntr:		0x0
			qkey_viol_cntr:		0x0
			sm_sl:			0
			pkey_tbl_len:		1
			gid_tbl_len:		1024
			subnet_timeout:		0
			init_type_reply:	0
			active_width:		1X (1)
			active_speed:		2.5 Gbps (1)
			phys_state:		LINK_UP (5)
			GID[  0]:		fe80::5054:ff:fe23:$N, RoCE v2
			GID[  1]:		::ffff:10.23.0.$N, RoCE v2"
check_output "ibv_devices lists rxe0 with its node GUID" "^ +rxe0[[:space:]]+505400fffe23000$N\$" ibv_devices
same "ibv_devinfo -v -d rxe0: what C prints" "$DEVINFO_EXPECTED" "$(ibv_devinfo -v -d rxe0 2>&1)"
# The GID table follows eth0's addresses: an IPv4 and an IPv6 address added (each in the first
# free entry), the IPv4 one removed (its entry freed, the others keep their indices), another
# IPv4 address added (it takes the freed entry).
gids() {
	for i in 0 1 2 3 4; do
		printf '%s %s\n' "$(cat $SYS/ports/1/gids/$i)" "$(cat $SYS/ports/1/gid_attrs/types/$i 2>/dev/null)"
	done
}
ip addr add 10.99.0.$N/24 dev eth0
wait_for "an IPv4 address added: its GID in entry 2" 20 "0000:0000:0000:0000:0000:ffff:0a63:000$N" \
	cat $SYS/ports/1/gids/2
ip -6 addr add fd00::$N/64 dev eth0 || echo "# ip -6 addr add failed"
wait_for "an IPv6 address added: its GID in entry 3" 20 "^fd00:0000:0000:0000:0000:0000:0000:000$N" \
	cat $SYS/ports/1/gids/3
ip addr del 10.99.0.$N/24 dev eth0
wait_for "the IPv4 address removed: entry 2 freed" 20 "^0000:0000:0000:0000:0000:0000:0000:0000" \
	cat $SYS/ports/1/gids/2
ip addr add 10.98.0.$N/24 dev eth0
wait_for "another IPv4 address: entry 2 again" 20 "0000:0000:0000:0000:0000:ffff:0a62:000$N" \
	cat $SYS/ports/1/gids/2
same "the GID table after the changes, as on C" "fe80:0000:0000:0000:5054:00ff:fe23:000$N RoCE v2
0000:0000:0000:0000:0000:ffff:0a17:000$N RoCE v2
0000:0000:0000:0000:0000:ffff:0a62:000$N RoCE v2
fd00:0000:0000:0000:0000:0000:0000:000$N RoCE v2
0000:0000:0000:0000:0000:0000:0000:0000 " "$(gids)"
ip addr del 10.98.0.$N/24 dev eth0
ip -6 addr del fd00::$N/64 dev eth0
wait_for "both removed" 20 "^0000:0000:0000:0000:0000:0000:0000:0000" cat $SYS/ports/1/gids/3

# ib_c_roce on rxe0 (the C stack's lines; the IPv4 GID is the VM's address).
ROCE_LINES="ib_c_roce: add rxe0, port 1 RoCE 1
ib_c_roce: gid 1: 0000:0000:0000:0000:0000:ffff:0a17:000$N type 2, on the port's net device 1
ib_c_roce: enabling unsafe global rkey
ib_c_roce: rc qps to RTS: 0 0
ib_c_roce: send: posted 0 0, completions 2
ib_c_roce:   wr 2 status 0 opcode 128 len 512 imm 17185
ib_c_roce:   wr 1 status 0 opcode 0 len 0 imm 0
ib_c_roce: send: bytes arrived 1
ib_c_roce: write: posted 0, completion 1 status 0 opcode 1, bytes 1
ib_c_roce: read: posted 0, completion 1 status 0 opcode 2 len 512, bytes 1
ib_c_roce: query: 0, state 3, dest is b 1, path type 2 grh 1 sgid 1 hop 64, dmac the port's 0
ib_c_roce: ud qp to RTS 0, ah 0
ib_c_roce: ud: posted 0 0, completions 2
ib_c_roce:   wr 6 status 0 opcode 0 len 0 grh 0
ib_c_roce:   wr 5 status 0 opcode 128 len 296 grh 1
ib_c_roce: ud: bytes arrived 1"
mark=$(module_lines ib_c_roce | wc -l)
check "insmod ib_c_roce (a C kernel verbs consumer of rxe0's RoCE port)" insmod "$stack_dir/ib_c_roce.ko"
same "ib_c_roce: RC SEND with immediate data, RDMA WRITE and READ, the QP's RoCE path, a UD datagram through a RoCE AH, as on C" \
	"$ROCE_LINES
ib_c_roce: peer: ud N rc N, receives posted 0" \
	"$(module_lines_since ib_c_roce "$mark" | sed -E 's/peer: ud [0-9]+ rc [0-9]+,/peer: ud N rc N,/')"

# Then with the other VM's module: each side's UD and RC QP numbers go to the other over TCP,
# and each sends a datagram and an RC message to the other's: RoCE v2 between the Rust core's
# rxe0 and C's, both ways.
own=$(module_lines ib_c_roce | sed -n 's/^ib_c_roce: peer: ud \([0-9]*\) rc \([0-9]*\), receives posted 0$/\1 \2/p' | tail -n 1)
if [ "$VM_INDEX" = 0 ]; then
	timeout 60 nc -l -p 5010 </dev/null >/tmp/roce-peer 2>&1 &
	nc_pid=$!
	wait_listening 5010 10
	meet roce-line-1
	wait $nc_pid
	meet roce-line-2
	check "TCP: this side's QP numbers to $PEER_IP port 5011" \
		sh -c "echo '$own' | timeout 20 nc -w 10 $PEER_IP 5011"
else
	timeout 60 nc -l -p 5011 </dev/null >/tmp/roce-peer 2>&1 &
	nc_pid=$!
	meet roce-line-1
	check "TCP: this side's QP numbers to $PEER_IP port 5010" \
		sh -c "echo '$own' | timeout 20 nc -w 10 $PEER_IP 5010"
	wait_listening 5011 10
	meet roce-line-2
	wait $nc_pid
fi
check_output "the peer's QP numbers arrived" '^[0-9]+ [0-9]+$' cat /tmp/roce-peer
peer_mac=52:54:00:23:00:0$((2 - VM_INDEX))
meet roce-go
mark=$(module_lines ib_c_roce | wc -l)
check "ib_c_roce: exchange with the other VM" \
	sh -c "echo \"$(cat /tmp/roce-peer) $PEER_IP $peer_mac\" > /sys/module/ib_c_roce/parameters/peer"
expect_lines "ib_c_roce: a UD datagram and an RC message each way between the two VMs' rxe0, as on C" \
	ib_c_roce "$mark" "ib_c_roce: peer: ud send posted 0, rc connected and send posted 0
ib_c_roce: peer: ud send 1 status 0, rc send 1 status 0
ib_c_roce: peer: ud receive 1 status 0 len 552, the peer's bytes 1
ib_c_roce: peer: rc receive 1 status 0 len 512, the peer's bytes 1"
meet roce-done

# across <name> <server VM> <tool and args...>: the tool's server on VM <server VM> (listening
# on TCP port 18515, the pingpong's and perftest's), its client on the other VM, which names
# the server's address; both must exit 0. The output is recorded in the log.
ACROSS=0
across() {
	ACROSS=$((ACROSS + 1))
	_name=$1
	_server=$2
	shift 2
	if [ "$VM_INDEX" = "$_server" ]; then
		_role=server
		timeout 120 "$@" >/tmp/across.out 2>&1 &
		_pid=$!
		wait_listening 18515 30
		meet "across-$ACROSS-listening"
		wait $_pid
		_rc=$?
	else
		_role=client
		meet "across-$ACROSS-listening"
		timeout 120 "$@" "$PEER_IP" >/tmp/across.out 2>&1
		_rc=$?
	fi
	meet "across-$ACROSS-done"
	[ $_rc = 0 ]
	ktap_result $? "$_name: the $_role exits 0" "exit $_rc: $(cat /tmp/across.out)"
	sed 's/^/#   /' /tmp/across.out
}
res_before=$(rdma res show rxe0)
for s in 0 1; do
	across "ibv_rc_pingpong over rxe0, VM $s the server: 100 x 4 KiB each way, checked" $s \
		ibv_rc_pingpong -d rxe0 -g 1 -n 100 -s 4096 -c
	check_output "ibv_rc_pingpong over rxe0, VM $s the server: 819200 bytes moved" \
		'^819200 bytes in ' cat /tmp/across.out
done
for s in 0 1; do
	across "ib_write_bw over rxe0, VM $s the server: 100 RDMA writes of 64 KiB" $s \
		ib_write_bw -d rxe0 -x 1 -s 65536 -n 100 -F
	if [ "$VM_INDEX" != "$s" ]; then
		check_output "ib_write_bw over rxe0, VM $s the server: the client's result row" \
			'^ *65536 +100 +[0-9.]+' cat /tmp/across.out
	fi
done
same "rdma res show rxe0: the user objects are gone" "$res_before" "$(rdma res show rxe0)"

check "insmod ib_cm, iw_cm, rdma_cm, rdma_ucm (C's; configfs first)" \
	sh -c "{ [ -d /sys/module/configfs ] || insmod $stack_dir/configfs.ko; } && insmod $stack_dir/ib_cm.ko && insmod $stack_dir/iw_cm.ko && insmod $stack_dir/rdma_cm.ko && insmod $stack_dir/rdma_ucm.ko"
OWN=10.23.0.$N
# cm_waiting TOOL: prints "listening" when a thread of a TOOL process waits for rdma_cm events
# (in C's rdma_ucm, the same on both stacks).
cm_waiting() {
	for p in $(pidof "$1"); do
		for t in /proc/$p/task/*; do cat $t/wchan; echo; done
	done | grep -q '^ucma_get_event$' && echo listening
}
# cm_pair N SERVER_VM WHAT PATTERN SERVER CLIENT: SERVER runs in VM SERVER_VM; once it waits
# for connections, CLIENT runs once in the other VM; both outputs must match PATTERN and both
# exit 0.
cm_pair() {
	if [ "$VM_INDEX" = "$2" ]; then
		timeout 90 sh -c "$5" >/tmp/cm-server 2>&1 &
		_pid=$!
		wait_for "$3: the server listens" 20 '^listening$' cm_waiting "${5%% *}"
		meet "cm-$1"
		wait "$_pid"
		_rc=$?
		check_output "$3: the server on $OWN (exit $_rc)" "$4" sh -c "cat /tmp/cm-server; [ $_rc = 0 ]"
	else
		meet "cm-$1"
		check_output "$3: the client to $PEER_IP" "$4" timeout 40 sh -c "$6"
	fi
	meet "cm-done-$1"
}
for s in 0 1; do
	cm_pair rping-$s $s "rping -V over rxe0, server on VM $s: 10 pings, data verified" 'rdma-ping-9: ' \
		"rping -s -a $OWN -p 7174 -C 10 -S 64 -v -V" "rping -c -a $PEER_IP -p 7174 -C 10 -S 64 -v -V"
done
for s in 0 1; do
	cm_pair write-bw-$s $s "ib_write_bw -R over rxe0, server on VM $s" '^ *65536 +100 ' \
		"ib_write_bw -R -d rxe0 -x 1 -p 18600 -s 65536 -n 100 -F" \
		"ib_write_bw -R -d rxe0 -x 1 -p 18600 -s 65536 -n 100 -F $PEER_IP"
done
for s in 0 1; do
	cm_pair ucmatose-$s $s "ucmatose over rxe0, server on VM $s: 2 connections, 10 messages each" \
		'test complete' "ucmatose -b $OWN -c 2 -C 10" "ucmatose -s $PEER_IP -c 2 -C 10"
done
for s in 0 1; do
	cm_pair udaddy-$s $s "udaddy over rxe0, server on VM $s: 2 UD endpoints, 10 datagrams each" \
		'test complete' "udaddy -b $OWN -c 2 -C 10" "udaddy -s $PEER_IP -c 2 -C 10"
done
# cmtime_pair DEV: cmtime between the VMs over DEV, each VM the server once. Its server serves
# until it is stopped: the client's table is checked, and that the server was still serving.
cmtime_pair() {
	for s in 0 1; do
		if [ "$VM_INDEX" = "$s" ]; then
			cmtime -b $OWN -c 4 >/tmp/cm-server 2>&1 &
			cmt=$!
			wait_for "cmtime over $1, server on VM $s: the server listens" 20 '^listening$' cm_waiting cmtime
			meet "cmt-$1-$s"
			meet "cmt-done-$1-$s"
			check "cmtime over $1, server on VM $s: still serving at the end" kill $cmt
			wait $cmt
		else
			meet "cmt-$1-$s"
			check_output "cmtime over $1, server on VM $s: the client's 4 connections, each step timed" \
				'^disconnect +: +[0-9.]+' timeout 40 cmtime -s $PEER_IP -c 4
			meet "cmt-done-$1-$s"
		fi
	done
}
cmtime_pair rxe0
# NVMe over RDMA on rxe0 (C's nvmet-rdma and nvme-rdma, the same files on both stacks): each VM
# exports a memory-backed null_blk namespace through nvmet's configfs and, at the same time,
# connects to the other's through /dev/nvme-fabrics (what `nvme connect -t rdma` writes), writes
# 64 MiB of random data to the namespace with direct I/O, reads it back and compares, and
# disconnects. The host's I/O goes through rdma_cm, the CQ pool and fast-registration MRs
# (REG_MR, local and remote invalidation); the target's through the CQ pool and rdma_rw (RDMA
# READ and WRITE of the host's buffers). The exports stay until rxe0 is deleted under them
# (below): nvmet-rdma's listener then goes with the device, and the configuration is taken down
# after. (Taken down first, C's nvmet reports a lockdep cycle on both stacks: the port's unlink
# destroys the listener under `nvmet_config_sem`, which an I/O queue's connect took under a
# connection's `handler_mutex`.)
NQN=nqn.2026-12.io.rdma-rs:rxe0-$N
PEER_NQN=nqn.2026-12.io.rdma-rs:rxe0-$((3 - N))
# The data is 64 MiB from /dev/urandom, compared by MD5 (cmp takes three times as long under TCG).
nvme_io() {
	head -c 67108864 /dev/urandom >/tmp/nvme-pattern || return 1
	_sum=$(md5sum </tmp/nvme-pattern)
	dd if=/tmp/nvme-pattern of=/dev/nvme0n1 bs=1M count=64 oflag=direct 2>&1 || return 1
	rm -f /tmp/nvme-pattern
	dd if=/dev/nvme0n1 of=/tmp/nvme-back bs=1M count=64 iflag=direct 2>&1 || return 1
	[ "$(md5sum </tmp/nvme-back)" = "$_sum" ] && echo "64 MiB read back equal"
	_rc=$?
	rm -f /tmp/nvme-back
	return $_rc
}
check "NVMe/RDMA: nvmet-rdma exports a null_blk namespace on $OWN:4420" nvme_target_up $NQN $OWN
meet nvme-up
check "NVMe/RDMA: modprobe nvme-rdma" modprobe nvme-rdma
check "NVMe/RDMA: connect to the other VM's namespace ($PEER_IP:4420) over rxe0" \
	sh -c "echo transport=rdma,traddr=$PEER_IP,trsvcid=4420,nqn=$PEER_NQN >/dev/nvme-fabrics"
wait_for "NVMe/RDMA: the namespace appears" 20 'nvme0n1' ls /sys/block
check_output "NVMe/RDMA: 64 MiB of random data written to the other VM's namespace, read back and compared" \
	'^64 MiB read back equal$' nvme_io
check "NVMe/RDMA: disconnect" sh -c 'echo 1 >/sys/class/nvme/nvme0/delete_controller'
check "NVMe/RDMA: nvme-rdma unloads" rmmod nvme_rdma nvme_fabrics
meet nvme-done
same "sysfs: rxe0's port files (ib_cm's counter groups among them, ib_cm loaded)" \
	"cap_mask cm_rx_duplicates cm_rx_msgs cm_tx_msgs cm_tx_retries counters gid_attrs gids hw_counters lid lid_mask_count link_layer phys_state pkeys rate sm_lid sm_sl state" \
	"$(ls $SYS/ports/1 | tr '\n' ' ' | sed 's/ $//')"
same "sysfs: rxe0's PerfMgmt counters (the driver's process_mad)" \
	"VL15_dropped excessive_buffer_overrun_errors link_downed link_error_recovery local_link_integrity_errors multicast_rcv_packets multicast_xmit_packets port_rcv_constraint_errors port_rcv_data port_rcv_errors port_rcv_packets port_rcv_remote_physical_errors port_rcv_switch_relay_errors port_xmit_constraint_errors port_xmit_data port_xmit_discards port_xmit_packets port_xmit_wait symbol_error unicast_rcv_packets unicast_xmit_packets" \
	"$(ls $SYS/ports/1/counters | tr '\n' ' ' | sed 's/ $//')"
check "sysfs: every PerfMgmt counter reads" sh -c "cat $SYS/ports/1/counters/* >/dev/null"
for f in $SYS/ports/1/counters/*; do printf '#   %s=%s\n' "${f##*/}" "$(cat $f 2>&1)"; done

# rxe0 goes while ib_c_roce holds its objects: the consumer's remove destroys them first.
mark=$(module_lines ib_c_roce | wc -l)
check "rdma link delete rxe0 under ib_c_roce" rdma link delete rxe0
expect_lines "ib_c_roce: removed, every destroy succeeded" ib_c_roce "$mark" "ib_c_roce: remove rxe0: destroys 0 0 0 0 0"
check "rmmod ib_c_roce" rmmod ib_c_roce
check "NVMe/RDMA: the export is taken down after rxe0 went, nvmet-rdma unloads" nvme_target_down $NQN
check "rmmod rdma_ucm, rdma_cm, iw_cm, ib_cm" rmmod rdma_ucm rdma_cm iw_cm ib_cm
check "rxe0 is gone" sh -c '! rdma dev show rxe0 2>/dev/null'
check "rdma link delete of an InfiniBand device: refused" sh -c '! rdma link delete mlx5_0 2>/dev/null'
check "rdma link add with an unknown type: refused" sh -c '! rdma link add foo0 type nosuch netdev eth0 2>/dev/null'
check "rdma link add on a missing net device: refused" sh -c '! rdma link add rxe9 type rxe netdev nosuch0 2>/dev/null'
check "rdma link add rxe1 type rxe netdev eth0" rdma link add rxe1 type rxe netdev eth0
check "a second rxe on eth0: refused (the driver's EEXIST)" sh -c '! rdma link add rxe2 type rxe netdev eth0 2>/dev/null'
check "rmmod rdma_rxe with rxe1 registered: refused (its QP1's socket holds the module)" \
	sh -c '! rmmod rdma_rxe 2>/dev/null'
check "rdma link delete rxe1" rdma link delete rxe1
check "rmmod rdma_rxe (ib_unregister_driver, no device left)" rmmod rdma_rxe
check "rxe1 is gone" sh -c '! rdma dev show rxe1 2>/dev/null'

# soft-iWARP: the driver's own GID, the port's state from the NIC.
check "rdma link add siw0 type siw netdev eth0" rdma link add siw0 type siw netdev eth0
check_output "rdma link show siw0/1" \
	'^link siw0/1 state ACTIVE physical_state LINK_UP netdev eth0 $' rdma link show siw0/1
same "rdma -d dev show siw0: an RNIC, GUIDs from the MAC" \
	"1: siw0: node_type rnic node_guid 5054:00ff:fe23:000$N sys_image_guid 5054:00ff:fe23:000$N adaptive-moderation off 
    caps: <MEM_MGT_EXTENSIONS>" "$(rdma -d dev show siw0 | sed 's/^[0-9]*:/1:/')"
SYS=/sys/class/infiniband/siw0
SIW_EXPECTED="node_type=4: RNIC
node_guid=5054:00ff:fe23:000$N
sys_image_guid=5054:00ff:fe23:000$N
node_desc=Software iWARP stack
fw_ver=
ports/1/state=4: ACTIVE
ports/1/phys_state=5: LinkUp
ports/1/link_layer=Ethernet
ports/1/rate=2.5 Gb/sec (1X SDR)
ports/1/lid=0x0
ports/1/cap_mask=0x00090000
ports/1/gids/0=5254:0023:000$N:0000:0000:0000:0000:0000
ports/1/gid_attrs/types/0=IB/RoCE v1
ports/1/gid_attrs/ndevs/0=eth0"
seen=$(printf '%s\n' "$SIW_EXPECTED" | while IFS='=' read -r f _; do
	printf '%s=%s\n' "$f" "$(cat "$SYS/$f" 2>/dev/null)"
done)
same "sysfs: siw0's attributes, port and its one GID (the MAC, on eth0)" "$SIW_EXPECTED" "$seen"
same "sysfs: siw0's port files (no counters)" \
	"cap_mask gid_attrs gids lid lid_mask_count link_layer phys_state rate sm_lid sm_sl state" \
	"$(ls $SYS/ports/1 | tr '\n' ' ' | sed 's/ $//')"
check "rdma stat show link siw0/1: refused (no counters)" sh -c '! rdma stat show link siw0/1 2>/dev/null'
# User objects on siw0 (libsiw through ib_uverbs on the Rust core: its CQ and QP queues are
# mapped through the context's mmap entries, its MR pins user memory): ibv_rc_pingpong's
# server makes its PD, MR, CQ and QP and waits for its peer's TCP connection (an iWARP QP is
# connected by iw_cm, not by the pingpong's modifies, so it goes no further on either stack);
# stopped there, its objects go, and `rdma res` counts what it counted before. Then rping,
# ib_write_bw -R, ucmatose and cmtime over siw0 with C's rdma_cm and iw_cm, each way.
siw_res=$(rdma res show siw0)
timeout 20 ibv_rc_pingpong -d siw0 -g 0 >/tmp/siw-pp 2>&1 &
pp=$!
wait_listening 18515 15
same "rdma res show siw0 while ibv_rc_pingpong waits for its peer: its context, PD, MR, CQ and QP" \
	"1: siw0: pd 1 cq 1 qp 1 cm_id 0 mr 1 ctx 1 srq 0 comp_cntr 0 " "$(rdma res show siw0 | sed 's/^[0-9]*:/1:/')"
kill $pp 2>/dev/null
wait $pp
same "rdma res show siw0: the user objects are gone" "$siw_res" "$(rdma res show siw0)"
# rdma_cm on siw0 (iWARP): iw_cm's IDs go to siw's own connection ops (the face hands them over
# to the driver's structure), the connection is siw's TCP stream between the VMs: rping with its
# data verified, ib_write_bw -R, ucmatose and cmtime, each way.
check "insmod ib_cm, iw_cm, rdma_cm, rdma_ucm (again, for siw0)" \
	sh -c "insmod $stack_dir/ib_cm.ko && insmod $stack_dir/iw_cm.ko && insmod $stack_dir/rdma_cm.ko && insmod $stack_dir/rdma_ucm.ko"
for s in 0 1; do
	cm_pair rping-siw-$s $s "rping -V over siw0, server on VM $s: 10 pings, data verified" 'rdma-ping-9: ' \
		"rping -s -a $OWN -p 7175 -C 10 -S 64 -v -V" "rping -c -a $PEER_IP -p 7175 -C 10 -S 64 -v -V"
	# 20 writes of 64 KiB over siw, not 100: once in about six runs under make test's load
	# (2026-12-01), 100 writes from VM 0 ended with the C VM's siw finding a DDP segment one
	# FPDU ahead of the one it expected ("write off", then a TERMINATE): siw's own TCP framing,
	# the same C code on both sides, which the core does not touch; not reproduced alone.
	cm_pair write-bw-siw-$s $s "ib_write_bw -R over siw0, server on VM $s" '^ *65536 +20 ' \
		"ib_write_bw -R -d siw0 -p 18601 -s 65536 -n 20 -F" \
		"ib_write_bw -R -d siw0 -p 18601 -s 65536 -n 20 -F $PEER_IP"
	cm_pair ucmatose-siw-$s $s "ucmatose over siw0, server on VM $s: 2 connections, 10 messages each" \
		'test complete' "ucmatose -b $OWN -c 2 -C 10" "ucmatose -s $PEER_IP -c 2 -C 10"
done
cmtime_pair siw0
check "rmmod rdma_ucm, rdma_cm, iw_cm, ib_cm" rmmod rdma_ucm rdma_cm iw_cm ib_cm
check "rdma link delete siw0" rdma link delete siw0
check "rmmod siw" rmmod siw
meet done
check "unload the stack" unload_stack
[ "$STACK" = rust ] && kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

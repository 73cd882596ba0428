# mad-tools: the diagnostics of rdma-core (infiniband-diags 44) on the MAD layer and ib_umad,
# with the same output on both stacks (issue 14). The expected texts below are what the C stack
# prints on the emulated ConnectX (captured from it; the Rust stack must print them byte for byte):
#   - ibstat and ibstatus (sysfs only), the infiniband_mad class (abi_version 5, umad0 and issm0
#     with ibdev, port and their device numbers 231:0 and 231:64, /dev nodes mode 0600);
#   - perfquery and perfquery -x of the local port (LID-routed PerfMgmt Gets on QP1 to the own LID,
#     looped back by the device, answered by the driver's process_mad through MAD_IFC), before and
#     after 100 RC ping-pongs of 4096 bytes (the data and packet counters grow identically);
#   - smpquery nodeinfo, portinfo, pkeys and nodedesc to the own LID (SMPs on QP0) and
#     smpquery -D nodeinfo 0 (a directed-route SMP the port answers itself, never sent);
#   - the port's counters/ directory (C's extended PMA table) and its values, through the same
#     process_mad, before and after the traffic;
#   - the stack unloads; dmesg is clean; kmemleak on rust (C 7.3 leaks the task of a process
#     that registered MRs, as uverbs-devices notes).
# hw_counters/ and `rdma stat show` are in hw-counters.sh.
# stacks: rust c
# timeout: 400

expect_ibstat() {
	cat <<'EOF'
CA 'mlx5_0'
	CA type: MT4119
	Number of ports: 1
	Firmware version: 16.35.2000
	Hardware version: 0
	Node GUID: 0x0002c90300000100
	System image GUID: 0x0002c90300000100
	Port 1:
		State: Active
		Physical state: LinkUp
		Rate: 100
		Base lid: 6
		LMC: 0
		SM lid: 1
		Capability mask: 0x2651e848
		Port GUID: 0x0002c90300000101
		Link layer: InfiniBand
EOF
}

expect_ibstatus() {
	cat <<'EOF'
Infiniband device 'mlx5_0' port 1 status:
	default gid:	 fe80:0000:0000:0000:0002:c903:0000:0101
	base lid:	 0x6
	sm lid:		 0x1
	state:		 4: ACTIVE
	phys state:	 5: LinkUp
	rate:		 100 Gb/sec (4X EDR)
	link_layer:	 InfiniBand

EOF
}

expect_class() {
	cat <<'EOF'
abi_version
issm0
umad0
EOF
}

expect_class_files() {
	cat <<'EOF'
abi_version:5
umad0/ibdev:mlx5_0
umad0/port:1
umad0/dev:231:0
issm0/ibdev:mlx5_0
issm0/port:1
issm0/dev:231:64
EOF
}

expect_nodes() {
	cat <<'EOF'
/dev/infiniband/umad0 character special file e7:0 600
/dev/infiniband/issm0 character special file e7:40 600
EOF
}

expect_perfquery_0() {
	cat <<'EOF'
# Port counters: Lid 6 port 1 (CapMask: 0x200)
PortSelect:......................1
CounterSelect:...................0x0000
SymbolErrorCounter:..............0
LinkErrorRecoveryCounter:........0
LinkDownedCounter:...............0
PortRcvErrors:...................0
PortRcvRemotePhysicalErrors:.....0
PortRcvSwitchRelayErrors:........0
PortXmitDiscards:................0
PortXmitConstraintErrors:........0
PortRcvConstraintErrors:.........0
CounterSelect2:..................0x00
LocalLinkIntegrityErrors:........0
ExcessiveBufferOverrunErrors:....0
QP1Dropped:......................0
VL15Dropped:.....................0
PortXmitData:....................192
PortRcvData:.....................192
PortXmitPkts:....................3
PortRcvPkts:.....................3
PortXmitWait:....................0
EOF
}

expect_perfquery_x_0() {
	cat <<'EOF'
# Port extended counters: Lid 6 port 1 (CapMask: 0x200 CapMask2: 0x0000000)
PortSelect:......................1
CounterSelect:...................0x0000
PortXmitData:....................448
PortRcvData:.....................448
PortXmitPkts:....................7
PortRcvPkts:.....................7
PortUnicastXmitPkts:.............7
PortUnicastRcvPkts:..............7
PortMulticastXmitPkts:...........0
PortMulticastRcvPkts:............0
EOF
}

expect_nodeinfo() {
	cat <<'EOF'
# Node info: Lid 6
BaseVers:........................1
ClassVers:.......................1
NodeType:........................Channel Adapter
NumPorts:........................1
SystemGuid:......................0x0002c90300000100
Guid:............................0x0002c90300000100
PortGuid:........................0x0002c90300000101
PartCap:.........................128
DevId:...........................0x1017
Revision:........................0x00000000
LocalPort:.......................1
VendorId:........................0x0002c9
EOF
}

expect_portinfo() {
	cat <<'EOF'
# Port info: Lid 6 port 0
Mkey:............................<not displayed>
GidPrefix:.......................0xfe80000000000000
Lid:.............................6
SMLid:...........................1
CapMask:.........................0x2651e848
				IsTrapSupported
				IsSLMappingSupported
				IsSystemImageGUIDsupported
				IsExtendedSpeedsSupported
				IsCapabilityMask2Supported
				IsCommunicatonManagementSupported
				IsVendorClassSupported
				IsCapabilityMaskNoticeSupported
				IsClientRegistrationSupported
				IsOtherLocalChangesNoticeSupported
				IsMcastPkeyTrapSuppressionSupported
DiagCode:........................0x0000
MkeyLeasePeriod:.................0
LocalPort:.......................1
LinkWidthEnabled:................4X
LinkWidthSupported:..............1X or 4X
LinkWidthActive:.................4X
LinkSpeedSupported:..............2.5 Gbps or 5.0 Gbps or 10.0 Gbps
LinkState:.......................Active
PhysLinkState:...................LinkUp
LinkDownDefState:................Polling
ProtectBits:.....................0
LMC:.............................0
LinkSpeedActive:.................2.5 Gbps
LinkSpeedEnabled:................2.5 Gbps or 5.0 Gbps or 10.0 Gbps
NeighborMTU:.....................4096
SMSL:............................0
VLCap:...........................VL0-7
InitType:........................0x00
VLHighLimit:.....................16
VLArbHighCap:....................0
VLArbLowCap:.....................0
InitReply:.......................0x00
MtuCap:..........................4096
VLStallCount:....................0
HoqLife:.........................0
OperVLs:.........................VL0-7
PartEnforceInb:..................0
PartEnforceOutb:.................0
FilterRawInb:....................0
FilterRawOutb:...................0
MkeyViolations:..................0
PkeyViolations:..................0
QkeyViolations:..................0
GuidCap:.........................8
ClientReregister:................0
McastPkeyTrapSuppressionEnabled:.0
SubnetTimeout:...................18
RespTimeVal:.....................0
LocalPhysErr:....................0
OverrunErr:......................0
MaxCreditHint:...................0
RoundTrip:.......................0
CapabilityMask2:.................0x0
LinkSpeedExtActive:..............25.78125 Gbps
LinkSpeedExtSupported:...........14.0625 Gbps or 25.78125 Gbps
LinkSpeedExtEnabled:.............25.78125 Gbps
EOF
}

expect_pkeys() {
	cat <<'EOF'
   0: 0xffff 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
   8: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
  16: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
  24: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
  32: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
  40: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
  48: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
  56: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
  64: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
  72: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
  80: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
  88: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
  96: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
 104: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
 112: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
 120: 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000 0x0000
128 pkeys capacity for this port
EOF
}

expect_nodedesc() {
	cat <<'EOF'
Node Description:.MT4119 ConnectX5   Mellanox Technologies
EOF
}

expect_dr_nodeinfo() {
	cat <<'EOF'
# Node info: DR path slid 65535; dlid 65535; 0
BaseVers:........................1
ClassVers:.......................1
NodeType:........................Channel Adapter
NumPorts:........................1
SystemGuid:......................0x0002c90300000100
Guid:............................0x0002c90300000100
PortGuid:........................0x0002c90300000101
PartCap:.........................128
DevId:...........................0x1017
Revision:........................0x00000000
LocalPort:.......................1
VendorId:........................0x0002c9
EOF
}

expect_counters_ls() {
	cat <<'EOF'
VL15_dropped
excessive_buffer_overrun_errors
link_downed
link_error_recovery
local_link_integrity_errors
multicast_rcv_packets
multicast_xmit_packets
port_rcv_constraint_errors
port_rcv_data
port_rcv_errors
port_rcv_packets
port_rcv_remote_physical_errors
port_rcv_switch_relay_errors
port_xmit_constraint_errors
port_xmit_data
port_xmit_discards
port_xmit_packets
port_xmit_wait
symbol_error
unicast_rcv_packets
unicast_xmit_packets
EOF
}

expect_counters_0() {
	cat <<'EOF'
VL15_dropped:0
excessive_buffer_overrun_errors:0
link_downed:0
link_error_recovery:0
local_link_integrity_errors:0
multicast_rcv_packets:0
multicast_xmit_packets:0
port_rcv_constraint_errors:0
port_rcv_data:1664
port_rcv_errors:0
port_rcv_packets:26
port_rcv_remote_physical_errors:0
port_rcv_switch_relay_errors:0
port_xmit_constraint_errors:0
port_xmit_data:1664
port_xmit_discards:0
port_xmit_packets:26
port_xmit_wait:0
symbol_error:0
unicast_rcv_packets:26
unicast_xmit_packets:26
EOF
}

expect_perfquery_1() {
	cat <<'EOF'
# Port counters: Lid 6 port 1 (CapMask: 0x200)
PortSelect:......................1
CounterSelect:...................0x0000
SymbolErrorCounter:..............0
LinkErrorRecoveryCounter:........0
LinkDownedCounter:...............0
PortRcvErrors:...................0
PortRcvRemotePhysicalErrors:.....0
PortRcvSwitchRelayErrors:........0
PortXmitDiscards:................0
PortXmitConstraintErrors:........0
PortRcvConstraintErrors:.........0
CounterSelect2:..................0x00
LocalLinkIntegrityErrors:........0
ExcessiveBufferOverrunErrors:....0
QP1Dropped:......................0
VL15Dropped:.....................0
PortXmitData:....................206656
PortRcvData:.....................206656
PortXmitPkts:....................429
PortRcvPkts:.....................429
PortXmitWait:....................0
EOF
}

expect_perfquery_x_1() {
	cat <<'EOF'
# Port extended counters: Lid 6 port 1 (CapMask: 0x200 CapMask2: 0x0000000)
PortSelect:......................1
CounterSelect:...................0x0000
PortXmitData:....................206912
PortRcvData:.....................206912
PortXmitPkts:....................433
PortRcvPkts:.....................433
PortUnicastXmitPkts:.............433
PortUnicastRcvPkts:..............433
PortMulticastXmitPkts:...........0
PortMulticastRcvPkts:............0
EOF
}

expect_counters_1() {
	cat <<'EOF'
VL15_dropped:0
excessive_buffer_overrun_errors:0
link_downed:0
link_error_recovery:0
local_link_integrity_errors:0
multicast_rcv_packets:0
multicast_xmit_packets:0
port_rcv_constraint_errors:0
port_rcv_data:206976
port_rcv_errors:0
port_rcv_packets:434
port_rcv_remote_physical_errors:0
port_rcv_switch_relay_errors:0
port_xmit_constraint_errors:0
port_xmit_data:206976
port_xmit_discards:0
port_xmit_packets:434
port_xmit_wait:0
symbol_error:0
unicast_rcv_packets:434
unicast_xmit_packets:434
EOF
}

# same <name> <key> <command...>: the command succeeds and prints exactly expect_<key>'s text.
same() {
	_name=$1
	_key=$2
	shift 2
	_out=$("$@" 2>&1)
	_rc=$?
	_exp=$("expect_$_key")
	if [ $_rc = 0 ] && [ "$_out" = "$_exp" ]; then
		ktap_result 0 "$_name"
	else
		printf '%s\n' "$_exp" >/tmp/expected
		printf '%s\n' "$_out" >/tmp/got
		ktap_result 1 "$_name" "exit $_rc; diff expected got:
$(diff /tmp/expected /tmp/got)"
	fi
}

check "load the stack" load_stack
wait_for "mlx5_0's port is ACTIVE" 30 '^4: ACTIVE$' cat /sys/class/infiniband/mlx5_0/ports/1/state
lid=$(($(cat /sys/class/infiniband/mlx5_0/ports/1/lid)))
counters=/sys/class/infiniband/mlx5_0/ports/1/counters
same "ibstat" ibstat ibstat
same "ibstatus" ibstatus ibstatus
same "the infiniband_mad class holds umad0 and issm0" class ls /sys/class/infiniband_mad
same "abi_version 5; umad0 and issm0 serve mlx5_0 port 1 as 231:0 and 231:64" class_files \
	sh -c 'cd /sys/class/infiniband_mad && grep . abi_version umad0/ibdev umad0/port umad0/dev issm0/ibdev issm0/port issm0/dev'
same "/dev/infiniband/umad0 and issm0 are those character devices, mode 0600" nodes \
	stat -c '%n %F %t:%T %a' /dev/infiniband/umad0 /dev/infiniband/issm0
check "umad0 sits below mlx5_0's parent (the PCI function)" \
	test "$(readlink -f /sys/class/infiniband_mad/umad0/device)" = "$(readlink -f /sys/class/infiniband/mlx5_0/device)"
same "perfquery: the port's counters (PortCounters)" perfquery_0 perfquery
same "perfquery -x: the extended counters" perfquery_x_0 perfquery -x
same "smpquery nodeinfo to the own LID ($lid)" nodeinfo smpquery nodeinfo $lid
same "smpquery portinfo" portinfo smpquery portinfo $lid
same "smpquery pkeys" pkeys smpquery pkeys $lid
same "smpquery nodedesc" nodedesc smpquery nodedesc $lid
same "smpquery -D nodeinfo 0: a directed-route SMP answered locally" dr_nodeinfo smpquery -D nodeinfo 0
same "counters/ has C's extended table" counters_ls ls $counters
same "counters/ values" counters_0 sh -c "cd $counters && grep . *"
loopback_pair 150 120 ibv_rc_pingpong -d mlx5_0 -g 0 -n 100 -s 4096
[ $LP_CLIENT_RC = 0 ] && [ $LP_SERVER_RC = 0 ]
ktap_result $? "traffic: 100 RC ping-pongs of 4096 bytes" "$LP_OUT"
same "perfquery after the traffic" perfquery_1 perfquery
same "perfquery -x after the traffic" perfquery_x_1 perfquery -x
same "counters/ values after the traffic" counters_1 sh -c "cd $counters && grep . *"
check "the stack unloads" unload_stack
check "nothing of it stays loaded" sh -c '! grep -E "^(ib_core|ib_umad|mlx5_core|mlx5_ib) " /proc/modules'
# C 7.3 leaks the task of a process that registered MRs (ibv_rc_pingpong here; see
# uverbs-devices), sometimes found by the scan: kmemleak on rust only.
if [ "$STACK" = rust ]; then
	kmemleak_clean "rust: kmemleak finds no leak"
fi
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# mad-2vm: management datagrams over the wire between the two stacks. VM 0 runs the Rust stack,
# VM 1 the C stack, each with its own cx-model, the models linked by the wire (LIDs 6 and 10).
# Each side asks the other with rdma-core's tools, so each stack's MAD layer sends requests to a
# remote port and answers the other's (the remote driver's process_mad through MAD_IFC, the reply
# sent back by the port's agent):
#   - perfquery of the peer's LID: a PerfMgmt Get on QP1 to the other host, answered there;
#   - smpquery nodeinfo and portinfo of the peer's LID: SMPs on QP0 to the other host; the node
#     is not this one (another GUID), its port has the peer's LID;
#   - the local port's counters count the MADs both ways; both unload cleanly.
# vms: 2
# vm-stacks: rust c
# timeout: 400

if [ "$VM_INDEX" = 0 ]; then
	lid=6
	peer_lid=10
else
	lid=10
	peer_lid=6
fi

meet() {
	_answer=$(barrier "$1") || ktap_result 1 "barrier $1: meet the other VM" "$_answer"
}

check "load the stack ($STACK)" load_stack
wait_for "mlx5_0 port 1 ACTIVE with LID $lid" 60 "lid $lid sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP" \
	sh -c "rdma link show mlx5_0/1"
wait_for "umad0 serves mlx5_0" 30 '^mlx5_0$' cat /sys/class/infiniband_mad/umad0/ibdev
meet loaded
own_guid=$(sed 's/://g' /sys/class/infiniband/mlx5_0/node_guid)
check_output "perfquery of the peer's LID $peer_lid: its port counters" \
	"^# Port counters: Lid $peer_lid port 1 \\(CapMask: 0x200\\)\$" perfquery $peer_lid 1
check_output "perfquery -x of the peer: the extended counters" \
	"^# Port extended counters: Lid $peer_lid port 1 \\(CapMask: 0x200 CapMask2: 0x0000000\\)\$" perfquery -x $peer_lid 1
smpquery nodeinfo $peer_lid >/tmp/nodeinfo 2>&1
check_output "smpquery nodeinfo of the peer: a channel adapter with one port" \
	'^NodeType:\.+Channel Adapter;NumPorts:\.+1;' sh -c "sed -n '/^NodeType/,/^NumPorts/p' /tmp/nodeinfo | tr '\n' ';'"
check_output "answered by the peer: its LocalPort 1, its device id 0x1017" \
	'^DevId:\.+0x1017;Revision:\.+0x00000000;LocalPort:\.+1;' sh -c "sed -n '/^DevId/,/^LocalPort/p' /tmp/nodeinfo | tr '\n' ';'"
check "another node than this one (its GUID is not $own_guid)" \
	sh -c "grep -q '^Guid:' /tmp/nodeinfo && ! grep -qi '^Guid:\.*0x$own_guid\$' /tmp/nodeinfo"
check_output "smpquery portinfo of the peer: its port has LID $peer_lid" "^Lid:\\.+$peer_lid\$" smpquery portinfo $peer_lid
meet queried
check_output "the local port counted MADs both ways (counters/port_rcv_packets > 0)" '^[1-9][0-9]*$' \
	cat /sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_packets
check "the stack unloads" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# c-pingpong-2vm: rdma-core's pingpong examples between two VMs on the C stack, each VM with its
# own cx-model; the harness links the two models by a wire socket, so the RDMA traffic leaves one
# emulated HCA and arrives at the other. VM 0 runs the servers, VM 1 the clients. The tools
# exchange QP numbers, LIDs and GIDs over TCP (port 18515) on the guests' virtio-net link
# (10.23.0.1 and 10.23.0.2), which is checked first. The guests meet at host barriers: a client
# starts when its server listens.
# stacks: c
# vms: 2
# timeout: 600
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

PP_PORT=18515
if [ "$VM_INDEX" = 0 ]; then side=server; else side=client; fi

# pingpong <tag> <name> <tool> <args...>: VM 0 runs the server, VM 1 the client (net.sh's
# vm_pair); each side must report 1000 iterations.
pingpong() {
	_ptag=$1
	_pname=$2
	_ptool=$3
	shift 3
	vm_pair "$_ptag" 0 $PP_PORT '^1000 iters in' "$_pname" $_ptool -d mlx5_0 -g 0 "$@"
}

check "load the C stack" load_stack
check_output "port 1 is ACTIVE" '^4: ACTIVE$' cat /sys/class/infiniband/mlx5_0/ports/1/state
# This HCA's identity; the client sends it to the server, which checks that the two differ (each
# cx-model has its own GUID seed, from which it also derives the port LIDs).
guid=$(ibv_devinfo -v -d mlx5_0 | sed -n 's/^[[:space:]]*node_guid:[[:space:]]*//p')
lid=$(ibv_devinfo -v -d mlx5_0 | sed -n 's/^[[:space:]]*port_lid:[[:space:]]*//p')
check_output "mlx5_0: node GUID $guid, port 1 LID $lid" '^[0-9a-f:]{19} [0-9]+$' echo "$guid $lid"

# IP between the guests: ICMP both ways, then a line over TCP from the client to the server.
meet net-up
check_output "ping $PEER_IP: 3 of 3 answered" ' 0% packet loss' ping -c 3 -W 5 "$PEER_IP"
if [ $side = server ]; then
	timeout 30 nc -l -p 5000 </dev/null >/tmp/nc-in 2>&1 &
	nc_pid=$!
	wait_listening 5000 10
	meet tcp
	wait $nc_pid
	check_output "TCP: a line from $PEER_IP arrives on port 5000" '^hello from vm1 ' cat /tmp/nc-in
	read -r _ _ _ peer_guid peer_lid </tmp/nc-in
	[ -n "$peer_guid" ] && [ "$peer_guid" != "$guid" ] && [ "$peer_lid" != "$lid" ]
	ktap_result $? "the two HCAs differ: GUID $guid vs $peer_guid, LID $lid vs $peer_lid"
else
	meet tcp
	check "TCP: a line to $PEER_IP port 5000" \
		sh -c "echo hello from vm$VM_INDEX $guid $lid | timeout 20 nc -w 10 $PEER_IP 5000"
fi

pingpong rc "ibv_rc_pingpong: 1000 x 4096 bytes, validated" ibv_rc_pingpong -n 1000 -s 4096 -c
pingpong ud "ibv_ud_pingpong: 1000 x 4096 bytes, validated" ibv_ud_pingpong -n 1000 -s 4096 -c
pingpong srq "ibv_srq_pingpong: 1000 x 4096 bytes, validated" ibv_srq_pingpong -n 1000 -s 4096 -c
meet done
check "unload the C stack" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

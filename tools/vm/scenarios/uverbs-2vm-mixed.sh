# uverbs-2vm-mixed: rdma-core between a Rust VM and a C VM (issue 17): VM 0 loads the Rust stack,
# VM 1 the C stack, each on its own cx-model, the models linked by the wire. ibv_rc_pingpong,
# ibv_ud_pingpong (1000 validated exchanges each) and ib_write_bw (2000 x 64 KiB RDMA writes)
# run with the server on the Rust VM, then with the server on the C VM: every message leaves one
# stack's HCA and arrives at the other's. The tools exchange QP numbers and LIDs over TCP on the
# guests' virtio-net link, which is checked first; the guests meet at host barriers.
# vms: 2
# vm-stacks: rust c
# timeout: 700
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

PP_PORT=18515
BW_PORT=18516
ROW='^ *[0-9]+ +[0-9]+ +[0-9.]+'

check "load the stack" load_stack
if [ "$VM_INDEX" = 0 ]; then
	check "VM 0 runs the Rust stack" sh -c "[ $STACK = rust ]"
else
	check "VM 1 runs the C stack" sh -c "[ $STACK = c ]"
fi
wait_for "mlx5_0 port 1 is ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1
meet net-up
check_output "ping $PEER_IP: 3 of 3 answered" ' 0% packet loss' ping -c 3 -W 5 "$PEER_IP"

# <server VM> <its stack>: the three tools with that VM serving.
for server in 0 1; do
	if [ $server = 0 ]; then on="server on rust"; else on="server on c"; fi
	vm_pair rc$server $server $PP_PORT '^1000 iters in' "ibv_rc_pingpong ($on): 1000 x 4096 bytes, validated" \
		ibv_rc_pingpong -d mlx5_0 -n 1000 -s 4096 -c
	vm_pair ud$server $server $PP_PORT '^1000 iters in' "ibv_ud_pingpong ($on): 1000 x 2048 bytes, validated" \
		ibv_ud_pingpong -d mlx5_0 -n 1000 -s 2048 -c
	vm_pair bw$server $server $BW_PORT "$ROW" "ib_write_bw ($on): 2000 x 64 KiB RDMA writes" \
		ib_write_bw -d mlx5_0 -i 1 -p $BW_PORT -s 65536 -n 2000
done
meet done
check "unload the stack" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# c-abi-clients: a C module's ib_core clients on either stack (issue "ib_core's C ABI", step 2:
# docs/c-abi.md). tools/verbs-twin/ib_c_clients.ko is built once against the kernel tree's
# include/rdma/ib_verbs.h and loaded unchanged on both stacks: on C's ib_core it is the oracle,
# on the Rust core it links to the C ABI's exports (ib_register_client, ib_unregister_client,
# ib_set_client_data, ib_query_port) and reads the core's struct ib_device through C's inline
# functions. Three clients ("first", "second", and "refuser", whose add fails) print a line per
# callback; each step's lines must be the text below, the same on both stacks:
#   - insmod: the core's texts (ib_event_msg, ib_wc_status_msg, the GID type names both ways)
#     for every value and one past, rdma_addr_size* per family, rdma_node_get_transport per
#     node type, ib_modify_qp_is_ok's answers to probes around every set of attributes a
#     transition requires (a count and a hash per current state), ib_sg_to_pages on made-up
#     scatter lists (aligned, offset, gap, joined mid-page, list full); then add for mlx5_0 in
#     registration order, what C reads of the device (name, node type
#     and GUID, ports, parent and DMA device, rdma_cap_*/rdma_protocol_* of port 1, immutable
#     data, attributes, ib_query_port's answer and its EINVAL for a port past the last), the
#     client data set and read back through C's inline ib_get_client_data, what the core's
#     caches say (ib_get_cached_pkey, ib_find_cached_pkey, ib_get_cached_port_state); "first"
#     dispatches an SM change and a LID change on port 1 as a C driver would
#     (ib_dispatch_event) and its handler prints each, and it writes a message about mlx5_0
#     with ibdev_err, which must name the device as C's core does;
#   - the port going down and up (the model's control socket): "first"'s event handler
#     (ib_register_event_handler) gets each event with the port state the core's cache holds;
#   - rename (`rdma dev set ... name`): rename to the two clients whose add succeeded, with the
#     new name in dev_name and ib_device.name, and their data; none to "refuser";
#   - rmmod mlx5_ib: remove in reverse registration order, each with its own data; modprobe
#     again: add again, in order;
#   - rmmod ib_c_clients: remove from mlx5_0 as each client unregisters, none for "refuser";
# then the stack unloads; kmemleak (rust: the device's C structure and the clients' records
# freed), dmesg.
# stacks: rust c

# The C stack's lines (the oracle; recorded from it on the emulated ConnectX-5).
ADD_LINES=$(cat <<'EOF'
ib_c_clients: events: CQ error|QP fatal error|QP request error|QP access error|communication established|send queue drained|path migration successful|path migration error|device fatal error|port active|port error|LID change|P_key change|SM change|SRQ error|SRQ limit reached|last WQE reached|client reregister|GID changed|unrecognized event|device speed change|unrecognized event
ib_c_clients: wc statuses: success|local length error|local QP operation error|local EE context operation error|local protection error|WR flushed|memory bind operation error|bad response error|local access error|remote invalid request error|remote access error|remote operation error|transport retry counter exceeded|RNR retry counter exceeded|local RDD violation error|remote invalid RD request|operation aborted|invalid EE context number|invalid EE context state|fatal error|response timeout error|general error|unrecognized status
ib_c_clients: gid types: IB/RoCE v1|IB/RoCE v1|RoCE v2|Invalid GID type 0 2 2 -22 -22 -22 -22
ib_c_clients: address sizes: 2:16/16/16 10:28/28/28 27:48/0/48 1:0/0/0
ib_c_clients: transports: 0:0 1:0 2:0 3:0 4:1 5:2 6:3 7:4 8:0
ib_c_clients: qp transitions from state 0: 141 of 22869 probes allowed, hash 0x3e8c5f08
ib_c_clients: qp transitions from state 1: 494 of 22869 probes allowed, hash 0x08c45c0d
ib_c_clients: qp transitions from state 2: 266 of 22869 probes allowed, hash 0xea87d777
ib_c_clients: qp transitions from state 3: 417 of 22869 probes allowed, hash 0x69afaf3c
ib_c_clients: qp transitions from state 4: 595 of 22869 probes allowed, hash 0x8c5f9a12
ib_c_clients: qp transitions from state 5: 283 of 22869 probes allowed, hash 0x86503186
ib_c_clients: qp transitions from state 6: 176 of 22869 probes allowed, hash 0xb18fe1f7
ib_c_clients: sg to pages, aligned: 3, offset 0, iova 0x10000 length 16384, pages 0x10000 0x11000 0x30000 0x31000
ib_c_clients: sg to pages, first offset: 2, offset 0, iova 0x10064 length 12188, pages 0x10000 0x11000 0x12000
ib_c_clients: sg to pages, gap: 2, offset 0, iova 0x10000 length 6144, pages 0x10000 0x20000
ib_c_clients: sg to pages, joined mid-page: 3, offset 0, iova 0x10000 length 8192, pages 0x10000 0x11000
ib_c_clients: sg to pages, joined across pages: 2, offset 0, iova 0x10400 length 15360, pages 0x10000 0x11000 0x12000 0x13000
ib_c_clients: sg to pages, list full: 1, offset 0, iova 0x10000 length 8192, pages 0x10000 0x11000 0x20000
ib_c_clients: sg to pages, list full at once: -12, offset 0, iova 0x10000 length 0, pages none
ib_c_clients: sg to pages, list full, offset: 0, offset 512, iova 0x10200 length 0, pages none
ib_c_clients: sg to pages, 64k pages: 2, offset 0, iova 0x100000 length 165536, pages 0x100000 0x110000 0x120000
ib_c_clients: sg to pages, offset past the first: -22, offset 5000, iova 0x0 length 0, pages none
ib_c_clients: sg to pages, no entries: -22, offset 0, iova 0x0 length 0, pages none
ib_c_clients: first: add mlx5_0 (index order 1): node type 1, guid 0002c90300000100, ports 1-1, parent 0000:01:00.0, dma 0000:01:00.0, kverbs 1
ib_c_clients: mlx5_0 attrs: vendor 0x2c9 part 4119 hw 0, max_qp 262144 max_cq 16777216 max_cqe 4194303 max_mr 16777216 max_pd 16777216 max_srq 8388608 max_sge 30/32, atomic 1, cap 0x101c20, desc "MT4119 ConnectX5   Mellanox Technologies"
ib_c_clients: mlx5_0 port 1: ib 1, cm 1, mad 1, smi 1, cap_flags 0x101017, gids 8, pkeys 128, max_mad 256
ib_c_clients: mlx5_0 port 1: state 4, phys 5, lid 0x6, sm_lid 0x1, lmc 0, mtu 5/5, width 2, speed 32, gids 8, pkeys 128, cap 0x2651e848, prefix 0xfe80000000000000
ib_c_clients: mlx5_0 port 1 caches: pkey[0] 0xffff (0), find 0xffff 0 (0), 0x7fff 0 (0), 0x1234 0xffff (-2), pkey[65536] -22, state 4 (0), port 2: -22
ib_c_clients: mlx5_0: rdma_net is init_net 1, rdma_dev_access_netns(init_net) 1, owner is the device 1
ib_c_clients: mlx5_0: ib_query_port of port 2: -22
ib_c_clients: mlx5_0: event 13 port 1 (cached state 4, 0)
ib_c_clients: mlx5_0: event 11 port 1 (cached state 4, 0)
ib_c_clients: first: data for mlx5_0: ours
ib_c_clients: second: add mlx5_0 (index order 2): node type 1, guid 0002c90300000100, ports 1-1, parent 0000:01:00.0, dma 0000:01:00.0, kverbs 1
ib_c_clients: second: data for mlx5_0: ours
ib_c_clients: refuser: add mlx5_0 (index order 3): node type 1, guid 0002c90300000100, ports 1-1, parent 0000:01:00.0, dma 0000:01:00.0, kverbs 1
ib_c_clients: refuser: refuses mlx5_0
ib_c_clients: registered (ids in order: 1)
EOF
)
EVENT_LINES=$(cat <<'EOF'
ib_c_clients: mlx5_0: event 20 port 0 (cached state 0, -22)
ib_c_clients: mlx5_0: event 10 port 1 (cached state 1, 0)
ib_c_clients: mlx5_0: event 20 port 0 (cached state 0, -22)
ib_c_clients: mlx5_0: event 9 port 1 (cached state 4, 0)
EOF
)
RENAME_LINES=$(cat <<'EOF'
ib_c_clients: first: renamed to cabi0 (name cabi0), data ours
ib_c_clients: second: renamed to cabi0 (name cabi0), data ours
EOF
)
REMOVE_LINES=$(cat <<'EOF'
ib_c_clients: second: remove mlx5_0, data ours
ib_c_clients: first: remove mlx5_0, data ours
EOF
)
# Adding again prints the device's lines of the first add, the clients' adds numbered on.
READD_LINES=$(echo "$ADD_LINES" | awk '
	/: (events|wc statuses|gid types|address sizes|transports):|: registered |: qp transitions from |: sg to pages, / { next }
	match($0, /index order [0-9]+/) {
		n = substr($0, RSTART + 12, RLENGTH - 12) + 3
		$0 = substr($0, 1, RSTART + 11) n substr($0, RSTART + RLENGTH)
	}
	{ print }')
UNREGISTER_LINES=$(cat <<'EOF'
ib_c_clients: second: remove mlx5_0, data ours
ib_c_clients: first: remove mlx5_0, data ours
ib_c_clients: unregistered
EOF
)

# The message ib_c_clients writes with ibdev_err, as C's core prints it (the parent's driver and
# PCI name, then the RDMA device's).
IBDEV_ERR_LINE='mlx5_core 0000:01:00.0 mlx5_0: ibdev_err from ib_c_clients: value 42'
ibdev_err_line() { dmesg | sed -n 's/^\[[ 0-9.]*\] //; /ibdev_err from ib_c_clients/p' | head -n 1; }

# The module's lines (ktap.sh's module_lines: without the kernel's taint notice for the first
# out-of-tree module, which on the Rust stack is ib_core).
mark() { module_lines ib_c_clients | wc -l; }
since() { module_lines_since ib_c_clients "$1"; }
expect() { expect_lines "$1" ib_c_clients "$2" "$3"; }

check "load the $STACK stack" load_stack
wait_for "mlx5_0 port 1 is ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1

m=$(mark)
check "insmod ib_c_clients.ko (one C module for both stacks)" insmod $stack_dir/ib_c_clients.ko
expect "the clients' add lines: what C reads of mlx5_0, in registration order" $m "$ADD_LINES"
check_output "ibdev_err names the device as C's core names it" "^$IBDEV_ERR_LINE\$" ibdev_err_line

m=$(mark)
check_output "model: port 1 down" '^ok port 1 down$' model_ctl port 1 down
wait_for "first's event handler sees the port go down" 30 'event 10 port 1' since $m
check_output "model: port 1 up" '^ok port 1 up$' model_ctl port 1 up
wait_for "mlx5_0 port 1 is ACTIVE again" 60 'state ACTIVE' rdma link show mlx5_0/1
wait_for "first's event handler sees it come back" 30 'event 9 port 1' since $m
expect "the events first's handler got, with the cached port state it saw" $m "$EVENT_LINES"

m=$(mark)
check "rename mlx5_0 to cabi0" rdma dev set mlx5_0 name cabi0
expect "rename reaches first and second with the new name, not refuser" $m "$RENAME_LINES"
check "rename it back" rdma dev set cabi0 name mlx5_0

m=$(mark)
check "rmmod mlx5_ib" rmmod mlx5_ib
expect "remove in reverse registration order, each with its own data" $m "$REMOVE_LINES"
m=$(mark)
check "insmod mlx5_ib again" insmod $stack_dir/mlx5_ib.ko
wait_for "mlx5_0 port 1 is ACTIVE again" 60 'state ACTIVE' rdma link show mlx5_0/1
expect "add again, in registration order" $m "$READD_LINES"

m=$(mark)
check "rmmod ib_c_clients" rmmod ib_c_clients
expect "remove as each client unregisters, none for refuser" $m "$UNREGISTER_LINES"

check "unload the stack" unload_stack
[ "$STACK" = rust ] && kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# c-abi-peer-2vm: the C twin of the peer consumer (tools/verbs-twin/ib_verbs_peer.c) on both
# sides of the wire, VM 0 on the Rust core through the C ABI (issue "ib_core's C ABI"), VM 1 on
# the C stack: mlx5ib-verbs-2vm itself (sourced, every check) with VM 0's Rust sample replaced
# by the C module the C stack runs (put beside the Rust modules as ib_verbs_peer_c.ko). RC and
# UD SENDs both ways at once, an RDMA write into the peer's buffer and a read back, through C's
# inline ib_post_send/ib_poll_cq on the Rust core's ops table against the C stack's; both sides
# print the same lines; wrong commands get C's errnos; both unload cleanly.
# vms: 2
# vm-stacks: rust c
# timeout: 600
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

if [ "$VM_INDEX" = 0 ]; then
	peer_ko="$stack_dir/ib_verbs_peer_c.ko"
	# A Rust module's symbol table is full of mangled Rust names (_RNv...); the C twin has none.
	check "VM 0's peer module is the C twin (no Rust symbol in it)" sh -c "! grep -q _RNv $peer_ko"
fi
. /scenarios/mlx5ib-verbs-2vm.sh

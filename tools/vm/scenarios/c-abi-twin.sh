# c-abi-twin: the C twin of the kernel verbs consumer (tools/verbs-twin/ib_verbs_client.c, the
# module the C stack runs in mlx5ib-verbs) loaded unchanged on the Rust core, through the C ABI
# (issue "ib_core's C ABI": "the C twin consumer on the Rust core"; docs/c-abi.md, step 3). It
# runs mlx5ib-verbs itself with that module as the client: every line the twin prints on the C
# stack, with the same regexes for what differs between stacks (QP numbers, keys, restrack
# ids), the objects `rdma res` lists under its name, the device unregistering under it and
# registering again, the module unloading; kmemleak and dmesg clean. What it reaches: C's
# kernel verbs (PD, CQs made and polled by the core, QPs, SRQs, AHs, the DMA MR through the ops
# table's get_dma_mr, ib_drain_qp, restrack's C view which it walks to count its objects) and
# the data path through the ops table.
# Rust only: on the C stack the same module with the same checks is mlx5ib-verbs itself.
# stacks: rust
# timeout: 600

C_TWIN=1
client="$stack_dir/ib_verbs_client_c.ko"
# A Rust module's symbol table is full of mangled Rust names (_RNv...); the C twin has none.
check "the client module is the C twin (no Rust symbol in it)" sh -c "! grep -q _RNv $client"
check "the Rust sample is (the check above can tell)" grep -q _RNv "$stack_dir/ib_verbs_client.ko"
. /scenarios/mlx5ib-verbs.sh

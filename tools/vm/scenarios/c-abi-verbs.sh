# c-abi-verbs: a C module's kernel verbs on either stack (issue "ib_core's C ABI", step 3:
# docs/c-abi.md). tools/verbs-twin/ib_c_verbs.ko is built once against the kernel tree's
# include/rdma/ib_verbs.h and loaded unchanged on both stacks: on C's ib_core it is the oracle,
# on the Rust core it links to the C ABI's kernel verbs (__ib_alloc_pd, __ib_create_cq,
# ib_create_qp_kernel, ib_modify_qp, ib_query_qp, rdma_create_ah and the destroys) and reaches
# the driver through the device's ops table from C's inline ib_post_send, ib_post_recv,
# ib_poll_cq and ib_req_notify_cq. Its client's add on mlx5_0 prints a line per step (the PD,
# CQ and QP as C reads them, refused sizes and transitions, ib_query_qp after the walk to RTS,
# a SEND with immediate data and its completion event, RDMA WRITE and READ through the PD's
# global rkey, chains of 16 receives and 16 sends posted with one call each, an inline SEND,
# a chain whose second request has too many scatter entries, a flushed receive,
# ib_destroy_cq refused while a QP uses the CQ, a UD datagram through an AH); every line must
# be the text below, recorded from the C stack. While the module holds its PD, CQ and RC QP,
# `rdma res` lists them under its name; rmmod destroys them. Then the stack unloads; kmemleak
# (rust), dmesg.
# stacks: rust c

# The C stack's lines (the oracle; recorded from it on the emulated ConnectX-5).
ADD_LINES=$(cat <<'EOF2'
ib_c_verbs: enabling unsafe global rkey
ib_c_verbs: mlx5_0: pd: device ours 1, local_dma_lkey the device's 0, unsafe global rkey set 1, flags 1, usecnt 0
ib_c_verbs: cq: cqe 31 (16 asked), device ours 1, context ours 1, usecnt 0
ib_c_verbs: bad size: cq of max_cqe + 2: -22
ib_c_verbs: qp: type 2, cap 32/32/14/1/120, pd ours 1, cqs ours 1, usecnt pd 1 cq 2, port 0
ib_c_verbs: reset to rts: -22; unsupported mask bit: -22
ib_c_verbs: query: state 3/3, mtu 5, dest self 1, psn 0x1234/0x1234, timeout 14 retry 7 rnr 7, rd_atomic 1/1, min_rnr 12, access 0x2, port 1 (qp->port 1), pkey 0, path type 1 dlid the port's 1
ib_c_verbs: query init: type 2, cqs ours 1, srq 0, context ours 1, sig 1, cap 32/32/14/1/120
ib_c_verbs: send: Send Success id 12; recv Recv Success id 11, 4096 bytes, imm 1 0x1234, qp ours 1, src_qp self 1, slid the port's 1; data intact; completion event 1
ib_c_verbs: rdma: write RdmaWrite Success, data intact; read RdmaRead Success 4096 bytes, data intact
ib_c_verbs: chain: 16 receives posted in one call (0), 16 sends in one call (0): 16 received in order and intact, 1 send completion(s)
ib_c_verbs: inline: post 0, 2 completion(s) Success Success, received intact
ib_c_verbs: bad chain: err -22, bad_wr is the second 1; 2 completion(s): Success Success
ib_c_verbs: flush: modify 0, 1 completion(s): id 51 WrFlushErr, qp ours 1
ib_c_verbs: destroy cq in use: -16
ib_c_verbs: ud: err 0, pd usecnt with the ah 3; 2 completion(s): send Success, recv Success 296 bytes, src_qp self 1, grh 0, qp ours 1; data intact; destroyed ah 0 qp 0 cq 0
EOF2
)
REMOVE_LINES=$(cat <<'EOF2'
ib_c_verbs: mlx5_0: released: qp 0 cq 0
EOF2
)

mark() { module_lines ib_c_verbs | wc -l; }
expect() { expect_lines "$1" ib_c_verbs "$2" "$3"; }

check "load the $STACK stack" load_stack
wait_for "mlx5_0 port 1 is ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1

m=$(mark)
check "insmod ib_c_verbs.ko (one C module for both stacks)" insmod $stack_dir/ib_c_verbs.ko
expect "the C consumer's verbs on mlx5_0 print the C stack's lines" $m "$ADD_LINES"
check_output "rdma res lists its PD under the module's name" 'comm \[ib_c_verbs\]' rdma res show pd
check_output "rdma res lists its CQ under the module's name" 'comm \[ib_c_verbs\]' rdma res show cq
check_output "rdma res lists its RC QP, in ERR, under the module's name" \
	'type RC state ERR .*comm \[ib_c_verbs\]' rdma res show qp

m=$(mark)
check "rmmod ib_c_verbs" rmmod ib_c_verbs
expect "remove destroys the QP, the CQ and the PD" $m "$REMOVE_LINES"
check_output "rdma res lists nothing of the module any more" '^none$' \
	sh -c 'rdma res show | grep -c "ib_c_verbs" >/dev/null && echo some || echo none'

check "unload the stack" unload_stack
[ "$STACK" = rust ] && kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

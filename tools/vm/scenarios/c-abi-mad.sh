# c-abi-mad: a C module's MAD agents on either stack (issue "ib_core's C ABI", step 5: the MAD
# agent API ib_cm and the SA client use; docs/c-abi.md). tools/verbs-twin/ib_c_mad.ko is built
# once against the kernel tree's include/rdma/ib_mad.h and loaded unchanged on both stacks: on
# C's ib_core it is the oracle, on the Rust core it links to the C ABI's ib_register_mad_agent,
# ib_unregister_mad_agent, ib_create_send_mad, ib_free_send_mad, ib_post_send_mad and
# ib_free_recv_mad. On mlx5_0's port 1 it registers GSI agents for two vendor classes and a
# sender, and prints a line per step, each waited for: the agents as C reads them, the
# registrations the MAD layer refuses, a GET answered by an agent (both sides' view: class,
# method, TID, source, the request's send buffer given with the response, the completions), a
# SET nobody registered answered by the MAD layer, a GET never answered sent with one retry
# (two receives, a response timeout), sends the API refuses, a send flushed when its agent
# unregisters. The AHs are made in the agent's qp->pd, as ib_cm makes them. Every line must be
# the text below, recorded from the C stack. Then rmmod, the stack unloads; kmemleak (rust),
# dmesg.
# stacks: rust c

# The C stack's lines (the oracle; recorded from it on the emulated ConnectX-5).
ADD_LINES=$(cat <<'EOF2'
ib_c_mad: mlx5_0: agents on port 1: qp 1 type 1, device ours 1, pd device ours 1, hi_tids distinct 1, rmpp 0
ib_c_mad: refused: the same method again -22, a vendor class on the SMI -22, a UD QP type -22
ib_c_mad: get: post 0; A got class 0xb method 0x1 tid ours 1 from lid ours 1 qp 1 grh 0 send_buf 0; its response went 0
ib_c_mad: get: the sender got method 0x81 status 0x0 tid ours 1 with its request's send_buf 1; its send ended 0
ib_c_mad: set nobody registered: post 0; answered with method 0x81 status 0xc; send ended 0
ib_c_mad: unanswered get with one retry: post 0; B got it 2 time(s); send ended 20, 0 response(s)
ib_c_mad: timeout shortened to 100 ms: post 0, modify 0; send ended 20
ib_c_mad: cancelled: post 0, cancel 0; send ended 5
ib_c_mad: gids: index 0 0 (prefix 0xfe80000000000000), index 1 0, index 8 -22; found at port 1 index 0 type 0 device ours 1 (0)
ib_c_mad: gids: a GID no port has: -2
ib_c_mad: port caps: cm_sup 1; set 0 -> 1; cleared 0 -> 0; port 2 -22
ib_c_mad: refused sends: 257 bytes -22, rmpp on an agent without it -22
ib_c_mad: unregistered with a send waiting: post 0; it ended 5 (1 send completion(s))
ib_c_mad: mlx5_0: done
EOF2
)

mark() { module_lines ib_c_mad | wc -l; }
expect() { expect_lines "$1" ib_c_mad "$2" "$3"; }

check "load the $STACK stack" load_stack
wait_for "mlx5_0 port 1 is ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1

m=$(mark)
check "insmod ib_c_mad.ko (one C module for both stacks)" insmod $stack_dir/ib_c_mad.ko
wait_for "its add ran to its end" 60 'ib_c_mad: mlx5_0: done' module_lines ib_c_mad
expect "the C module's MAD agents on mlx5_0 print the C stack's lines" $m "$ADD_LINES"
check "rmmod ib_c_mad" rmmod ib_c_mad

check "unload the stack" unload_stack
[ "$STACK" = rust ] && kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

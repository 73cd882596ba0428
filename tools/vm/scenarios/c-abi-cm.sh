# c-abi-cm: C's connection manager on either stack (issue "ib_core's C ABI", step 5: ib_cm;
# docs/c-abi.md). ib_cm.ko is C's, from the kernel tree, the same file on both stacks; on the
# Rust core it links to the C ABI (the MAD agent API, the P_Key and GID caches, address
# attributes from paths and completions, the port client groups). tools/verbs-twin/ib_c_cm.ko,
# built once against include/rdma/ib_cm.h, uses it on mlx5_0's port 1 with both ends of each
# connection on the port: a listen (and a second refused), a REQ for a service nobody listens on
# (rejected), then a connection: REQ, REP, RTU with both QPs taken to RTS by the attributes ib_cm
# computes, a SEND over it, DREQ, DREP and both time-waits; a line per step, which must be the
# text below, recorded from the C stack. ib_cm's counters in the port's sysfs directory
# (cm_rx_msgs/ and the others, its ib_port_register_client_groups) are there while it is
# loaded, count those MADs as on C, go with mlx5_ib and come back with it, and go with ib_cm.
# Then the stack unloads; kmemleak (rust), dmesg.
# stacks: rust c

# The C stack's lines (the oracle; recorded from it on the emulated ConnectX-5).
CM_LINES=$(cat <<'EOF2'
ib_c_cm: mlx5_0: port 1: cm supported 1 (ib_cm set it)
ib_c_cm: listen: 0, state 1; the same service again: -16
ib_c_cm: req to a service nobody listens on: 0, state 2; rejected 1, reason 8, state 0
ib_c_cm: req: 0, state 2
ib_c_cm: passive req: listen id ours 1, port 1, remote qpn the active QP's 1, qp type 2, psn 0x111, resp 1 init 1, timeouts 20/20, retry 7 rnr 7, srq 0, private "ib_c_cm req"; path type 0 dlid the peer's 1 slid the port's 1, pkey 0xffff, mtu 3, sl 0, rate 0, life 14, hop 0, sgid index 0 -1, alternate 0
ib_c_cm: passive init: 0, mask 0x39, access 0xe, pkey index 0, port 1
ib_c_cm: passive rtr: 0, mask 0x129181, mtu 3, dest qp the other end's 1, rq_psn 0x0, rd_atomic 1, min_rnr 0, ah type 1 dlid the peer's 1 sl 0 path_bits 0 rate 0 grh 0 port 1
ib_c_cm: passive sent the rep: 0
ib_c_cm: active rep: remote qpn the passive QP's 1, psn 0x222, resp 1 init 1, failover 0, flow 0, rnr 7, srq 0, private "ib_c_cm rep"
ib_c_cm: active init: 0, mask 0x39, access 0xe, pkey index 0, port 1
ib_c_cm: active rtr: 0, mask 0x129181, mtu 3, dest qp the other end's 1, rq_psn 0x111, rd_atomic 1, min_rnr 0, ah type 1 dlid the peer's 1 sl 0 path_bits 0 rate 0 grh 0 port 1
ib_c_cm: active rts: 0, mask 0x12e01, sq_psn 0x222, timeout 15, retry 7, rnr_retry 7, rd_atomic 1
ib_c_cm: active sent the rtu: 0, state 10
ib_c_cm: passive rtu: private "ib_c_cm rtu"; rts: 0, mask 0x12e01, sq_psn 0x111, timeout 15, retry 7, rnr_retry 7, rd_atomic 1; state 10
ib_c_cm: send over the connection: post 0; 2 completion(s): 0/0, recv on the passive QP 1, 64 bytes; data intact
ib_c_cm: dreq: 0, state dreq sent or past it 1
ib_c_cm: passive got it 1: dreq: private "ib_c_cm dreq"; drep sent 0
ib_c_cm: active got the drep 1; time-wait ended: active 1, passive 1; states 0/0
ib_c_cm: mlx5_0: done
EOF2
)
# ib_cm's counters after the run (`grep . cm_*/*` in the port's directory), from the C stack.
COUNTERS=$(cat <<'EOF2'
cm_rx_duplicates/apr:0 cm_rx_duplicates/drep:0 cm_rx_duplicates/dreq:0 cm_rx_duplicates/lap:0 cm_rx_duplicates/mra:0 cm_rx_duplicates/rej:0 cm_rx_duplicates/rep:0 cm_rx_duplicates/req:0 cm_rx_duplicates/rtu:0 cm_rx_duplicates/sidr_rep:0 cm_rx_duplicates/sidr_req:0 cm_rx_msgs/apr:0 cm_rx_msgs/drep:1 cm_rx_msgs/dreq:1 cm_rx_msgs/lap:0 cm_rx_msgs/mra:0 cm_rx_msgs/rej:1 cm_rx_msgs/rep:1 cm_rx_msgs/req:2 cm_rx_msgs/rtu:1 cm_rx_msgs/sidr_rep:0 cm_rx_msgs/sidr_req:0 cm_tx_msgs/apr:0 cm_tx_msgs/drep:1 cm_tx_msgs/dreq:1 cm_tx_msgs/lap:0 cm_tx_msgs/mra:0 cm_tx_msgs/rej:1 cm_tx_msgs/rep:1 cm_tx_msgs/req:2 cm_tx_msgs/rtu:1 cm_tx_msgs/sidr_rep:0 cm_tx_msgs/sidr_req:0 cm_tx_retries/apr:0 cm_tx_retries/drep:0 cm_tx_retries/dreq:0 cm_tx_retries/lap:0 cm_tx_retries/mra:0 cm_tx_retries/rej:0 cm_tx_retries/rep:0 cm_tx_retries/req:0 cm_tx_retries/rtu:0 cm_tx_retries/sidr_rep:0 cm_tx_retries/sidr_req:0 
EOF2
)

port=/sys/class/infiniband/mlx5_0/ports/1
groups() { ls -d $port/cm_* 2>/dev/null | sed 's|.*/||' | tr '\n' ' '; }
counters() { (cd $port && grep . cm_*/* | tr '\n' ' '); }
values() { cat $port/cm_*/* | sort -u | tr '\n' ' '; }

check "load the $STACK stack" load_stack
wait_for "mlx5_0 port 1 is ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1
check_output "no cm counters before ib_cm" '^$' groups
check "insmod ib_cm.ko (C's, the same file on both stacks)" insmod $stack_dir/ib_cm.ko
check_output "ib_cm's counter groups in ports/1" \
	'^cm_rx_duplicates cm_rx_msgs cm_tx_msgs cm_tx_retries $' groups
check_output "each has C's 11 counters" '^44$' sh -c "ls $port/cm_*/ | grep -c -v -e : -e '^\$'"
check_output "all 0 before any connection" '^0 $' values
check_output "a counter file is read-only" '^-r--r--r--' ls -l $port/cm_tx_msgs/req

m=$(module_lines ib_c_cm | wc -l)
check "insmod ib_c_cm.ko (one C module for both stacks)" insmod $stack_dir/ib_c_cm.ko
wait_for "its run reached its end" 60 'ib_c_cm: mlx5_0: done' module_lines ib_c_cm
expect_lines "ib_cm's connection on mlx5_0 prints the C stack's lines" ib_c_cm $m "$CM_LINES"
check_output "ib_cm's counters count those MADs as on C" "^$COUNTERS\$" counters
check "rmmod ib_c_cm" rmmod ib_c_cm

check "mlx5_ib goes with ib_cm loaded" rmmod mlx5_ib
check_output "the counters went with the device" '^$' groups
check "mlx5_ib comes back" insmod $stack_dir/mlx5_ib.ko
wait_for "mlx5_0 port 1 is ACTIVE again" 60 'state ACTIVE' rdma link show mlx5_0/1
check_output "ib_cm put its counters back" \
	'^cm_rx_duplicates cm_rx_msgs cm_tx_msgs cm_tx_retries $' groups
check_output "from 0" '^0 $' values
check "rmmod ib_cm" rmmod ib_cm
check_output "its counters went with it" '^$' groups

check "unload the stack" unload_stack
[ "$STACK" = rust ] && kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# mlx5ib-verbs-2vm: kernel verbs traffic between the two stacks over the wire. VM 0 runs the Rust
# stack and the Rust sample ib_verbs_peer (samples/ib_verbs_peer.rs), VM 1 the C stack and its C
# twin (tools/verbs-twin/ib_verbs_peer.c); each VM has its own cx-model, the models linked by the
# wire (LIDs 6 and 10). So the WQEs each stack writes are executed by one emulated HCA and
# answered by the other: what our driver writes means to the device what the C driver's means.
#
# Each side reads its debugfs ctl line (LID, RC and UD QP numbers, rkey and address of a buffer),
# sends it to the other over TCP on the guests' virtio-net link, and writes the peer's line back
# as `connect`: the RC QP goes to RTS towards the peer's, an AH is made for the peer's LID, 1000
# receives are posted on each QP. At a barrier both start `traffic` at once, so messages flow both
# ways together: 1000 RC SENDs of 512 bytes and 1000 UD SENDs of 256 bytes each way (bytes,
# length, source QP and for UD source LID checked on the receiving side), then an RDMA write of
# 4096 bytes into the peer's buffer and an RDMA read back. At a second barrier each checks that
# the peer's write landed in its own buffer. Both sides must print the same lines, the peer's
# values (as it sent them) included. Wrong commands get C's errnos; both unload cleanly.
# vms: 2
# vm-stacks: rust c
# timeout: 600
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

ctl=/sys/kernel/debug/ib_verbs_peer/mlx5_0/ctl
hex='0x[0-9a-f]+'
if [ "$VM_INDEX" = 0 ]; then
	lid=6
	peer_lid=10
else
	lid=10
	peer_lid=6
fi

# meet <name>: waits for the other guest at the barrier <name>; a failure (the peer stopped, or
# waits elsewhere) is a failed check, so that it shows in the report.
meet() {
	_answer=$(barrier "$1") || ktap_result 1 "barrier $1: meet the other VM" "$_answer"
}

# ctl_write <command>: writes the command to ctl; prints the shell's error on failure.
ctl_write() {
	sh -c "echo '$1' > $ctl"
}

check "load the stack ($STACK)" load_stack
wait_for "mlx5_0 port 1 ACTIVE with LID $lid" 60 "lid $lid sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP" \
	sh -c "rdma link show mlx5_0/1"
# c-abi-peer-2vm runs this scenario with the C twin on the Rust core too (peer_ko set on VM 0).
check "ib_verbs_peer loads" insmod "${peer_ko:-$stack_dir/ib_verbs_peer.ko}"
check_output "it is ready on mlx5_0 with its debugfs file" \
	'ib_verbs_peer: mlx5_0: ready: debugfs ib_verbs_peer/mlx5_0/ctl$' dmesg
check_output "ctl gives this side's LID, QP numbers, rkey and buffer address" \
	"^lid $lid rc_qpn $hex ud_qpn $hex rkey $hex addr $hex\$" cat $ctl
own=$(cat $ctl)
check "traffic before connect is refused (ENOTCONN)" sh -c "! echo traffic > $ctl"
check_output "and says so with C's errno" 'ib_verbs_peer: mlx5_0: command "traffic" failed: err -107$' dmesg
check "a connect line with a missing number is refused (EINVAL)" sh -c "! echo 'connect 1 2 3 4' > $ctl"
check_output "and says so with C's errno" 'ib_verbs_peer: mlx5_0: command "connect 1 2 3 4" failed: err -22$' dmesg

# Exchange the ctl lines over TCP: VM 1's to VM 0 on port 5000, then VM 0's to VM 1 on 5001.
meet net-up
if [ "$VM_INDEX" = 0 ]; then
	timeout 60 nc -l -p 5000 </dev/null >/tmp/peer-line 2>&1 &
	nc_pid=$!
	wait_listening 5000 10
	meet line-1
	wait $nc_pid
	meet line-2
	check "TCP: this side's line to $PEER_IP port 5001" \
		sh -c "echo '$own' | timeout 20 nc -w 10 $PEER_IP 5001"
else
	timeout 60 nc -l -p 5001 </dev/null >/tmp/peer-line 2>&1 &
	nc_pid=$!
	meet line-1
	check "TCP: this side's line to $PEER_IP port 5000" \
		sh -c "echo '$own' | timeout 20 nc -w 10 $PEER_IP 5000"
	wait_listening 5001 10
	meet line-2
	wait $nc_pid
fi
check_output "the peer's line arrived: LID $peer_lid and its numbers" \
	"^lid $peer_lid rc_qpn $hex ud_qpn $hex rkey $hex addr $hex\$" cat /tmp/peer-line
read -r _ p_lid _ p_rc _ p_ud _ p_rkey _ p_addr </tmp/peer-line
read -r _ _ _ o_rc _ o_ud _ _ _ _ <<EOF
$own
EOF

check "connect to the peer" ctl_write "connect $p_lid $p_rc $p_ud $p_rkey $p_addr"
check_output "connected: RC to the peer's QP and LID, UD through an AH to the peer's QP, receives posted" \
	"ib_verbs_peer: mlx5_0: connected: rc qp $o_rc to lid $peer_lid qp $p_rc, ud qp $o_ud to qp $p_ud through an AH; 1000 receives posted on each\$" dmesg
check "a second connect is refused (EISCONN)" sh -c "! echo 'connect $p_lid $p_rc $p_ud $p_rkey $p_addr' > $ctl"
check_output "and says so with C's errno" "ib_verbs_peer: mlx5_0: command \"connect $p_lid $p_rc $p_ud $p_rkey $p_addr\" failed: err -106\$" dmesg

# Both sides send at once.
meet connected
check "traffic both ways" timeout 300 sh -c "echo traffic > $ctl"
check_output "rc: 1000 SENDs of 512 bytes each way, every one received intact from the peer's QP" \
	"ib_verbs_peer: mlx5_0: rc: 1000 messages of 512 bytes each way: 1000 sends completed, 1000 received intact from the peer's qp, 0 failed completion\(s\)\$" dmesg
check_output "ud: 1000 SENDs of 256 bytes each way through an AH, every one intact from the peer's QP and LID behind the GRH area" \
	"ib_verbs_peer: mlx5_0: ud: 1000 messages of 256 bytes each way through an AH: 1000 sends completed, 1000 received intact from the peer's qp and lid \(byte_len 296\), 0 failed completion\(s\)\$" dmesg
check_output "rdma: a write of 4096 bytes into the peer's buffer, read back intact" \
	"ib_verbs_peer: mlx5_0: rdma: write of 4096 bytes into the peer's buffer RdmaWrite Success; read back RdmaRead Success 4096 bytes, data intact\$" dmesg
meet traffic-done
check "verify the peer's write" ctl_write verify
check_output "the peer's RDMA write is in this side's buffer" \
	"ib_verbs_peer: mlx5_0: verify: the peer's rdma write in our buffer: 4096 bytes intact\$" dmesg
check_output "no other command failed and nothing was corrupt (the 3 refusals above only)" '^3 0$' \
	sh -c 'echo $(dmesg | grep -c "ib_verbs_peer: .*failed: err") $(dmesg | grep -c "ib_verbs_peer: .*CORRUPT")'
rdma res show qp link mlx5_0 | grep 'comm \[ib_verbs_peer\]' | sed 's/^/# /'

meet done
check "ib_verbs_peer unloads" rmmod ib_verbs_peer
check_output "it released mlx5_0" 'ib_verbs_peer: mlx5_0: released$' dmesg
check "unload the stack" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

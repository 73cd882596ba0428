# mad-agent: the MAD layer's kernel API, used by the sample agent samples/ib_mad_agent.rs (an
# ib_core client). Rust only: it checks the Rust API itself (C's kernel API is another one; the
# behaviour users see of the MAD layer is compared with C in mad-tools, umad-badinput, mad-2vm).
#   - on port 1 of mlx5_0 it registers a responder for Gets of vendor class 0x30 (OUI 00:14:05)
#     and a send-only requester; the requester's vendor Get to the own LID goes through the
#     device to the responder, whose GetResp comes back to the requester (the TID's high bits
#     are its hi_tid), then the send completes with success;
#   - its PerfMgmt ClassPortInfo Get is answered by the driver (capability mask 0x0200);
#   - its Get to LID 0x77 (100 ms, one retry) ends with a response timeout;
#   - a vendor Get carrying the responder's TID prefix is answered once; the answer, routed to
#     the responder, answers none of its sends (a send without timeout takes no response, as in
#     C), so it is dropped, no answer loop starts, and the Get times out;
#   - user space's perfquery works beside the kernel agents;
#   - the agents go with mlx5_ib and come back with it; the sample unloads; kmemleak, dmesg.
# stacks: rust
# timeout: 300

agent_log() {
	dmesg | sed -n 's/^\[[ 0-9.]*\] ib_mad_agent: //p'
}
# agent_count <text>: how many of the sample's lines contain the text.
agent_count() {
	agent_log | grep -c "$1"
}

check "load the stack" load_stack
wait_for "mlx5_0's port is ACTIVE" 30 '^4: ACTIVE$' cat /sys/class/infiniband/mlx5_0/ports/1/state
lid=$(($(cat /sys/class/infiniband/mlx5_0/ports/1/lid)))
check "ib_mad_agent loads" insmod "$stack_dir/ib_mad_agent.ko"
check_output "it registers its agents on port 1" \
	"^mlx5_0: agents registered on port 1 \\(LID $lid\\): responder for vendor class 0x30, requester with hi_tid [0-9]+\$" agent_log
wait_for "the responder gets the vendor Get from the own LID through QP1 and answers" 30 \
	"^mlx5_0: responder: a Get from LID $lid QP 1, answered\$" agent_log
wait_for "the requester gets the GetResp, its TID, the responder's text" 30 \
	'^mlx5_0: requester: vendor GetResp status 0x0000, TID ours \(true\), data "rdma-rs sample agent"$' agent_log
wait_for "then the vendor Get completes with success" 30 '^mlx5_0: requester: vendor Get ended: success$' agent_log
wait_for "the driver answers ClassPortInfo (extended counters)" 30 \
	'^mlx5_0: requester: ClassPortInfo GetResp status 0x0000, capability mask 0x0200$' agent_log
wait_for "that Get completes with success" 30 '^mlx5_0: requester: ClassPortInfo Get ended: success$' agent_log
wait_for "the Get to LID 0x77 ends with a response timeout" 30 '^mlx5_0: requester: Get to LID 0x77 ended: response timeout$' agent_log
wait_for "a Get with the responder's TID prefix: its answer goes to the responder, which has no request for it: the Get times out" 30 \
	"^mlx5_0: requester: vendor Get with the responder's TID ended: response timeout\$" agent_log
check_output "the responder answered exactly the two vendor Gets (a response never answers a response)" '^2$' \
	agent_count 'responder: a Get from'
check_output "each of the four ended once" '^4$' agent_count 'ended:'
check_output "perfquery works beside the kernel agents" '^# Port counters: Lid [0-9]+ port 1' perfquery
check "mlx5_ib unloads with the agents registered" rmmod mlx5_ib
check_output "the agents went with mlx5_0" '^mlx5_0: agents unregistered$' agent_log
check "mlx5_ib loads again" load_stack mlx5_ib
wait_for "the agents come back and the exchange works again" 30 \
	'^2$' agent_count 'requester: vendor Get ended: success'
check_output "and the responder answered two more" '^4$' agent_count 'responder: a Get from'
check "ib_mad_agent unloads" rmmod ib_mad_agent
check_output "and unregisters its agents" '^2$' agent_count 'agents unregistered'
check "the stack unloads" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

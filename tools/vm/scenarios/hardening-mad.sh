# hardening-mad: garbage in the management agent's answers (MAD_IFC), the same checks on both
# stacks. Before the stack loads, cx-model is told to overwrite bytes of its SMP answers
# (`model_ctl mad-poke ATTR OFFSET HEX`): NodeInfo's PartitionCap says 256 P_Keys (it serves
# 128), PortInfo's GUIDCap says 32 GIDs (it serves 8), LMC 7, NeighborMTU and MasterSMSL 15 (an
# MTU that does not exist), SubnetTimeOut 31, and the node description starts with three 0xff
# bytes (not text). The blocks past what the agent serves come back with a non-zero MAD status
# and zero data: C's queries use the data and ignore that status, so its mlx5_0 registers with
# 32 GIDs and 256 P_Keys, the ones not served zero; ours must do the same (before the fix it
# refused to register: "no RDMA device registered: err -5"). Every value is C's, the stack
# unloads cleanly, kmemleak and dmesg clean.
# stacks: c rust
# timeout: 300

p=/sys/class/infiniband/mlx5_0/ports/1
poke() {
	check_output "model: answers for attribute $1 get $3 at data offset $2" "^ok mad-poke" model_ctl mad-poke "$1" "$2" "$3"
}
poke 0x0011 28 0100
poke 0x0015 50 20
poke 0x0015 34 07
poke 0x0015 36 ff
poke 0x0015 51 ff
poke 0x0010 0 ffffff41
check "load the stack" load_stack
wait_for "mlx5_0 registers despite the garbage" 30 '^mlx5_0$' ls /sys/class/infiniband
wait_for "port 1: C's line (LMC 7 as the agent says)" 30 \
	'^link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid [0-9]+ sm_lid 1 lmc 7 state ACTIVE physical_state LINK_UP ?$' \
	rdma link show mlx5_0/1
check_output "device: C's line" \
	'^0: mlx5_0: node_type ca fw 16\.35\.2000 node_guid 0002:c903:[0-9a-f]{4}:[0-9a-f]{4} sys_image_guid 0002:c903:[0-9a-f]{4}:[0-9a-f]{4} ?$' \
	rdma dev show mlx5_0
check_output "sysfs: lid_mask_count 7, sm_sl 15, sm_lid 0x1, rate as C" \
	'^7 15 0x1 100 Gb/sec \(4X EDR\)$' sh -c "echo \$(cat $p/lid_mask_count) \$(cat $p/sm_sl) \$(cat $p/sm_lid) \$(cat $p/rate)"
check_output "32 GIDs and 256 P_Keys, as the agent's table sizes say" '^32 256$' \
	sh -c "echo \$(ls $p/gids | wc -l) \$(ls $p/pkeys | wc -l)"
check_output "the GIDs it serves are there, the others zero (after the prefix)" \
	'^fe80:0000:0000:0000:0002:c903:[0-9a-f]{4}:[0-9a-f]{4} fe80:0000:0000:0000:0000:0000:0000:0000 fe80:0000:0000:0000:0000:0000:0000:0000 fe80:0000:0000:0000:0000:0000:0000:0000$' \
	sh -c "echo \$(cat $p/gids/0) \$(cat $p/gids/7) \$(cat $p/gids/8) \$(cat $p/gids/31)"
check_output "P_Key 0 is the default, the others (served or not) zero" '^0xffff 0x0000 0x0000 0x0000 0x0000$' \
	sh -c "echo \$(cat $p/pkeys/0) \$(cat $p/pkeys/1) \$(cat $p/pkeys/127) \$(cat $p/pkeys/128) \$(cat $p/pkeys/255)"
check_output "node_desc: the bytes as the agent gave them" '^377 377 377 A 1 9 C o n n e c t X 5' \
	sh -c "od -An -c /sys/class/infiniband/mlx5_0/node_desc | head -1 | tr -s ' ' | sed 's/^ //'"
check "the stack unloads" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

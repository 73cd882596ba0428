# uverbs-rdma-core: unmodified rdma-core 44 (libibverbs + libmlx5) on mlx5_0, the same on both
# stacks (issue 17). This part: the device as ibv_devinfo sees it.
#   - ibv_devices lists mlx5_0 with its node GUID;
#   - `ibv_devinfo -v` prints exactly what it prints on the C stack (the text below, taken from
#     the C stack): opening the device makes a user context (GET_CONTEXT with libmlx5's
#     request: dynamic UARs, CQE version 1) with its async event file, EX_QUERY_DEVICE answers
#     the core attributes and mlx5's, QUERY_PORT the port's, and the GID table follows;
#   - the context (with a PD, an MR of 64 KiB and a CQ armed on a completion channel) and its async
#     event file are held open by a process (rdma resource counts it: ctx 1; `rdma res show
#     ctx|pd|cq|mr` list them with its pid) while mlx5_ib
#     unloads:
#     the process reads IB_EVENT_DEVICE_FATAL (8) from the async event file (then nothing
#     more: C's file stays open and empty), a store into the UAR page it mapped lands in memory
#     (the page was taken back), its commands fail with EIO; the module unloads
#     without waiting for it;
#   - the stack unloads; dmesg clean; kmemleak clean on rust. Not on c: C 7.3 leaks the task of
#     a process whose context was disassociated (its task_struct, signal_struct and creds stay
#     referenced after it exited and was reaped; seen here on every run), so the c run skips the
#     kmemleak scan.
# stacks: rust c
# install-modules: yes
# timeout: 400
# Two CPUs: num_comp_vectors follows the CPUs: 2 shows more than 1 would.
# cpus: 2

check "load the stack" load_stack
wait_for "mlx5_0 is registered and its port is ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1
guid=$(sed 's/://g' /sys/class/infiniband/mlx5_0/node_guid)
check_output "ibv_devices lists mlx5_0 with its node GUID ($guid)" "^[[:space:]]+mlx5_0[[:space:]]+$guid\$" ibv_devices

cat >/tmp/expected <<'END'
hca_id:	mlx5_0
	transport:			InfiniBand (0)
	fw_ver:				16.35.2000
	node_guid:			0002:c903:0000:0100
	sys_image_guid:			0002:c903:0000:0100
	vendor_id:			0x02c9
	vendor_part_id:			4119
	hw_ver:				0x0
	board_id:			MT_0000000008
	phys_port_cnt:			1
	max_mr_size:			0xffffffffffffffff
	page_size_cap:			0xfffffffffffff000
	max_qp:				262144
	max_qp_wr:			8192
	device_cap_flags:		0x00101c20
					CHANGE_PHY_PORT
					PORT_ACTIVE_EVENT
					SYS_IMAGE_GUID
					RC_RNR_NAK_GEN
					XRC
	max_sge:			30
	max_sge_rd:			30
	max_cq:				16777216
	max_cqe:			4194303
	max_mr:				16777216
	max_pd:				16777216
	max_qp_rd_atom:			16
	max_ee_rd_atom:			0
	max_res_rd_atom:		4194304
	max_qp_init_rd_atom:		16
	max_ee_init_rd_atom:		0
	atomic_cap:			ATOMIC_HCA (1)
	max_ee:				0
	max_rdd:			0
	max_mw:				0
	max_raw_ipv6_qp:		0
	max_raw_ethy_qp:		0
	max_mcast_grp:			2097152
	max_mcast_qp_attach:		240000
	max_total_mcast_qp_attach:	805306368
	max_ah:				2147483647
	max_fmr:			0
	max_srq:			8388608
	max_srq_wr:			32767
	max_srq_sge:			31
	max_pkeys:			128
	local_ca_ack_delay:		0
	general_odp_caps:
	rc_odp_caps:
					NO SUPPORT
	uc_odp_caps:
					NO SUPPORT
	ud_odp_caps:
					NO SUPPORT
	xrc_odp_caps:
					NO SUPPORT
	completion timestamp_mask:			0x7fffffffffffffff
	core clock not supported
	device_cap_flags_ex:		0x101C20
	tso_caps:
		max_tso:			0
	rss_caps:
		max_rwq_indirection_tables:			0
		max_rwq_indirection_table_size:			0
		rx_hash_function:				0x0
		rx_hash_fields_mask:				0x0
	max_wq_type_rq:			0
	packet_pacing_caps:
		qp_rate_limit_min:	0kbps
		qp_rate_limit_max:	0kbps
	tag matching not supported
	num_comp_vectors:		2
		port:	1
			state:			PORT_ACTIVE (4)
			max_mtu:		4096 (5)
			active_mtu:		4096 (5)
			sm_lid:			1
			port_lid:		6
			port_lmc:		0x00
			link_layer:		InfiniBand
			max_msg_sz:		0x40000000
			port_cap_flags:		0x2251e848
			port_cap_flags2:	0x0000
			max_vl_num:		8 (4)
			bad_pkey_cntr:		0x0
			qkey_viol_cntr:		0x0
			sm_sl:			0
			pkey_tbl_len:		128
			gid_tbl_len:		8
			subnet_timeout:		18
			init_type_reply:	0
			active_width:		4X (2)
			active_speed:		25.0 Gbps (32)
			phys_state:		LINK_UP (5)
			GID[  0]:		fe80:0000:0000:0000:0002:c903:0000:0101

END
check "ibv_devinfo -v runs" sh -c 'ibv_devinfo -v >/tmp/actual 2>/tmp/stderr'
check "ibv_devinfo -v writes nothing to stderr" sh -c 'cat /tmp/stderr; test ! -s /tmp/stderr'
check "ibv_devinfo -v prints what it prints on the C stack" diff -u /tmp/expected /tmp/actual
check_output "ibv_devinfo -d mlx5_0 -i 1: the port alone" 'state:[[:space:]]+PORT_ACTIVE \(4\)' ibv_devinfo -d mlx5_0 -i 1

# A context held open while the RDMA device goes away.
rm -f /tmp/holder.go
uverbs_holder /tmp/holder.out /tmp/holder.go >/dev/null 2>&1 &
holder=$!
check "a process holds a context and reads its async events" kill -0 $holder
wait_for "the holder has its context" 30 '^context' cat /tmp/holder.out
check_output "rdma resource counts the holder's context (ctx 1)" ' ctx 1( |$)' rdma resource show mlx5_0
# Context ids are cyclic: the two ibv_devinfo runs above had 0 and 1. PD numbers differ: C's
# mlx5_ib and MAD layer hold kernel PDs of their own (issue 14 and later parts of 17).
check_output "rdma resource show ctx: the holder's context (2), its pid and name" \
	"^dev mlx5_0 ctxn 2 pid $holder comm uverbs_holder *\$" rdma resource show ctx
check_output "rdma resource show pd: the holder's PD in context 2, used by its MR, its pid and name" \
	"^dev mlx5_0 pdn [0-9]+ local_dma_lkey 0x0 users 1 ctxn 2 pid $holder comm uverbs_holder *\$" rdma resource show pd
check_output "rdma resource show cq: the holder's CQ of 63 entries in context 2, its pid and name" \
	"^dev mlx5_0 cqn [0-9]+ cqe 63 users 0 adaptive-moderation off ctxn 2 pid $holder comm uverbs_holder *\$" \
	sh -c 'rdma resource show cq | grep " pid "'
check_output "rdma resource show mr: the holder's 64 KiB MR, its keys, its PD, its pid and name" \
	"^dev mlx5_0 mrn [0-9]+ rkey 0x[0-9a-f]+ lkey 0x[0-9a-f]+ mrlen 65536 pdn [0-9]+ pid $holder comm uverbs_holder *\$" rdma resource show mr
check "mlx5_ib unloads while the context is held" rmmod mlx5_ib
# The removal has returned: the holder's mappings were taken back, it may store into its page.
touch /tmp/holder.go
wait_for "the holder read DEVICE_FATAL and its command failed" 30 '^done' cat /tmp/holder.out
check_output "holder: context, async event 8 (DEVICE_FATAL), its UAR page is memory now, QUERY_PORT fails with EIO" \
	'^context;event 8;uar reads back 0x1234;query_port EIO;done;$' sh -c "tr '\\n' ';' </tmp/holder.out"

wait $holder
rc=$?
check_output "the holder exits 0 (its lines: $(tr '\n' ';' </tmp/holder.out))" '^0$' echo $rc

check "the stack unloads" unload_stack
check "nothing of it stays loaded" sh -c '! grep -E "^(ib_core|ib_uverbs|mlx5_core|mlx5_ib) " /proc/modules'
if [ "$STACK" = rust ]; then
	kmemleak_clean "rust: kmemleak finds no leak"
fi
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

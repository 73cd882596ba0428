# mlx5ib-device: mlx5_ib registers the RDMA device of the emulated ConnectX-5, and every
# stack shows it the same way: the same checks, with the same expected values, run on the
# upstream C stack and on ours. The values come from cx-model's configuration (firmware
# 16.35.2000, GUID seed 1: node GUID 0002:c903:0000:0100, port GUID ...0101, LID 6, SM LID 1,
# PSID MT_0000000008, one ACTIVE 4X EDR port, a 128-entry P_Key table with 0xffff first, an
# 8-entry GUID table) as its MAD_IFC, QUERY_HCA_CAP and QUERY_ADAPTER answers report them:
#   - `rdma dev show` and `rdma link show` lines, attribute for attribute, the device index
#     (`rdma dev show` and `rdma -j dev show`) included: 0, 1 after an mlx5_ib reload, 0 after
#     an ib_core reload;
#   - sysfs: node_type, node_guid, sys_image_guid, fw_ver, node_desc, hca_type, hw_rev,
#     board_id, reg_pages, fw_pages (equal to debugfs' fw_pages_total), and ports/1/ state, phys_state, lid, sm_lid, lid_mask_count, sm_sl, cap_mask,
#     rate, link_layer, gids/0, gids/1, pkeys/0, pkeys/1, gid_attrs/types/0;
#   - the same device in the sysfs of another network namespace while devices are shared, none
#     in exclusive mode (C's compat devices);
#   - the port going down and up: sysfs state follows, and mlx5_ib logs nothing about it (C's
#     mlx5_ib logs only an event on a port the device does not have);
#   - the device is a child of the PCI function;
#   - unloading mlx5_ib unregisters it and loading it again registers it again, as mlx5_0;
#   - then a clean dmesg and kmemleak.
# stacks: rust c
# KUnit runs at load here (the harness switches it off elsewhere): the first device must still
# get index 0 with the suites' fake devices registered before it (issue 16, item 9).
# kunit: yes

dev=/sys/class/infiniband/mlx5_0
port=$dev/ports/1

check "load the stack" load_stack
wait_for "mlx5_0 is registered" 20 '^mlx5_0$' ls /sys/class/infiniband
# The index: the first device is 0, and, as C's xa_alloc_cyclic, indices are not reused at once
# (1 after an mlx5_ib reload) and start at 0 again with a fresh ib_core (checked below).
dev_index_is() {
	check_output "rdma dev show: the device line, index $1$2" \
		"^$1: mlx5_0: node_type ca fw 16\\.35\\.2000 node_guid 0002:c903:0000:0100 sys_image_guid 0002:c903:0000:0100 *\$" \
		rdma dev show
	check_output "rdma -j dev show: ifindex $1$2" "^\\[\\{\"ifindex\":$1,\"ifname\":\"mlx5_0\"," \
		rdma -j dev show
}
dev_index_is 0
check_output "rdma link show: the port line" \
	'^link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 6 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP *$' \
	rdma link show
check_output "rdma -d dev show: adaptive moderation on, as mlx5 sets it" 'adaptive-moderation on' rdma -d dev show

# file expected-value: one check per sysfs file.
sysfs_is() {
	check_output "sysfs ${1#/sys/class/infiniband/}: $2" "^$2\$" cat "$1"
}
sysfs_is $dev/node_type '1: CA'
sysfs_is $dev/node_guid '0002:c903:0000:0100'
sysfs_is $dev/sys_image_guid '0002:c903:0000:0100'
sysfs_is $dev/fw_ver '16\.35\.2000'
sysfs_is $dev/node_desc 'MT4119 ConnectX5   Mellanox Technologies'
sysfs_is $dev/hca_type 'MT4119'
sysfs_is $dev/hw_rev '0'
sysfs_is $dev/board_id 'MT_0000000008'
sysfs_is $dev/reg_pages '0'
check_output "sysfs mlx5_0/fw_pages: the pages firmware holds, as debugfs counts them" \
	"^$(cat /sys/kernel/debug/mlx5/$(basename "$(readlink -f $dev/device)")/pages/fw_pages_total)\$" \
	cat $dev/fw_pages
check_output "firmware holds pages" '^[1-9][0-9]*$' cat $dev/fw_pages
sysfs_is $port/state '4: ACTIVE'
sysfs_is $port/phys_state '5: LinkUp'
sysfs_is $port/lid '0x6'
sysfs_is $port/sm_lid '0x1'
sysfs_is $port/lid_mask_count '0'
sysfs_is $port/sm_sl '0'
sysfs_is $port/cap_mask '0x2651e848'
sysfs_is $port/rate '100 Gb/sec \(4X EDR\)'
sysfs_is $port/link_layer 'InfiniBand'
sysfs_is $port/gids/0 'fe80:0000:0000:0000:0002:c903:0000:0101'
sysfs_is $port/gids/1 'fe80:0000:0000:0000:0000:0000:0000:0000'
sysfs_is $port/pkeys/0 '0xffff'
sysfs_is $port/pkeys/1 '0x0000'
sysfs_is $port/gid_attrs/types/0 'IB/RoCE v1'
# Network namespaces (C's class namespace hooks and compat devices): a sysfs mounted in another
# namespace shows the device, its files and ports, while devices are shared (the default mode),
# follows a rename, and shows no device in exclusive mode, where the initial namespace still
# does. The mode changes only once the other namespace is gone (EBUSY before).
in_netns() {
	unshare -n -m --propagation private sh -c "mount -t sysfs sysfs /sys && $1"
}
check_output "another namespace's sysfs: the device (shared mode)" '^mlx5_0$' \
	in_netns 'ls /sys/class/infiniband'
check_output "another namespace's sysfs: its node_guid and port state" \
	'^0002:c903:0000:0100,4: ACTIVE,$' \
	in_netns "cat $dev/node_guid $port/state | tr '\\n' ','"
check_output "another namespace's sysfs: the device sits on the PCI function there too" \
	'/0000:[0-9a-f:.]+/infiniband/mlx5_0$' in_netns "readlink -f $dev"
check_output "a rename made there reaches its sysfs" '^mlx5_9$' \
	in_netns 'rdma dev set mlx5_0 name mlx5_9 && ls /sys/class/infiniband'
check_output "and the initial namespace's" '^mlx5_9$' ls /sys/class/infiniband
check "the name back" rdma dev set mlx5_9 name mlx5_0
wait_for "exclusive mode once the namespaces are gone" 20 '^netns exclusive ' \
	sh -c 'rdma sys set netns exclusive >/dev/null 2>&1; rdma sys show'
check_output "another namespace's sysfs: no device (exclusive mode)" '^0$' \
	in_netns 'ls /sys/class/infiniband | wc -l'
check_output "the initial namespace's: the device" '^mlx5_0$' ls /sys/class/infiniband
wait_for "back to shared mode" 20 '^netns shared ' \
	sh -c 'rdma sys set netns shared >/dev/null 2>&1; rdma sys show'
check_output "another namespace's sysfs: the device again" '^mlx5_0$' \
	in_netns 'ls /sys/class/infiniband'
# Port changes: C's mlx5_ib turns them into IB events and logs nothing for a port the device has
# (mlx5_ib_handle_event warns only of an event on a port it does not have); ib_core's port cache
# refreshes the port on PORT_ERR and PORT_ACTIVE and logs a change of state (cache.c:
# ibdev_info "Port: %d Link %s", prefixed with the parent's driver and name and the device's
# name). Registration logs no state (the cache starts from nothing, as C's).
bdf=$(basename "$(cx_device)")
link_lines() {
	dmesg | grep -E "^\[ *[0-9.]+\] mlx5_core $bdf mlx5_0: Port: 1 Link [A-Z_]+\$" | sed 's/^\[[^]]*\] //'
}
check_output "registration logged no port state" '^0$' sh -c "dmesg | grep -c 'Port: [0-9]* Link' || true"
mark=$(dmesg | wc -l)
check_output "model: port 1 down" '^ok port 1 down$' model_ctl port 1 down
wait_for "sysfs port state follows: 1: DOWN" 10 '^1: DOWN$' cat $port/state
wait_for "ib_core logs it as C: mlx5_0: Port: 1 Link DOWN" 10 'mlx5_0: Port: 1 Link DOWN$' link_lines
check_output "model: port 1 up" '^ok port 1 up$' model_ctl port 1 up
wait_for "sysfs port state follows: 4: ACTIVE" 10 '^4: ACTIVE$' cat $port/state
wait_for "ib_core logs it as C: mlx5_0: Port: 1 Link ACTIVE" 10 'mlx5_0: Port: 1 Link ACTIVE$' link_lines
check_output "one line per change, in order: DOWN then ACTIVE" '^DOWN,ACTIVE,$' \
	sh -c "dmesg | grep -oE 'mlx5_0: Port: 1 Link [A-Z_]+' | sed 's/.* Link //' | tr '\n' ','"
sleep 1
check "mlx5_ib logs nothing about the port going down and up (as C's mlx5_ib)" \
	sh -c "! dmesg | tail -n +$((mark + 1)) | grep -iE '(mlx5_ib|infiniband mlx5_0).*(port|link)'"
check_output "the device sits on the PCI function" '/0000:[0-9a-f:.]+/infiniband/mlx5_0$' \
	readlink -f $dev
check "unload mlx5_ib" rmmod mlx5_ib
check "mlx5_0 is gone" test ! -e $dev
check "load mlx5_ib again" insmod "$stack_dir/mlx5_ib.ko"
wait_for "mlx5_0 is registered again" 20 '^mlx5_0$' ls /sys/class/infiniband
dev_index_is 1 " after an mlx5_ib reload"
check "the stack unloads" unload_stack
check "load the stack again" load_stack
wait_for "mlx5_0 is registered with a fresh ib_core" 20 '^mlx5_0$' ls /sys/class/infiniband
dev_index_is 0 " after an ib_core reload"
check "the stack unloads again" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

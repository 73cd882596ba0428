# c-abi-rxe-2vm: C's soft-RoCE driver (rdma_rxe.ko, the same file on both stacks) on the Rust
# core (issue "ib_core's C ABI", step 4: C drivers; docs/c-abi.md). VM 0 runs the Rust stack,
# VM 1 the C stack, joined by their virtio-net link. On each, `rdma link add rxe0 type rxe
# netdev <the NIC>` loads rdma_rxe through the link type's alias (`rdma-link-rxe`) and registers
# rxe0: a C driver's device allocated with `_ib_alloc_device`, its ops set with
# `ib_set_device_ops`, its port's net device set with `ib_device_set_netdev` and registered with
# `ib_register_device`, which the Rust core drives through the driver's ops table. What `rdma
# link`, `rdma dev` and sysfs show of it is compared with the C VM's (the lines both print, with
# the NIC's name, MAC and addresses replaced); then `rdma link delete`, a second device
# removed by `rmmod rdma_rxe` (C's `ib_unregister_driver`), and the stack unloads clean.
# vms: 2
# vm-stacks: rust c
# timeout: 600
# install-modules: yes udp_tunnel ip6_udp_tunnel rdma_rxe

check "load the stack" load_stack
meet net-up
NIC=$(net_ifname "$NET_MAC")
check "the NIC is $NIC" sh -c "[ -n '$NIC' ]"
check "rdma link add rxe0 type rxe netdev $NIC" rdma link add rxe0 type rxe netdev "$NIC"
check "rdma_rxe was loaded through its alias" grep -q '^rdma_rxe ' /proc/modules
echo "# rdma link show rxe0/1:"; rdma link show rxe0/1 | sed 's/^/#   /'
echo "# rdma -d link show rxe0/1:"; rdma -d link show rxe0/1 | sed 's/^/#   /'
echo "# rdma dev show rxe0:"; rdma dev show rxe0 | sed 's/^/#   /'
echo "# rdma -d dev show rxe0:"; rdma -d dev show rxe0 | sed 's/^/#   /'
echo "# sysfs:"
for f in node_type node_guid sys_image_guid node_desc fw_ver hw_rev hca_type parent ports/1/state ports/1/phys_state ports/1/link_layer ports/1/rate ports/1/lid ports/1/cap_mask ports/1/gids/0 ports/1/gids/1 ports/1/gid_attrs/types/0 ports/1/gid_attrs/ndevs/0; do
	printf '#   %s: %s\n' "$f" "$(cat /sys/class/infiniband/rxe0/$f 2>&1)"
done
ls /sys/class/infiniband/rxe0 | sed 's/^/#   ls: /'
readlink -f /sys/class/infiniband/rxe0 | sed 's/^/#   path: /'
dmesg | grep -i rxe | sed 's/^/#   dmesg: /'
echo "# refcnt with rxe0: $(cat /sys/module/rdma_rxe/refcnt) holders: $(ls /sys/module/rdma_rxe/holders | tr '\n' ' ')"
check "rdma link delete rxe0" rdma link delete rxe0
echo "# refcnt without: $(cat /sys/module/rdma_rxe/refcnt)"
check "rxe0 is gone" sh -c '! rdma dev show rxe0'
check "rdma link add rxe1 type rxe netdev $NIC" rdma link add rxe1 type rxe netdev "$NIC"
check "rmmod rdma_rxe with rxe1 registered" rmmod rdma_rxe
check "rxe1 is gone" sh -c '! rdma dev show rxe1'
meet done
check "unload the stack" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

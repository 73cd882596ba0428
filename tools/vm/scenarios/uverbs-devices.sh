# uverbs-devices: the user-verbs character device of mlx5_0 as libibverbs finds it, the same on
# both stacks (issue 17, first part: ib_uverbs's device, not yet the verbs behind it):
#   - /sys/class/infiniband_verbs/abi_version is 6; uverbs0's ibdev, abi_version (mlx5's 1) and
#     dev (231:192); /dev/infiniband/uverbs0 is that character device with mode 0666; uverbs0
#     sits below mlx5_0's parent, the PCI function;
#   - netlink's GET_CHARDEV for "uverbs", sent as libibverbs sends it: one reply with the driver id
#     (mlx5: 1), the device number, the ABI and the name, in C's order, and no ACK after it; for an
#     unknown client EOPNOTSUPP;
#   - ibv_devices lists mlx5_0 with its node GUID; the node opens; over 500 malformed requests
#     (tools/uverbs-badinput: ioctl headers, unknown objects and methods; write() headers of
#     every command, holes and numbers past C's table, extended headers; the attributes of the
#     device's methods and ASYNC_EVENT_ALLOC; mlx5's GET_CONTEXT request; ports, GID indices,
#     EX_QUERY_DEVICE requests and non-zero tails with a context) get C's errnos;
#   - with the node held open, mlx5_ib unloads (the file loses the device; nothing waits for
#     it), uverbs0 goes and comes back with mlx5_0, now device 1: GET_CHARDEV of index 1 names
#     uverbs0, of index 0 gets EINVAL;
#   - rust only: ib_uverbs unloads on its own and netlink's GET_CHARDEV loads it again through
#     its alias rdma-client-uverbs (C's mlx5_ib links against C's ib_uverbs, which therefore
#     cannot be unloaded before it there);
#   - the stack unloads; dmesg clean; kmemleak clean on rust (C 7.3 leaks the task of a process
#     that registered MRs, so the c run skips the scan).
# stacks: rust c
# install-modules: yes
# timeout: 400

uv=/sys/class/infiniband_verbs
check "load the stack" load_stack
wait_for "mlx5_0 is registered as device 0" 30 '^0: mlx5_0: ' rdma dev show
check_output "ib_uverbs is loaded" '^ib_uverbs ' cat /proc/modules
check_output "the class's abi_version is 6" '^6$' cat $uv/abi_version
check_output "uverbs0 serves mlx5_0" '^mlx5_0$' cat $uv/uverbs0/ibdev
check_output "with mlx5's user-verbs ABI, 1" '^1$' cat $uv/uverbs0/abi_version
check_output "its device number is 231:192" '^231:192$' cat $uv/uverbs0/dev
check_output "/dev/infiniband/uverbs0 is that character device, mode 0666" \
	'^character special file e7:c0 666$' stat -c '%F %t:%T %a' /dev/infiniband/uverbs0
check_output "uverbs0 sits below mlx5_0's parent (the PCI function)" '^same$' \
	sh -c "[ \"\$(readlink -f $uv/uverbs0/device)\" = \"\$(readlink -f /sys/class/infiniband/mlx5_0/device)\" ] && echo same"
check "mlx5_0's parent lists it" test -d /sys/class/infiniband/mlx5_0/device/infiniband_verbs/uverbs0
check_output "GET_CHARDEV uverbs: driver id 1, 231:192, ABI 1, uverbs0, in C's order, no ACK" \
	'^reply flags 0x0;attr 73 u32 1;attr 72 u64 0xe7c0;attr 71 u64 0x1;attr 70 str uverbs0;$' \
	sh -c 'rdma_nl_tester chardev 0 uverbs | tr "\n" ";"'
check_output "GET_CHARDEV of an unknown client: EOPNOTSUPP" '^error EOPNOTSUPP;$' \
	sh -c 'rdma_nl_tester chardev 0 nosuchclient | tr "\n" ";"'
guid=$(sed 's/://g' /sys/class/infiniband/mlx5_0/node_guid)
check_output "ibv_devices lists mlx5_0 with its node GUID ($guid)" "^[[:space:]]+mlx5_0[[:space:]]+$guid\$" ibv_devices
check "uverbs0 opens for reading and writing" sh -c 'exec 3<>/dev/infiniband/uverbs0'
# tools/uverbs-badinput: the ioctl header's checks in C's order and unknown objects and methods.
check_output "706 malformed requests get C's errnos" '^uverbs_badinput: 706 passed, 0 failed$' sh -c 'uverbs_badinput | grep -v "^ok "'

# The node held open while the RDMA device goes away.
sleep 600 <>/dev/infiniband/uverbs0 &
holder=$!
check "a process holds uverbs0 open" sh -c "ls -l /proc/$holder/fd | grep -q uverbs0"
check "mlx5_ib unloads while uverbs0 is open" rmmod mlx5_ib
check "uverbs0 is gone with mlx5_0" sh -c "! test -e $uv/uverbs0 && ! test -e /dev/infiniband/uverbs0 && ! test -e /sys/class/infiniband/mlx5_0"
check "the holder closes it" sh -c "kill $holder; wait $holder 2>/dev/null; true"
check "mlx5_ib loads again" load_stack mlx5_ib
wait_for "uverbs0 is back for mlx5_0" 30 '^mlx5_0$' cat $uv/uverbs0/ibdev

# mlx5_0 has a new index now (1: C's cyclic allocation).
idx=$(rdma dev show | sed -n 's/^\([0-9]*\): mlx5_0: .*/\1/p')
check_output "mlx5_0 came back as device 1" '^1$' echo "$idx"
check_output "GET_CHARDEV of the new mlx5_0 names uverbs0 again" \
	'^reply flags 0x0;attr 73 u32 1;attr 72 u64 0xe7c0;attr 71 u64 0x1;attr 70 str uverbs0;$' \
	sh -c "rdma_nl_tester chardev $idx uverbs | tr '\n' ';'"
check_output "GET_CHARDEV of the old index: EINVAL" '^error EINVAL;$' \
	sh -c 'rdma_nl_tester chardev 0 uverbs | tr "\n" ";"'

if [ "$STACK" = rust ]; then
	check "rust: ib_uverbs unloads on its own" rmmod ib_uverbs
	check "rust: uverbs0 and the class are gone" sh -c "! test -e $uv && ! test -e /dev/infiniband/uverbs0"
	check_output "rust: GET_CHARDEV loads ib_uverbs through rdma-client-uverbs and answers" \
		'^reply flags 0x0;attr 73 u32 1;attr 72 u64 0xe7c0;attr 71 u64 0x1;attr 70 str uverbs0;$' \
		sh -c "rdma_nl_tester chardev $idx uverbs | tr '\n' ';'"
	check_output "rust: ib_uverbs is loaded again" '^ib_uverbs ' cat /proc/modules
fi

check "the stack unloads" unload_stack
check "nothing of it stays loaded" sh -c '! grep -E "^(ib_core|ib_uverbs|mlx5_core|mlx5_ib) " /proc/modules'
# C 7.3 leaks the task of uverbs_badinput once its MR cases ran (task_struct, signal_struct,
# creds and exec state stay referenced after it exited; seen on every run, not without the MR
# cases): kmemleak is checked on rust only.
if [ "$STACK" = rust ]; then
	kmemleak_clean "rust: kmemleak finds no leak"
fi
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

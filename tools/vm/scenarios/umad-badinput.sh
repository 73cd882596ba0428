# umad-badinput: malformed and edge-case use of /dev/infiniband/umad0, with C's errnos on both
# stacks (tools/umad-badinput, issue 14):
#   - ioctls: ENABLE_PKEY (0 before any agent, EINVAL after one), an unknown ioctl (ENOTTY),
#     REGISTER_AGENT with a bad QP, class version, class for the QP, vendor class without OUI,
#     RMPP on a class without it (EINVAL), a method another agent owns (EINVAL), a 33rd agent
#     (ENOMEM); REGISTER_AGENT2 with an unknown flag (EINVAL, the known flags written back) or a
#     wide OUI (EINVAL); UNREGISTER_AGENT of id 40 and of an agent twice (EINVAL);
#   - write(): shorter than the header and RMPP header, agent id 32 (EINVAL), an agent never
#     registered (EIO), a MAD over 256 bytes (EINVAL), a request repeating one in flight (EINVAL);
#   - read(): shorter than the header (EINVAL), too short for the queued MAD (EINVAL, the packet
#     kept), a non-blocking read of an empty queue (EAGAIN); the response's header (agent id,
#     status, length, QP, LID, TID); poll (POLLOUT only when empty);
#   - a request nobody answers comes back after its retries as an ETIMEDOUT packet of the header
#     and the MAD's first 24 bytes;
#   - issm0 held by a process sets the port's IsSM capability (sysfs cap_mask, ibstat), a second
#     non-blocking open gets EAGAIN, the close clears it again;
#   - with the file open and an agent registered, mlx5_ib unloads: read and write EIO,
#     REGISTER_AGENT EPIPE, UNREGISTER_AGENT EINVAL, poll POLLERR, close 0;
#   - the stack unloads; dmesg and kmemleak are clean.
# stacks: rust c
# timeout: 400

check "load the stack" load_stack
wait_for "mlx5_0's port is ACTIVE" 30 '^4: ACTIVE$' cat /sys/class/infiniband/mlx5_0/ports/1/state
lid=$(($(cat /sys/class/infiniband/mlx5_0/ports/1/lid)))
umad_badinput /dev/infiniband/umad0 $lid >/tmp/umad.out 2>&1
check_output "umad_badinput: 50 malformed or edge-case uses get C's errnos and results" \
	'^umad_badinput: 50 passed, 0 failed$' tail -n 1 /tmp/umad.out
sed -n 's/^/# /p' /tmp/umad.out | grep -v '^# ok '

# issm0: while a subnet manager holds it, the port reports IsSM (PortInfo.CapabilityMask bit 1,
# through the driver: C's PCAP register write); one holder at a time.
cap=/sys/class/infiniband/mlx5_0/ports/1/cap_mask
before=$(cat $cap)
sleep 600 <>/dev/infiniband/issm0 &
sm=$!
wait_for "with issm0 held the port reports IsSM (cap_mask bit 1)" 30 '^0x[0-9a-f]*[2367abef]$' cat $cap
check_output "ibstat shows the same capability mask" "Capability mask: $(cat $cap)\$" ibstat
check_output "a second, non-blocking open of issm0: EAGAIN" '^umad_badinput: 1 passed, 0 failed$' \
	sh -c 'umad_badinput --issm-busy /dev/infiniband/issm0 | tail -n 1'
check "the holder closes issm0" sh -c "kill $sm; wait $sm 2>/dev/null; true"
wait_for "and IsSM is cleared again ($before)" 30 "^$before\$" cat $cap

umad_badinput --removed /dev/infiniband/umad0 /tmp/umad.ready /tmp/umad.go >/tmp/umad.removed 2>&1 &
holder=$!
wait_for "a process holds umad0 with an agent registered" 30 '^ready$' sh -c 'test -e /tmp/umad.ready && echo ready'
check "mlx5_ib unloads while umad0 is open" rmmod mlx5_ib
check "umad0 and issm0 are gone with mlx5_0" sh -c '! test -e /sys/class/infiniband_mad/umad0 && ! test -e /sys/class/infiniband_mad/issm0 && ! test -e /dev/infiniband/umad0'
touch /tmp/umad.go
wait $holder
check_output "the open file: EIO, EPIPE, EINVAL, POLLERR, as C" '^umad_badinput: 6 passed, 0 failed$' tail -n 1 /tmp/umad.removed
sed -n 's/^/# /p' /tmp/umad.removed | grep -v '^# ok '
check "mlx5_ib loads again" load_stack mlx5_ib
wait_for "umad0 is back for mlx5_0" 30 '^mlx5_0$' cat /sys/class/infiniband_mad/umad0/ibdev
check "the stack unloads" unload_stack
check "nothing of it stays loaded" sh -c '! grep -E "^(ib_core|ib_umad|mlx5_core|mlx5_ib) " /proc/modules'
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

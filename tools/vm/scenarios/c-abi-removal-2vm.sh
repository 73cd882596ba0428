# c-abi-removal-2vm: devices removed under C users (issue "ib_core's C ABI": removal under C
# users; docs/c-abi.md). VM 0 runs the Rust stack, VM 1 the C stack, joined by their
# virtio-net link, each with rxe0 on eth0, C's connection managers (ib_cm, iw_cm, rdma_cm,
# rdma_ucm) and NVMe over RDMA both ways (each VM exports a null_blk namespace with nvmet-rdma
# and is connected to the other's with nvme-rdma). While rping runs both ways (its data
# verified) and each VM's NVMe host writes, reads back and compares 4 MiB again and again, VM 0:
#   1. `rmmod mlx5_ib`, then loads it again: the C clients (ib_cm, rdma_cm, nvme-rdma,
#      nvmet-rdma) get their remove and add for mlx5_0 (ib_cm's counter groups go from mlx5_0's
#      port and come back), and the traffic on rxe0 goes on;
#   2. unbinds the ConnectX function from mlx5_core and binds it again: the same;
#   3. `rdma link delete rxe0`: every C user of rxe0 gets its remove (rdma_cm's device removal
#      event, which rdma_ucm hands to rping; nvme-rdma deletes its controller; nvmet-rdma's
#      listener and queues go), the command returns, rping exits with the error it exits with on
#      C, the NVMe namespace goes and its I/O fails; on VM 1 the peer's rping connections see
#      the disconnect (ib_cm's DREQ) and end as on C, and its NVMe host is disconnected by hand.
# While the loads run, `rdma res show cm_id` lists on each VM what C lists.
# Then everything unloads on both VMs, kmemleak (rust) and dmesg are clean. The expectations
# were recorded from two C VMs (--vm-stacks "c c").
# vms: 2
# vm-stacks: rust c
# timeout: 600
# install-modules: yes udp_tunnel ip6_udp_tunnel rdma_rxe null_blk nvme-core nvme-fabrics nvme-rdma nvmet nvmet-rdma

N=$((VM_INDEX + 1))
OWN=10.23.0.$N
NQN=nqn.2026-12.io.rdma-rs:removal-$N
PEER_NQN=nqn.2026-12.io.rdma-rs:removal-$((3 - N))
dev=$(cx_device)
bdf=$(basename "$dev")

check "load the stack" load_stack
meet net-up
check "eth0's MTU 9000" ip link set eth0 mtu 9000
check "rdma link add rxe0 type rxe netdev eth0" rdma link add rxe0 type rxe netdev eth0
check "insmod ib_cm, iw_cm, rdma_cm, rdma_ucm (C's; configfs first)" \
	sh -c "{ [ -d /sys/module/configfs ] || insmod $stack_dir/configfs.ko; } && insmod $stack_dir/ib_cm.ko && insmod $stack_dir/iw_cm.ko && insmod $stack_dir/rdma_cm.ko && insmod $stack_dir/rdma_ucm.ko"

# NVMe over RDMA both ways: this VM's export, then a connection to the other's.
check "NVMe/RDMA: nvmet-rdma exports a null_blk namespace on $OWN:4420" nvme_target_up $NQN $OWN
meet nvme-up
# Admin and I/O commands time out after 10 s rather than 60 (nvme-core's parameters): a host
# whose device goes shuts its controller down with a property write that no answer reaches.
check "NVMe/RDMA: modprobe nvme-rdma, command timeouts 10 s" sh -c \
	"modprobe nvme-rdma && echo 10 >/sys/module/nvme_core/parameters/admin_timeout && echo 10 >/sys/module/nvme_core/parameters/io_timeout"
check "NVMe/RDMA: connect to the other VM's namespace ($PEER_IP:4420) over rxe0" \
	sh -c "echo transport=rdma,traddr=$PEER_IP,trsvcid=4420,nqn=$PEER_NQN >/dev/nvme-fabrics"
wait_for "NVMe/RDMA: the namespace appears" 20 'nvme0n1' ls /sys/block

# The loads. io_loop: 4 MiB of random data written to the namespace with direct I/O, read back
# and compared, round after round, until an error; the rounds done in /tmp/io-rounds, how it
# ended in /tmp/io-end. The namespace is opened once (fd 3) and reopened through
# /proc/self/fd/3 by each dd: once the disk is deleted that fails, where its device node's path
# would let busybox dd write a regular file in its place.
io_loop() {
	head -c 4194304 /dev/urandom >/tmp/io-pattern
	exec 3</dev/nvme0n1
	_n=0
	echo 0 >/tmp/io-rounds
	while dd if=/tmp/io-pattern of=/proc/self/fd/3 bs=1M count=4 oflag=direct 2>/tmp/io-err &&
		dd if=/proc/self/fd/3 of=/tmp/io-back bs=1M count=4 iflag=direct 2>/tmp/io-err; do
		if ! cmp -s /tmp/io-pattern /tmp/io-back; then
			echo "round $((_n + 1)): the data read back differs" >/tmp/io-end
			return 1
		fi
		_n=$((_n + 1))
		echo $_n >/tmp/io-rounds
	done
	echo "stopped after $_n rounds: $(grep -v records /tmp/io-err 2>/dev/null | tail -n 1)" >/tmp/io-end
}
# pings FILE: how many pings an `rping -v` client has printed into FILE.
pings() {
	_c=$(grep -c 'ping data: rdma-ping-' "$1" 2>/dev/null)
	echo "${_c:-0}"
}
# advances SECS CMD...: succeeds once CMD prints a number greater than it printed at the call,
# within SECS seconds.
advances() {
	_secs=$1
	shift
	_from=$("$@")
	_tries=$((_secs * 5))
	while [ $_tries -gt 0 ]; do
		_now=$("$@")
		if [ "$_now" -gt "$_from" ]; then
			echo "$_from -> $_now"
			return 0
		fi
		sleep 0.2
		_tries=$((_tries - 1))
	done
	echo "still $_from after $_secs s"
	return 1
}
rounds() { cat /tmp/io-rounds 2>/dev/null || echo 0; }
# going SECS: the three loads all make progress: this VM's NVMe rounds, its rping client's pings
# and the pings of the peer's client that this VM's server answers.
going() {
	advances "$1" rounds && advances "$1" pings /tmp/rping-client && advances "$1" pings /tmp/rping-server
}

# rping both ways, without a count (until an error): each VM's server first, then each client.
rping -s -a $OWN -p 7176 -S 64 -v -V >/tmp/rping-server 2>&1 &
rping_server=$!
check "rping: the server listens on $OWN" sh -c "sleep 1; kill -0 $rping_server"
meet rping-listening
rping -c -a $PEER_IP -p 7176 -S 64 -v -V >/tmp/rping-client 2>&1 &
rping_client=$!
io_loop &
io=$!
check_output "the loads run: NVMe rounds, pings sent, pings answered" ' -> ' going 60
meet loads-running
# The rdma_cm IDs on rxe0 as `rdma res show cm_id` lists them (C's restrack entries of
# rdma_cm's IDs: the listeners, each connection's ID on either end, the module or the task that
# owns it; a connection accepted by a user listener is the listener's task's). Sorted, with the
# ids, QP numbers, pids and ephemeral ports taken out (they follow the order the two VMs'
# connections happened in).
cm_ids() {
	rdma res show cm_id | sed -E 's/ +$//; s/cm-idn [0-9]+ //; s/lqpn [0-9]+ //; s/pid [0-9]+ /pid P /;
		s/:(4420|7176|0)( |$)/:K\1\2/g; s/:[0-9]+( |$)/:E\1/g; s/:K/:/g' | sort
}
CM_IDS=$(printf '%s\n' \
	"link rxe0/1 qp-type RC state CONNECT ps TCP comm [nvme_rdma] src-addr $OWN:E dst-addr $PEER_IP:4420" \
	"link rxe0/1 qp-type RC state CONNECT ps TCP comm [nvme_rdma] src-addr $OWN:E dst-addr $PEER_IP:4420" \
	"link rxe0/1 qp-type RC state CONNECT ps TCP comm [nvmet_rdma] src-addr $OWN:4420 dst-addr $PEER_IP:E" \
	"link rxe0/1 qp-type RC state CONNECT ps TCP comm [nvmet_rdma] src-addr $OWN:4420 dst-addr $PEER_IP:E" \
	"link rxe0/1 qp-type RC state CONNECT ps TCP pid P comm rping src-addr $OWN:7176 dst-addr $PEER_IP:E" \
	"link rxe0/1 qp-type RC state CONNECT ps TCP pid P comm rping src-addr $OWN:E dst-addr $PEER_IP:7176" \
	"link rxe0/1 state LISTEN ps TCP comm [nvmet_rdma] src-addr $OWN:4420 dst-addr 0.0.0.0:0" \
	"link rxe0/1 state LISTEN ps TCP pid P comm rping src-addr $OWN:7176 dst-addr 0.0.0.0:0" | sort)
got=$(cm_ids)
[ "$got" = "$CM_IDS" ]
ktap_result $? "rdma res show cm_id: the listeners and both ends of every connection, their owners, as on C" \
	"expected:
$CM_IDS
got:
$got
raw:
$(rdma res show cm_id)"
check_output "rdma res show rxe0: 8 cm_ids counted" 'cm_id 8 ' rdma res show rxe0

if [ "$VM_INDEX" = 0 ]; then
	# 1. mlx5_ib goes and comes back under the C clients.
	check "sysfs: ib_cm's counter groups on mlx5_0's port" test -d /sys/class/infiniband/mlx5_0/ports/1/cm_rx_msgs
	check "rmmod mlx5_ib under ib_cm, rdma_cm, nvme-rdma and nvmet-rdma" rmmod mlx5_ib
	check "mlx5_0 is gone" sh -c '! rdma dev show mlx5_0 2>/dev/null'
	check_output "the loads on rxe0 go on" ' -> ' going 30
	check "insmod mlx5_ib again" insmod $stack_dir/mlx5_ib.ko
	wait_for "mlx5_0 is back" 30 'mlx5_0' rdma dev show
	wait_for "ib_cm added mlx5_0 again: its counter groups on the port" 10 'cm_rx_msgs' \
		ls /sys/class/infiniband/mlx5_0/ports/1
	check_output "the loads on rxe0 go on" ' -> ' going 30
	# 2. The ConnectX function unbound from mlx5_core and bound again.
	check "PCI unbind of $bdf under the C clients" sh -c "echo $bdf >/sys/bus/pci/drivers/mlx5_core/unbind"
	check "mlx5_0 is gone" sh -c '! rdma dev show mlx5_0 2>/dev/null'
	check_output "the loads on rxe0 go on" ' -> ' going 30
	check "PCI bind of $bdf" sh -c "echo $bdf >/sys/bus/pci/drivers/mlx5_core/bind"
	wait_for "mlx5_0 is back" 30 'mlx5_0' rdma dev show
	wait_for "ib_cm added mlx5_0 again: its counter groups on the port" 10 'cm_rx_msgs' \
		ls /sys/class/infiniband/mlx5_0/ports/1
	check_output "the loads on rxe0 go on" ' -> ' going 30
	# 3. rxe0 deleted under its C users.
	# C's nvme-rdma shuts its controller down first (a property write over the going device,
	# which times out: 10 s here), so the command takes that long on both stacks.
	t0=$(host_clock_ms)
	check "rdma link delete rxe0 under rping and NVMe I/O" timeout 90 rdma link delete rxe0
	t1=$(host_clock_ms)
	echo "# rdma link delete rxe0 took $(((t1 - t0) / 1000)) s (host clock)"
	check "rxe0 is gone" sh -c '! rdma dev show rxe0 2>/dev/null'
fi
meet removed
# exits <pid> <what> <output file> <status>: the process ends within 30 s with that status; its
# output (without the pings) goes to the log. (Killed if it did not end.)
exits() {
	wait_for "$2 exits" 30 'exited' sh -c "kill -0 $1 2>/dev/null || echo exited"
	kill -9 "$1" 2>/dev/null
	wait "$1"
	_rc=$?
	printf '# %s (exit %s):\n%s\n' "$2" "$_rc" "$(grep -v 'ping data' "$3" | sed 's/^/#   /')"
	[ "$_rc" = "$4" ]
	ktap_result $? "$2: exit $4 as on C" "exit $_rc"
}
if [ "$VM_INDEX" = 0 ]; then
	exits $rping_client "rping's client" /tmp/rping-client 255
	exits $rping_server "rping's server" /tmp/rping-server 255
	wait_for "NVMe/RDMA: nvme-rdma deleted its controller" 30 '^gone$' \
		sh -c '[ -e /sys/class/nvme/nvme0 ] || echo gone'
	wait_for "NVMe/RDMA: the I/O loop ends with an error" 30 'stopped after [0-9]+ rounds' cat /tmp/io-end
	check_output "NVMe/RDMA: the kernel log names the removal" 'nvme nvme0: Removing ctrl' dmesg
else
	# The peer's rping connections end when VM 0's rxe0 goes; its NVMe host is disconnected by
	# hand (left alone, it would retry the lost target for ten minutes, each connect waiting out
	# the CM's retries), and its export goes with its own rxe0 (taken down first, C's nvmet
	# reports a lockdep cycle: see c-abi-sw-drivers-2vm).
	exits $rping_client "rping's client" /tmp/rping-client 0
	exits $rping_server "rping's server" /tmp/rping-server 0
	check "NVMe/RDMA: disconnect from the lost target" \
		timeout 60 sh -c 'echo 1 >/sys/class/nvme/nvme0/delete_controller'
	wait_for "NVMe/RDMA: the I/O loop ends with an error" 30 'stopped after [0-9]+ rounds' cat /tmp/io-end
	check "rdma link delete rxe0" timeout 60 rdma link delete rxe0
fi
wait $io
printf '# NVMe I/O: %s\n' "$(cat /tmp/io-end)"
check "NVMe/RDMA: the export is taken down, nvmet-rdma unloads" nvme_target_down $NQN
check "NVMe/RDMA: nvme-rdma unloads" rmmod nvme_rdma nvme_fabrics
check "rmmod rdma_ucm, rdma_cm, iw_cm, ib_cm" rmmod rdma_ucm rdma_cm iw_cm ib_cm
check "rmmod rdma_rxe" rmmod rdma_rxe
meet done
check "unload the stack" unload_stack
[ "$STACK" = rust ] && kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# ibcore-netlink: the Rust ib_core answers iproute2's `rdma` over NETLINK_RDMA as the C ib_core
# does. The test provider registers ibtest0 (one port) and ibtest1 (two ports); every value it
# reports is derived from its parameters (samples/ib_test_provider.rs), and `rdma dev|link|sys|
# res show` (plain, -d, -j) must print all of them in the formats the C stack prints for mlx5_0
# (same fields, same order, same spacing; values differ by device); `rdma res show` counts the
# objects of the sample verbs client while it is loaded; other network namespaces get their
# own socket and see the devices in shared mode only. Then: a rename through
# `rdma dev set` (refused with EEXIST for a name in use; sysfs follows when it is there),
# adaptive moderation on/off, the NOTIFY multicast group sees rename, unregister and register
# events, ib_core cannot be removed while the provider uses it, and nothing leaks.
#
# Port subnet_prefix: C's port cache keeps the prefix of the last GID read at registration
# (cache.c: config_non_roce_gid_cache); the provider's GIDs 1..3 are zero, so C would print
# 0000:0000:0000:0000 for it too.
# stacks: rust

prov="$stack_dir/ib_test_provider.ko"
mon=/tmp/nl-monitor.out

check "load ib_core alone" load_stack ib_core
check "the test provider registers ibtest0 (1 port) and ibtest1 (2 ports)" \
	insmod "$prov" devices=2 ports=2
i0=$(rdma dev show | sed -n 's/^\([0-9]*\): ibtest0: .*/\1/p')
i1=$(rdma dev show | sed -n 's/^\([0-9]*\): ibtest1: .*/\1/p')
ktap_result "$([ -n "$i0" ] && [ -n "$i1" ] && [ "$i1" -gt "$i0" ] && echo 0 || echo 1)" \
	"rdma dev show lists both devices, indices increasing" "$(rdma dev show 2>&1)"

g0=0002:c903:00ab:cd00
g1=0002:c903:00ab:cd01
d0="$i0: ibtest0: node_type ca fw 7\.3\.0 node_guid $g0 sys_image_guid $g0 "
d1="$i1: ibtest1: node_type ca fw 7\.3\.1 node_guid $g1 sys_image_guid $g1 "
check_output "rdma dev show: ibtest0, every field" "^$d0\$" rdma dev show
check_output "rdma dev show: ibtest1, every field" "^$d1\$" rdma dev show
check_output "rdma dev show: nothing else" '^2$' sh -c 'rdma dev show | wc -l'
check_output "rdma dev show ibtest1 (GET doit)" "^$d1\$" rdma dev show ibtest1
check_output "rdma -d dev show: adaptive moderation off, no capability flags" \
	"^${d0}adaptive-moderation off $" rdma -d dev show
check_output "rdma -d dev show: caps line" '^    caps: <>$' rdma -d dev show
j0="{\"ifindex\":$i0,\"ifname\":\"ibtest0\",\"node_type\":\"ca\",\"fw\":\"7.3.0\",\"node_guid\":\"$g0\",\"sys_image_guid\":\"$g0\"}"
j1="{\"ifindex\":$i1,\"ifname\":\"ibtest1\",\"node_type\":\"ca\",\"fw\":\"7.3.1\",\"node_guid\":\"$g1\",\"sys_image_guid\":\"$g1\"}"
check_output "rdma dev show -j" "^\[$j0,$j1\]\$" rdma dev show -j

# Port p of device d: LID 0x100 + 16*d + p, SM LID 1, LMC 0, ACTIVE, LinkUp, cap mask 0x2651e848.
l() { echo "link $1 subnet_prefix 0000:0000:0000:0000 lid $2 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP "; }
check_output "rdma link show: ibtest0/1" "^$(l ibtest0/1 257)\$" rdma link show
check_output "rdma link show: ibtest1/1" "^$(l ibtest1/1 273)\$" rdma link show
check_output "rdma link show: ibtest1/2" "^$(l ibtest1/2 274)\$" rdma link show
check_output "rdma link show: three ports" '^3$' sh -c 'rdma link show | wc -l'
check_output "rdma link show ibtest1/2 (PORT_GET doit)" "^$(l ibtest1/2 274)\$" \
	rdma link show ibtest1/2
caps='    caps: <TRAP, SL_MAP, SYS_IMAGE_GUID, CABLE_INFO, EXTENDED_SPEEDS, CAP_MASK2, CM, VENDOR_CLASS, CAP_MASK_NOTICE, CLIENT_REG, OTHER_LOCAL_CHANGES, MULT_PKER_TRAP>'
check_output "rdma -d link show: the port capability mask, decoded" "^$caps\$" rdma -d link show
check_output "rdma -d link show: a caps line per port" '^3$' \
	sh -c 'rdma -d link show | grep -c "^    caps: "'
lj() { echo "{\"ifindex\":$1,\"ifname\":\"$2\",\"port\":$3,\"subnet_prefix\":\"0000:0000:0000:0000\",\"lid\":$4,\"sm_lid\":1,\"lmc\":0,\"state\":\"ACTIVE\",\"physical_state\":\"LINK_UP\"}"; }
check_output "rdma link show -j" \
	"^\[$(lj $i0 ibtest0 1 257),$(lj $i1 ibtest1 1 273),$(lj $i1 ibtest1 2 274)\]\$" rdma link show -j

check_output "rdma sys show" '^netns shared copy-on-fork on$' rdma sys show
r() { echo "$1: $2: pd 0 cq 0 qp 0 cm_id 0 mr 0 ctx 0 srq 0 comp_cntr 0 "; }
check_output "rdma res show: ibtest0" "^$(r $i0 ibtest0)\$" rdma res show
check_output "rdma res show: ibtest1" "^$(r $i1 ibtest1)\$" rdma res show
rj() { echo "{\"ifindex\":$1,\"ifname\":\"$2\",\"pd\":0,\"cq\":0,\"qp\":0,\"cm_id\":0,\"mr\":0,\"ctx\":0,\"srq\":0,\"comp_cntr\":0}"; }
check_output "rdma res show -j" "^\[$(rj $i0 ibtest0),$(rj $i1 ibtest1)\]\$" rdma res show -j
check_output "rdma res show qp: no QP listed, no error" '^$' sh -c 'rdma res show qp 2>&1'
# The counts come from resource tracking: the sample verbs client makes a PD, a CQ, a QP and an
# MR on every device, and frees them when it unloads.
check "the verbs client loads" insmod "$stack_dir/ib_verbs_client.ko"
rv() { echo "$1: $2: pd 1 cq 1 qp 1 cm_id 0 mr 1 ctx 0 srq 0 comp_cntr 0 "; }
check_output "rdma res show counts the client's objects on ibtest0" "^$(rv $i0 ibtest0)\$" rdma res show
check_output "and on ibtest1" "^$(rv $i1 ibtest1)\$" rdma res show
check "the verbs client unloads" rmmod ib_verbs_client
check_output "rdma res show: back to zero" "^$(r $i1 ibtest1)\$" rdma res show
check_output "rdma stat show: no hardware counters (EINVAL, as C without them)" \
	'error: Invalid argument' sh -c 'rdma stat show 2>&1; true'

# Network namespaces: each gets its own NETLINK_RDMA socket (per-namespace operations); in the
# default shared mode it sees the devices, in exclusive mode it does not; the mode cannot change
# while a namespace other than the initial one exists (EBUSY).
check_output "a new network namespace has its socket and sees the devices (shared mode)" \
	"^$d1\$" unshare -n rdma dev show
unshare -n sleep 3 &
nspid=$!
sleep 1
check_output "the mode cannot change while another namespace exists (EBUSY)" \
	'Device or resource busy' sh -c 'rdma sys set netns exclusive 2>&1; true'
wait $nspid
wait_for "exclusive mode once the namespace is gone" 20 '^netns exclusive ' \
	sh -c 'rdma sys set netns exclusive >/dev/null 2>&1; rdma sys show'
check_output "in exclusive mode a new namespace sees no device" '^0$' \
	sh -c 'unshare -n rdma dev show 2>&1 | wc -l'
wait_for "back to shared mode" 20 '^netns shared ' \
	sh -c 'rdma sys set netns shared >/dev/null 2>&1; rdma sys show'
check_output "the initial namespace sees both devices throughout" '^2$' sh -c 'rdma dev show | wc -l'

# Rename (SET, admin) and the MONITOR events, seen by a listener of RDMA_NL_GROUP_NOTIFY.
rdma_nl_tester monitor 12 >$mon 2>&1 &
monpid=$!
wait_for "a monitor joined RDMA_NL_GROUP_NOTIFY" 5 'listening' cat $mon
check "rdma dev set ibtest0 name nltest0" rdma dev set ibtest0 name nltest0
check_output "the device keeps its index under the new name" \
	"^$i0: nltest0: node_type ca fw 7\.3\.0 node_guid $g0 sys_image_guid $g0 \$" rdma dev show
check_output "the new name answers GET doit" "^$i0: nltest0: " rdma dev show nltest0
check_output "the old name is gone" 'Wrong device name' sh -c 'rdma dev show ibtest0 2>&1; true'
check_output "renaming to a name in use is EEXIST" 'File exists' \
	sh -c 'rdma dev set nltest0 name ibtest1 2>&1; true'
if [ -d /sys/class/infiniband/ibtest1 ]; then
	check "sysfs follows the rename" test -d /sys/class/infiniband/nltest0
	check "the old sysfs name is gone" test ! -e /sys/class/infiniband/ibtest0
else
	ktap_result 0 "sysfs follows the rename # SKIP no /sys/class/infiniband/<dev> in this build"
fi
check "rename back" rdma dev set nltest0 name ibtest0
check_output "ibtest0 is back" "^$d0\$" rdma dev show
check "rdma dev set ibtest1 adaptive-moderation on" rdma dev set ibtest1 adaptive-moderation on
check_output "rdma -d dev show: ibtest1 adaptive moderation on" "^${d1}adaptive-moderation on $" \
	rdma -d dev show
check "rdma dev set ibtest1 adaptive-moderation off" rdma dev set ibtest1 adaptive-moderation off
check_output "rdma -d dev show: ibtest1 adaptive moderation off" "^${d1}adaptive-moderation off $" \
	rdma -d dev show

# The netlink core pins the protocol's module for every open NETLINK_RDMA socket, as in C: the
# provider and the monitor's socket.
check_output "ib_core is pinned by the provider and the monitor's socket" \
	'^ib_core [0-9]+ 2 ib_test_provider,' grep '^ib_core ' /proc/modules
check "rmmod the provider" rmmod ib_test_provider
check_output "no device left" '^$' rdma dev show
check "insmod the provider again" insmod "$prov" devices=2 ports=2
wait $monpid
sed 's/^/mon| /' $mon
ev() { echo "^monitor: event=$1 dev_index=$2 dev_name=$3 seq=0 pid=0\$"; }
check_output "monitor: ibtest0 renamed to nltest0" "$(ev 'rename\(4\)' $i0 nltest0)" cat $mon
check_output "monitor: nltest0 renamed back to ibtest0" "$(ev 'rename\(4\)' $i0 ibtest0)" cat $mon
check_output "monitor: ibtest1 unregistered" "$(ev 'unregister\(1\)' $i1 ibtest1)" cat $mon
check_output "monitor: ibtest0 unregistered" "$(ev 'unregister\(1\)' $i0 ibtest0)" cat $mon
check_output "monitor: ibtest0 and ibtest1 registered again" '^2$' \
	sh -c "grep -cE '^monitor: event=register\(0\) dev_index=[0-9]+ dev_name=ibtest[01] ' $mon"
check_output "monitor: the events in order" \
	'^rename rename unregister unregister register register $' \
	sh -c "sed -n 's/^monitor: event=\([a-z]*\)(.*/\1/p' $mon | tr '\n' ' '"
check_output "rdma dev show after re-registration: two devices" '^2$' sh -c 'rdma dev show | wc -l'

check_output "rmmod ib_core is refused while the provider uses it" 'in use|busy|Resource temporarily' \
	sh -c 'rmmod ib_core 2>&1; exit 0'
check_output "ib_core is still loaded, used by the provider only" \
	'^ib_core [0-9]+ 1 ib_test_provider,' grep '^ib_core ' /proc/modules

check "the provider unloads" rmmod ib_test_provider
check "ib_core unloads once the provider is gone" unload_stack
check "no module of the stack is left" test -z "$(stack_loaded)"
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# ibcore-badinput: malformed RDMA netlink requests against ib_core. rdma_nl_tester
# (tools/rdma-nl-tester) sends over 500 of them (truncated headers, no NLM_F_REQUEST, every
# client and every nldev op, missing/unknown/wrong-size DEV_INDEX and PORT_INDEX, bad DEV_NAME,
# garbage attribute headers, unknown attribute types, admin ops without CAP_NET_ADMIN, dumps
# abandoned mid-way or with a tiny receive buffer, renames) and checks that each gets the errno,
# ACK, reply, dump or silence the C ib_core gives (expectations written from the C code). One
# check per family of cases; then the NOTIFY multicast group reports the device's unregistration
# and registration; then no warning, no oops, no leak.
# stacks: rust c
# timeout: 600

out=/tmp/nl-tester.out
mon=/tmp/nl-monitor.out

if [ "$STACK" = rust ]; then
	check "load ib_core" load_stack ib_core
	check "the test provider registers two devices" \
		insmod "$stack_dir/ib_test_provider.ko" devices=2 ports=2
	provider=ib_test_provider
	provider_args="devices=2 ports=2"
	devname=ibtest0
else
	check "load the C stack" load_stack
	provider=mlx5_ib
	provider_args=
	devname=mlx5_0
fi
wait_for "$devname is registered" 30 "^[0-9]+: $devname: " rdma dev show

timeout 400 rdma_nl_tester >$out 2>&1
rc=$?
sed 's/^/nl| /' $out

# family <prefix> <what>: one result for the cases named "<prefix>: ..."; the failing case lines
# are the diagnostic.
family() {
	_n=$(grep -cE "^(not )?ok [0-9]+ - $1: " $out)
	_bad=$(grep -E "^not ok [0-9]+ - $1: " $out)
	if [ "$_n" -gt 0 ] && [ -z "$_bad" ]; then
		ktap_result 0 "$1: $2 ($_n cases)"
	elif [ "$_n" -eq 0 ]; then
		ktap_result 1 "$1: $2" "rdma_nl_tester (exit $rc) ran no case of this family; its last lines:
$(tail -n 15 $out)"
	else
		ktap_result 1 "$1: $2 ($_n cases)" "$_bad"
	fi
}

family framing "truncated headers, nlmsg_len below 16 or past the datagram, several messages per datagram, seq and pid echoed"
family no-request "messages without NLM_F_REQUEST and control types are only ACKed"
family clients "every client 0..63 with op 1, LS and IWCM ops out of range"
family ops-doit "every nldev op 0..63 as a doit without attributes"
family ops-dump "every nldev op 0..63 as a dump without attributes; dump errors in NLMSG_DONE"
family no-handler "ops without a doit or a dump handler"
family dev-index "DEV_INDEX missing, unknown, 0/1/2/3/5/8 bytes (liberal and strict parse)"
family port-index "PORT_INDEX 0, past the last port, wrong sizes"
family dev-name "DEV_NAME unterminated, empty, too long, wrong type"
family attr-headers "nla_len below 4 or past the end, type 0, NLA_F_NESTED, repeated attributes"
family attr-types "attribute types above ATTR_MAX, fixed-size attributes of the wrong size or type"
family admin "admin ops without CAP_NET_ADMIN: EPERM; other ops still work"
family dump "dumps abandoned mid-way, concurrent dumps (EBUSY), tiny receive buffer"
family rename "rename to the same name, a new name and back, refused names, NET_NS_FD, DEV_DIM"
family handlers "per-handler argument checks (RES, STAT, SYS, NEWLINK, DELLINK, NEWDEV/DELDEV, GET_CHARDEV)"
check_output "rdma_nl_tester: every case passed" 'rdma_nl_tester: [0-9]+ passed, 0 failed$' tail -n 1 $out
check_output "$devname still has its name" "^[0-9]+: $devname: " rdma dev show

# The NOTIFY group sees the device go and come back (nldev.c: rdma_nl_notify_event from
# device.c: enable_device_and_get / disable_device).
rdma_nl_tester monitor 10 >$mon 2>&1 &
monpid=$!
wait_for "the monitor joined RDMA_NL_GROUP_NOTIFY" 5 'listening' cat $mon
check "rmmod $provider" rmmod $provider
check "insmod $provider again" insmod "$stack_dir/$provider.ko" $provider_args
wait_for "$devname is registered again" 30 "^[0-9]+: $devname: " rdma dev show
wait $monpid
sed 's/^/mon| /' $mon
check_output "the monitor saw $devname unregistered" \
	"^monitor: event=unregister\(1\) dev_index=[0-9]+ dev_name=$devname " cat $mon
check_output "the monitor saw $devname registered" \
	"^monitor: event=register\(0\) dev_index=[0-9]+ dev_name=$devname " cat $mon

dmesg_clean "dmesg has no warnings, oopses or lockdep reports"
kmemleak_clean "kmemleak finds no leak"
[ "$STACK" = rust ] && check "the test provider unloads" rmmod ib_test_provider
check "unload the stack" unload_stack
dmesg_clean "dmesg is still clean after unloading"

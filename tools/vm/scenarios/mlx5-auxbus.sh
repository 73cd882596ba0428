# mlx5-auxbus: mlx5_ib reaches the function through the auxiliary bus, as in C. The same checks
# run on both stacks, except where marked (rust) for what the C driver does not log.
#   - mlx5_core creates the auxiliary device mlx5_core.rdma.0 below the PCI function, and mlx5_ib's
#     auxiliary driver, mlx5_ib.rdma, is bound to it;
#   - the device's MODALIAS is auxiliary:mlx5_core.rdma and `modinfo -F alias` of mlx5_ib.ko
#     lists exactly that alias;
#   - unbinding mlx5_ib from the device through sysfs removes mlx5_0 (`rdma dev show` prints
#     nothing, /sys/class/infiniband is empty); port events then reach no driver (rust: mlx5_ib's
#     notifier went with the unbind, having received none); (rust) the test driver, which matches the same devices,
#     binds the free device when loaded and frees it when unloaded;
#   - binding it again brings mlx5_0 back with the same `rdma dev show`/`rdma link show` lines and
#     sysfs values, and (rust) port events reach mlx5_ib's new notifier (its count at unbind: 2);
#   - unbinding the PCI function deletes the device (rust: mlx5_ib is unbound before the HCA is
#     torn down); loading the stack again reuses the number 0; a clean unload, dmesg and
#     kmemleak.
# stacks: rust c

dev=$(cx_device)
bdf=${dev##*/}
adev_dir=/sys/bus/auxiliary/devices
adev=$adev_dir/mlx5_core.rdma.0
ibdrv=mlx5_ib.rdma
drvdir=/sys/bus/auxiliary/drivers/$ibdrv

# What a user sees of mlx5_0 (the device index left out: it moves on every registration).
snapshot() {
	rdma dev show | sed 's/^[0-9]*: //'
	rdma link show
	for f in node_type node_guid sys_image_guid fw_ver node_desc hca_type hw_rev board_id \
		ports/1/state ports/1/lid ports/1/sm_lid ports/1/rate ports/1/gids/0 ports/1/pkeys/0; do
		echo "$f: $(cat /sys/class/infiniband/mlx5_0/$f)"
	done
}

# Counts of port event lines (grep -c exits 1 on a count of 0). mlx5_ib logs no port change (as
# C); it counts those its notifier receives and logs the count when it unbinds.
core_port_lines() {
	dmesg | grep -c "mlx5_core $bdf: port 1 state change: " || true
}

check "load the $STACK stack" load_stack
wait_for "mlx5_0 is registered" 20 '^mlx5_0$' ls /sys/class/infiniband
check "the auxiliary device mlx5_core.rdma.0 exists" test -e $adev
check_output "it sits below the PCI function" "/$bdf/mlx5_core\.rdma\.0\$" readlink -f $adev
check_output "it is bound to mlx5_ib's auxiliary driver, $ibdrv" "/$ibdrv\$" readlink $adev/driver
check_output "the driver lists the device" '^mlx5_core\.rdma\.0$' ls $drvdir
check_output "the device's MODALIAS is auxiliary:mlx5_core.rdma" '^MODALIAS=auxiliary:mlx5_core\.rdma$' \
	cat $adev/uevent
alias=$(sed -n 's/^MODALIAS=//p' $adev/uevent)
# busybox modinfo reads modules.dep first and then opens the files named on its command line that
# it did not find there; an empty one is enough.
mkdir -p /lib/modules/$(uname -r) && touch /lib/modules/$(uname -r)/modules.dep
check_output "modinfo mlx5_ib.ko: alias auxiliary:mlx5_core.rdma" '^auxiliary:mlx5_core\.rdma$' \
	modinfo -F alias "$stack_dir/mlx5_ib.ko"
check "the module's aliases match the device's MODALIAS exactly" \
	sh -c "modinfo -F alias '$stack_dir/mlx5_ib.ko' | grep -Fx '$alias'"
before=$(snapshot)
check_output "mlx5_0's values before unbinding" 'node_guid: 0002:c903:0000:0100' echo "$before"

check "unbind mlx5_ib from mlx5_core.rdma.0 through sysfs" sh -c "echo mlx5_core.rdma.0 > $drvdir/unbind"
check "the device has no driver" test ! -e $adev/driver
check "the device is still there" test -e $adev
check "rdma dev show prints nothing" sh -c 'out=$(rdma dev show) && echo "$out" && test -z "$out"'
check "/sys/class/infiniband is empty" sh -c 'ls /sys/class/infiniband && test -z "$(ls /sys/class/infiniband)"'
if [ "$STACK" = rust ]; then
	check_output "mlx5_ib's unbind dropped its notifier, which had received no port event" \
		"mlx5_ib: detached from $bdf \(1 port\(s\), 0 port event\(s\)\); mlx5_0 unregistered" dmesg
	c=$(core_port_lines)
	check_output "model: port 1 down" '^ok port 1 down$' model_ctl port 1 down
	check_output "model: port 1 up" '^ok port 1 up$' model_ctl port 1 up
	wait_for "mlx5_core sees the port go down and come back (no mlx5_ib notifier now)" 10 \
		"^$((c + 2))\$" core_port_lines
	# The test driver matches the same devices: loaded now, it takes the free one.
	check "load the test driver while the device is free" insmod $stack_dir/mlx5_test_interface.ko
	check_output "the test driver is bound to it (mlx5_test_interface.rdma)" \
		'/mlx5_test_interface\.rdma$' readlink $adev/driver
	check_output "the test driver's probe saw the function" \
		"mlx5_test_interface: add $bdf \(function 0, 1 port\(s\)\)" dmesg
	check "unload the test driver" rmmod mlx5_test_interface
	check_output "its unbind ran" "mlx5_test_interface: remove $bdf after 0 event\(s\)" dmesg
	check "the device is free again" test ! -e $adev/driver
fi

check "bind mlx5_ib to mlx5_core.rdma.0 again through sysfs" sh -c "echo mlx5_core.rdma.0 > $drvdir/bind"
wait_for "mlx5_0 is registered again" 20 '^mlx5_0$' ls /sys/class/infiniband
check_output "the device is bound to $ibdrv again" "/$ibdrv\$" readlink $adev/driver
after=$(snapshot)
ktap_result "$([ "$before" = "$after" ] && echo 0 || echo 1)" \
	"mlx5_0 is back with the same rdma dev/link lines and sysfs values" "before:
$before
after:
$after"
if [ "$STACK" = rust ]; then
	c=$(core_port_lines)
	check_output "model: port 1 down" '^ok port 1 down$' model_ctl port 1 down
	check_output "model: port 1 up" '^ok port 1 up$' model_ctl port 1 up
	wait_for "mlx5_core sees the port go down and come back" 10 "^$((c + 2))\$" core_port_lines
	# (mlx5_core logs a change just before it calls the notifiers.)
	sleep 1
fi

check "unbind the PCI function from mlx5_core" sh -c "echo $bdf > /sys/bus/pci/drivers/mlx5_core/unbind"
check "mlx5_core.rdma.0 went with the function" test ! -e $adev
check "mlx5_0 went with it" sh -c 'ls /sys/class/infiniband && test -z "$(ls /sys/class/infiniband)"'
if [ "$STACK" = rust ]; then
	check_output "mlx5_ib was unbound (mlx5_0 unregistered) before the HCA was torn down" \
		'^detached torn-down $' sh -c "dmesg | sed -n -E -e 's/.*mlx5_ib: detached from $bdf .*/detached/p' \
		-e 's/.*mlx5_core $bdf: HCA torn down.*/torn-down/p' | tail -n 2 | tr '\n' ' '"
	check_output "mlx5_ib's new notifier received the port down and up after the bind, and only those" \
		"mlx5_ib: detached from $bdf \(1 port\(s\), 2 port event\(s\)\); mlx5_0 unregistered" dmesg
fi
check "unload the stack" unload_stack
check "no module of the stack is left" test -z "$(stack_loaded)"
check "no mlx5_core auxiliary device is left" sh -c "ls $adev_dir; ! ls $adev_dir | grep -q mlx5_core"
check "load the stack again" load_stack
wait_for "mlx5_core.rdma.0 again (the number was given back)" 20 '^mlx5_core\.rdma\.0$' \
	sh -c "ls $adev_dir | grep mlx5_core.rdma"
check "unload the stack again" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

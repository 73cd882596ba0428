#!/bin/sh
# The guest's stand-in for udev, run by busybox `uevent` for every kernel uevent (a scenario starts
# it with `hotplug_start`, see stack.sh). It does what a distribution's udev does for RDMA hardware:
#   - a device added with a MODALIAS gets its driver loaded (systemd's 80-drivers.rules:
#     `kmod load $MODALIAS`): mlx5_core for the ConnectX PCI function, then mlx5_ib for the
#     auxiliary device `mlx5_core.rdma.<N>` mlx5_core creates;
#   - an `infiniband` device added gets the modules of rdma-core's /etc/rdma/modules/rdma.conf and
#     infiniband.conf that the installed stack has (rdma-core's 90-rdma-ulp-modules.rules through
#     rdma-hw.target and rdma-load-modules@infiniband.service: ib_uverbs, ib_umad on the C stack).
# Each load (and each infiniband device added) is logged to /tmp/hotplug.log as "<subsystem> <device>: modprobe <what>: <exit code>"
# (aliases no installed module serves go to /tmp/hotplug-unserved.log).
[ "$ACTION" = add ] || exit 0
log=/tmp/hotplug.log
dev=${DEVPATH##*/}
dep=/lib/modules/$(uname -r)/modules.dep
if [ -n "$MODALIAS" ]; then
	modprobe -b "$MODALIAS" 2>/dev/null
	rc=$?
	if [ $rc = 0 ]; then
		echo "$SUBSYSTEM $dev: modprobe $MODALIAS: $rc" >>"$log"
	else
		echo "$SUBSYSTEM $dev: modprobe $MODALIAS: $rc" >>/tmp/hotplug-unserved.log
	fi
fi
if [ "$SUBSYSTEM" = infiniband ]; then
	echo "$SUBSYSTEM $dev: add" >>"$log"
	for m in $(cat /etc/rdma/modules/rdma.conf /etc/rdma/modules/infiniband.conf 2>/dev/null | grep -v '^#'); do
		grep -q "/$m\.ko:" "$dep" 2>/dev/null || continue
		modprobe "$m" 2>/dev/null
		echo "$SUBSYSTEM $dev: modprobe $m: $?" >>"$log"
	done
fi
exit 0

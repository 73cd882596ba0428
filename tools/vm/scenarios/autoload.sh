# autoload: the stack loads itself, as on a host with a ConnectX: the harness installs the stack's
# modules in the guest's module tree (/lib/modules/<release>/, depmod), the scenario starts the
# guest's udev stand-in (guest/hotplug.sh: a device's MODALIAS loads its driver, an infiniband
# device loads rdma-core's module lists) and replays the boot's device events, and never insmods:
#   - modinfo shows mlx5_core's alias for the emulated function (15b3:1017), mlx5_ib's alias for the
#     auxiliary device (auxiliary:mlx5_core.rdma) and its dependencies;
#   - the PCI function's MODALIAS loads mlx5_core, the auxiliary device mlx5_core.rdma.0 it creates
#     loads mlx5_ib (which pulls ib_core in as a dependency), and mlx5_0 comes up ACTIVE;
#   - the infiniband class announces mlx5_0; rdma-core's lists then load ib_uverbs and ib_umad
#     (both stacks), and umad0 appears;
#   - modprobe -r takes the stack out again; nothing leaks.
# install-modules: yes
# timeout: 400

cx_alias='pci:v000015B3d00001017sv\*sd\*bc\*sc\*i\*'
check_output "modinfo: mlx5_core serves the ConnectX-5 (15b3:1017)" "^$cx_alias\$" modinfo -F alias mlx5_core
check_output "modinfo: mlx5_ib serves mlx5_core's auxiliary RDMA devices" '^auxiliary:mlx5_core\.rdma$' modinfo -F alias mlx5_ib
check_output "modinfo: mlx5_ib depends on mlx5_core and ib_core" '(^|,)mlx5_core(,|$)' modinfo -F depends mlx5_ib
check_output "and on ib_core" '(^|,)ib_core(,|$)' modinfo -F depends mlx5_ib
check "nothing of the stack is loaded yet" sh -c '! grep -E "^(ib_core|mlx5_core|mlx5_ib) " /proc/modules'
check "the udev stand-in starts and replays the boot's device events" hotplug_start
wait_for "mlx5_0 appears by itself, port ACTIVE" 90 'state ACTIVE' rdma link show mlx5_0/1
# hotplug.sh logs a load when modprobe returns; mlx5_0 can come up before that (mlx5_ib
# registers it from its init), so the log lines are waited for.
wait_for "the PCI function's MODALIAS loaded mlx5_core" 30 \
	"^pci [0-9a-f:.]+: modprobe pci:v000015B3d00001017[^ ]*: 0\$" cat /tmp/hotplug.log
wait_for "the auxiliary device mlx5_core.rdma.0 loaded mlx5_ib" 30 \
	'^auxiliary mlx5_core\.rdma\.0: modprobe auxiliary:mlx5_core\.rdma: 0$' cat /tmp/hotplug.log
check_output "mlx5_0 is bound to the function through mlx5_ib" 'mlx5_ib\.rdma$' \
	readlink /sys/bus/auxiliary/devices/mlx5_core.rdma.0/driver
check "mlx5_core, mlx5_ib and ib_core are loaded" sh -c 'grep -q "^mlx5_core " /proc/modules && grep -q "^mlx5_ib " /proc/modules && grep -q "^ib_core " /proc/modules'
wait_for "the infiniband class announced mlx5_0 (the event rdma-core's rules act on)" 30 \
	'^infiniband mlx5_0: add$' cat /tmp/hotplug.log
wait_for "rdma-core's lists loaded ib_uverbs for mlx5_0" 30 '^infiniband mlx5_0: modprobe ib_uverbs: 0$' cat /tmp/hotplug.log
wait_for "and /dev/infiniband/uverbs0 is there" 30 '^character special file e7:c0$' stat -c '%F %t:%T' /dev/infiniband/uverbs0
wait_for "and ib_umad" 30 '^infiniband mlx5_0: modprobe ib_umad: 0$' cat /tmp/hotplug.log
wait_for "and /dev/infiniband/umad0 is there" 30 '^character special file e7:0$' stat -c '%F %t:%T' /dev/infiniband/umad0
check "the udev stand-in stops" hotplug_stop
check "modprobe -r mlx5_ib takes mlx5_0 away" sh -c 'modprobe -r mlx5_ib; ! grep -q "^mlx5_ib " /proc/modules && ! rdma dev show | grep -q mlx5_0'
check "the rest of the stack unloads" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

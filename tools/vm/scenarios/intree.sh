# intree: the in-tree route. The guest boots the kernel that tools/kernel/build-intree.sh built
# from a pristine Linux 7.3.4 with the repository's patch series applied (intree-series.sh), C's
# INFINIBAND and MLX5_CORE off and the stack's Kconfig symbols at m; the stack's modules are the
# ones that kernel build made (drivers/*.ko), installed as `make modules_install` installs them.
# Nothing is insmod-ed: as on a host, the device events load the stack.
#   - the modules are in-tree modules (modinfo `intree: Y`, under kernel/drivers/), and loading
#     them does not taint the kernel as out-of-tree (taint flag O, 4096) as the external build's do;
#   - mlx5_core loads for the ConnectX function, mlx5_ib for its auxiliary device, mlx5_0 comes up
#     ACTIVE and answers `rdma` and ibv_devinfo, rdma-core's lists load ib_uverbs and ib_umad;
#     the stack unloads without a leak.
# Rust only: the C stack's in-tree build is the test kernel itself, which every C run boots.
# kernel: intree
# install-modules: yes
# stacks: rust
# timeout: 400

kdir=/lib/modules/$(uname -r)
for m in ib_core ib_uverbs ib_umad mlx5_core mlx5_ib; do
	check_output "modinfo: $m is an in-tree module" '^Y$' modinfo -F intree $m
	check_output "and installed under kernel/drivers/" "^$kdir/kernel/drivers/$m\\.ko\$" modinfo -F filename $m
done
check_output "modinfo: mlx5_core serves the ConnectX-5 (15b3:1017)" \
	'^pci:v000015B3d00001017sv\*sd\*bc\*sc\*i\*$' modinfo -F alias mlx5_core
check "nothing of the stack is loaded yet" sh -c '! grep -E "^(ib_core|mlx5_core|mlx5_ib) " /proc/modules'
check "the udev stand-in starts and replays the boot's device events" hotplug_start
wait_for "mlx5_0 appears by itself, port ACTIVE" 90 'state ACTIVE' rdma link show mlx5_0/1
check "mlx5_core, mlx5_ib and ib_core are loaded" sh -c 'grep -q "^mlx5_core " /proc/modules && grep -q "^mlx5_ib " /proc/modules && grep -q "^ib_core " /proc/modules'
check_output "the kernel is not tainted by an out-of-tree module" '^0$' \
	sh -c 'echo $(( $(cat /proc/sys/kernel/tainted) & 4096 ))'
wait_for "rdma-core's lists loaded ib_uverbs for mlx5_0" 30 '^infiniband mlx5_0: modprobe ib_uverbs: 0$' cat /tmp/hotplug.log
wait_for "and ib_umad" 30 '^infiniband mlx5_0: modprobe ib_umad: 0$' cat /tmp/hotplug.log
check_output "ibv_devinfo: mlx5_0's port is active" 'state:[[:space:]]+PORT_ACTIVE' ibv_devinfo -d mlx5_0
check "the udev stand-in stops" hotplug_stop
check "modprobe -r mlx5_ib takes mlx5_0 away" sh -c 'modprobe -r mlx5_ib; ! grep -q "^mlx5_ib " /proc/modules && ! rdma dev show | grep -q mlx5_0'
# busybox's modprobe -r also tries each module's dependencies (ib_core, still used by the next
# one) and exits non-zero although every module named is gone: judged by /proc/modules.
check "the rest of the stack unloads" sh -c 'modprobe -r ib_umad ib_uverbs mlx5_core ib_core; ! grep -E "^(ib_core|ib_uverbs|ib_umad|mlx5_core) " /proc/modules'
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# ibcore-devices: the Rust ib_core registers software devices from the test provider
# (samples/ib_test_provider.rs) with C's naming and module lifetimes:
#   - names from the template take the lowest free number (ibtest0, ibtest1, ...), indices
#     start at 0 (the KUnit suites' fake devices take none) and increase, the last device has the requested number of ports;
#   - ib_core cannot be removed while a provider uses it, and unloads once the provider is gone;
#   - bad provider parameters are refused with EINVAL and leave nothing registered;
#   - 10 load/unload cycles of the provider, then clean dmesg and kmemleak.
# stacks: rust

prov="$stack_dir/ib_test_provider.ko"

check "load ib_core alone" load_stack ib_core
check "the test provider registers two devices" insmod "$prov" devices=2 ports=2
check_output "ibtest0 registered with one port, index 0 (ib_core's KUnit devices take none)" \
	'ib_test_provider: registered ibtest0 \(index 0, 1 port\(s\)\)$' dmesg
check_output "ibtest1 registered with two ports, next index" \
	'ib_test_provider: registered ibtest1 \(index 1, 2 port\(s\)\)$' dmesg
check_output "rdma dev show: index 0 first" '^0: ibtest0: ' rdma dev show
idx0=$(dmesg | sed -n 's/.*registered ibtest0 (index \([0-9]*\),.*/\1/p' | tail -n 1)
idx1=$(dmesg | sed -n 's/.*registered ibtest1 (index \([0-9]*\),.*/\1/p' | tail -n 1)
ktap_result "$([ -n "$idx0" ] && [ -n "$idx1" ] && [ "$idx1" -gt "$idx0" ] && echo 0 || echo 1)" \
	"device indices increase" "indices $idx0 and $idx1"
check_output "rmmod ib_core is refused while the provider uses it" 'in use|busy|Resource temporarily' \
	sh -c 'rmmod ib_core 2>&1; exit 0'
check_output "ib_core is still loaded, used by one module" '^ib_core [0-9]+ 1 ' grep '^ib_core ' /proc/modules
check "the provider unloads" rmmod ib_test_provider
check_output "the provider unregistered its devices" 'ib_test_provider: unloaded$' dmesg
check "a larger provider: four devices, the last with four ports" \
	insmod "$prov" devices=4 ports=4
check_output "ibtest3 has four ports" 'registered ibtest3 \(index [0-9]+, 4 port\(s\)\)$' dmesg
check "and unloads" rmmod ib_test_provider
check_output "too many devices are refused with EINVAL" 'Invalid argument|Invalid parameters' \
	sh -c 'insmod '"$prov"' devices=9 2>&1; exit 0'
check_output "zero ports are refused with EINVAL" 'Invalid argument|Invalid parameters' \
	sh -c 'insmod '"$prov"' ports=0 2>&1; exit 0'
check "nothing of the provider is left loaded" sh -c '! grep -q "^ib_test_provider " /proc/modules'
cycles=0
for i in 1 2 3 4 5 6 7 8 9 10; do
	insmod "$prov" devices=3 ports=2 && rmmod ib_test_provider && cycles=$((cycles + 1))
done
check_output "10 provider load/unload cycles" '^10$' echo $cycles
check "ib_core unloads once the provider is gone" unload_stack
check "no module of the stack is left" test -z "$(stack_loaded)"
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

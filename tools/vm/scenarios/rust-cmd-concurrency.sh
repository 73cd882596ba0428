# rust-cmd-concurrency: several firmware commands in flight at once on the Rust mlx5_core.
# cx-model holds the first two NOPs' completions back for 3 s (their slots stay busy); meanwhile
# the test interface's other four NOPs, started at the same moment from their own work items,
# complete in other slots, and a page request is answered through the page slot. Were commands
# serialized, every NOP queued behind a held one would take the 3 s too, and the page request
# would wait. The model counts the commands it owned at once.
# stacks: rust
# cx-model: --fault delay:NOP:3000:2
# host-check: most commands in flight at once: ([3-9]|[1-9][0-9])
# host-check: firmware pages: [1-9][0-9]* given, [1-9][0-9]* returned, 0 still held \(all reclaimed\)
# Two CPUs: commands issued from several CPUs at once.
# cpus: 2

dev=$(cx_device)
bdf=${dev##*/}
iface=mlx5_test_interface

check "load mlx5_core" load_stack mlx5_core
held=$(pages_held)
check "the test interface starts 6 NOPs at once" insmod "$stack_dir/$iface.ko" nop_commands=6
check_output "model: asks for 8 more pages while the first NOP is held" '^ok page request 8$' \
	model_ctl page-request 8
wait_for "mlx5_core gives them through the page slot" 10 "^$((held + 8))\$" pages_held
wait_for "all 6 NOPs complete" 15 '^6$' sh -c "dmesg | grep -c '$iface: nop [0-9]*: ok in'"
ms=$(dmesg | sed -n "s/.*$iface: nop [0-9]*: ok in \([0-9]*\) ms.*/\1/p" | sort -n | tr '\n' ' ')
slow=0; fast=0
for m in $ms; do
	if [ "$m" -ge 2900 ]; then slow=$((slow + 1)); elif [ "$m" -lt 1500 ]; then fast=$((fast + 1)); fi
done
ktap_result "$([ "$slow" = 2 ] && [ "$fast" = 4 ] && echo 0 || echo 1)" \
	"two NOPs held 3 s, the other four done meanwhile in other slots" "NOP times (ms): $ms"
ktap_result "$(dmesg | grep -q "$iface: nop [0-9]*: ok in [0-9]\{4,\} ms" && echo 0 || echo 1)" \
	"the held NOPs completed normally after the delay" "$(dmesg | grep "$iface: nop")"
check "unload the interface" rmmod $iface
check_output "the interface was removed after its NOPs" "$iface: remove $bdf after 0 event\(s\)" dmesg
check "unload mlx5_core" unload_stack
check_output "teardown reclaimed every page" "HCA torn down; $((held + 8)) firmware pages given, $((held + 8)) reclaimed" dmesg
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

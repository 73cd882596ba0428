# rust-events: cx-model changes under the Rust mlx5_core through its control channel: the port
# goes down and comes back (PORT_CHANGE events on the async EQ, MSI-X, the threaded handler), and
# the firmware asks for more pages and then hands some back (PAGE_REQUEST events on the pages EQ).
# The same changes as c-events, judged by what the Rust driver logs and does.
# stacks: rust
# host-check: firmware pages: [1-9][0-9]* given, [1-9][0-9]* returned, 0 still held \(all reclaimed\)

dev=$(cx_device)
bdf=${dev##*/}

check "load the rust stack" load_stack
check_output "one MSI-X vector for the control event queues, named as C's" 'mlx5_async0@pci:' cat /proc/interrupts
check_output "model: port 1 down" '^ok port 1 down$' model_ctl port 1 down
wait_for "mlx5_core reports port 1 down" 10 "mlx5_core $bdf: port 1 state change: down" dmesg
check_output "model: port 1 up" '^ok port 1 up$' model_ctl port 1 up
wait_for "mlx5_core reports port 1 active" 10 "mlx5_core $bdf: port 1 state change: active" dmesg
held=$(pages_held)
check_output "model: asks for 8 more pages" '^ok page request 8$' model_ctl page-request 8
wait_for "mlx5_core gives them" 10 "^$((held + 8))\$" pages_held
check_output "model: offers 4 pages back" '^ok page request -4$' model_ctl page-request -4
wait_for "mlx5_core takes them" 10 "^$((held + 4))\$" pages_held
check_output "debugfs mlx5/$bdf/pages/fw_pages_total agrees with the model" "^$((held + 4))\$" cat /sys/kernel/debug/mlx5/$bdf/pages/fw_pages_total
for i in 1 2 3; do model_ctl port 1 down >/dev/null; model_ctl port 1 up >/dev/null; done
wait_for "three more down/up pairs, each reported" 10 '^4$' sh -c "dmesg | grep -c 'port 1 state change: down'"
check_output "the control vector took interrupts" 'mlx5_async0@pci' sh -c "grep mlx5_async0@pci /proc/interrupts | awk '{ n = 0; for (i = 2; i <= NF; i++) if (\$i ~ /^[0-9]+\$/) n += \$i; if (n > 0) print }'"
check "unload the rust stack" unload_stack
check_output "commands completed in event mode (through the command EQ)" "mlx5_core $bdf: [1-9][0-9]* command completion\(s\) came as events" dmesg
check_output "teardown reclaimed every page, including the extra ones" "HCA torn down; $((held + 8)) firmware pages given, $((held + 8)) reclaimed" dmesg
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

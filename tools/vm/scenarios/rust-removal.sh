# rust-removal: surprise removal under the Rust mlx5_core. The model drops off the bus (every
# register reads all ones, commands are never answered); the health poll notices, says so, and
# puts the device in the internal-error state, so the stack unloads at once instead of waiting out
# command timeouts; no leak, no splat.
# stacks: rust
# timeout: 300

dev=$(cx_device)
bdf=${dev##*/}

check "load the rust stack" load_stack
check_output "model: surprise removal" '^ok removed$' model_ctl remove
wait_for "the health poll sees the device gone (PCI communication error)" 10 "mlx5_core $bdf: Fatal error 1 detected" dmesg
check_output "the device is in the internal-error state" "mlx5_core $bdf: device in internal error state" dmesg
check "the stack unloads at once" unload_within 10
check "no module of the stack is left" test -z "$(stack_loaded)"
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

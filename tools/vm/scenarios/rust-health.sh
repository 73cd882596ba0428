# rust-health: the Rust mlx5_core's health poll. A non-fatal syndrome is reported by name (as the
# C driver words it) and the device keeps working; a fatal one (recovery required) puts the device
# in the internal-error state: it says so, commands fail at once, and the stack unloads without
# waiting out command timeouts, releasing the pages of a device it considers dead, with no leak
# and no splat. (The model then still counts those pages as held: no page host-check here.)
# stacks: rust
# timeout: 300

dev=$(cx_device)
bdf=${dev##*/}

check "load the rust stack" load_stack
check_output "model: health syndrome 0x8" '^ok health syndrome 0x8$' model_ctl health-error 0x8
wait_for "the health poll reports the syndrome by name" 10 "mlx5_core $bdf: synd 0x8: unrecoverable hardware error" dmesg
check_output "model: health clear" '^ok health clear$' model_ctl health-clear
check_output "not a fatal error: the device keeps working (port change still reported)" '^ok port 1 down$' model_ctl port 1 down
wait_for "mlx5_core still handles events" 10 "mlx5_core $bdf: port 1 state change: down" dmesg
model_ctl port 1 up >/dev/null
check_output "model: fatal health syndrome 0xb" '^ok health syndrome 0xb$' model_ctl health-error 0xb fatal
wait_for "the health poll declares a fatal error" 10 "mlx5_core $bdf: Fatal error 5 detected" dmesg
check_output "and names the syndrome" "mlx5_core $bdf: synd 0xb: HW fatal error" dmesg
check_output "the device is in the internal-error state" "mlx5_core $bdf: device in internal error state" dmesg
check "the stack unloads at once (teardown commands do not wait for a dead device)" unload_within 10
check_output "the pages of the dead device are released" "mlx5_core $bdf: device in error state: releasing [0-9]+ firmware pages without reclaim" dmesg
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# c-events: cx-model changes under the running C stack through its control channel: the port goes
# down and comes back (PORT_CHANGE events on the async EQ, MSI-X), the firmware asks for more
# pages and then hands some back (PAGE_REQUEST events on the pages EQ), and it raises a health
# syndrome that the C driver's health poll reports.
# stacks: c
# host-check: firmware pages: [1-9][0-9]* given, [1-9][0-9]* returned, 0 still held \(all reclaimed\)

dev=$(cx_device)
bdf=${dev##*/}
state=/sys/class/infiniband/mlx5_0/ports/1/state

check "load the C stack" load_stack
check_output "port 1 is ACTIVE" '^4: ACTIVE$' cat $state
# rdma-core's async event watcher, through the C ib_uverbs.
ibv_asyncwatch -d mlx5_0 >/tmp/asyncwatch 2>&1 &
watcher=$!
sleep 1
check_output "model: port 1 down" '^ok port 1 down$' model_ctl port 1 down
wait_for "sysfs port state follows: 1: DOWN" 10 '^1: DOWN$' cat $state
check_output "rdma link show: DOWN, DISABLED" 'state DOWN physical_state DISABLED' rdma link show mlx5_0/1
wait_for "ibv_asyncwatch sees IBV_EVENT_PORT_ERR on port 1" 10 'IBV_EVENT_PORT_ERR.*port 1' cat /tmp/asyncwatch
check_output "model: port 1 up" '^ok port 1 up$' model_ctl port 1 up
wait_for "sysfs port state follows: 4: ACTIVE" 10 '^4: ACTIVE$' cat $state
wait_for "ibv_asyncwatch sees IBV_EVENT_PORT_ACTIVE on port 1" 10 'IBV_EVENT_PORT_ACTIVE.*port 1' cat /tmp/asyncwatch
kill $watcher
wait $watcher 2>/dev/null
held=$(pages_held)
check_output "model: asks for 8 more pages" '^ok page request 8$' model_ctl page-request 8
wait_for "the C driver gives them" 10 "^$((held + 8))\$" pages_held
check_output "model: offers 4 pages back" '^ok page request -4$' model_ctl page-request -4
wait_for "the C driver takes them" 10 "^$((held + 4))\$" pages_held
check_output "debugfs mlx5/$bdf/pages/fw_pages_total agrees with the model" "^$((held + 4))\$" cat /sys/kernel/debug/mlx5/$bdf/pages/fw_pages_total
check_output "model: health syndrome 0x8" '^ok health syndrome 0x8$' model_ctl health-error 0x8
wait_for "the C health poll reports the syndrome" 20 "mlx5_core $bdf: .*synd 0x8: unrecoverable hardware error" dmesg
check_output "model: health clear" '^ok health clear$' model_ctl health-clear
check "unload the C stack" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

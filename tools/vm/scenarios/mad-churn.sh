# mad-churn: ib_umad and mlx5_ib loaded and unloaded in every order while MAD traffic runs (a
# loop of perfquery and smpquery on umad0, failing while there is no device, issue 14):
#   - mlx5_ib then ib_umad up, ib_umad then mlx5_ib down; ib_umad then mlx5_ib up, mlx5_ib then
#     ib_umad down; and the two mixed orders; each round ends with umad0 answering (perfquery
#     works) and the modules gone;
#   - an rmmod of ib_umad while a process holds umad0 open is refused (busybox's non-blocking
#     delete_module: EAGAIN), as on C (the
#     rounds' rmmods retry while a tool of the loop has it open);
#   - nothing is left: no umad class device, no MAD QP, dmesg and kmemleak clean.
# stacks: rust c
# timeout: 600

counters=/sys/class/infiniband/mlx5_0/ports/1/counters
# rmmod_retry <module>: rmmod until it succeeds (a tool may hold the module for a moment).
rmmod_retry() {
	_i=0
	while ! rmmod "$1" 2>/dev/null; do
		_i=$((_i + 1))
		[ $_i -ge 200 ] && { echo "rmmod $1 kept failing"; return 1; }
		sleep 0.05
	done
}
# up <first> <second>: loads the two modules in that order and waits for umad0 to answer.
up() {
	load_stack "$1" && load_stack "$2" || return 1
	_i=0
	until perfquery >/dev/null 2>&1; do
		_i=$((_i + 1))
		[ $_i -ge 100 ] && { echo "perfquery never answered"; return 1; }
		sleep 0.1
	done
}

# down <first> <second>: unloads the two modules in that order.
down() {
	rmmod_retry "$1" && rmmod_retry "$2"
}

# load_stack with a list loads only the named modules (and those already loaded stay).
check "load the stack without mlx5_ib and ib_umad" \
	load_stack $(grep -v -e '^ib_umad$' -e '^mlx5_ib$' "$stack_dir/order")
rm -f /tmp/stop
(while [ ! -e /tmp/stop ]; do
	perfquery >/dev/null 2>&1
	smpquery -D nodeinfo 0 >/dev/null 2>&1
	l=$(cat /sys/class/infiniband/mlx5_0/ports/1/lid 2>/dev/null)
	[ -n "$l" ] && smpquery nodeinfo $((l)) >/dev/null 2>&1
done) &
traffic=$!
for order in "mlx5_ib ib_umad ib_umad mlx5_ib" "ib_umad mlx5_ib mlx5_ib ib_umad" \
	"mlx5_ib ib_umad mlx5_ib ib_umad" "ib_umad mlx5_ib ib_umad mlx5_ib"; do
	set -- $order
	check "up: $1, then $2; perfquery answers" up "$1" "$2"
	check_output "the port's counters count the traffic" '^[1-9][0-9]*$' cat $counters/port_rcv_packets
	check "down: $3, then $4" down "$3" "$4"
	check "neither is loaded, no umad device" sh -c '! grep -E "^(ib_umad|mlx5_ib) " /proc/modules && ! test -e /sys/class/infiniband_mad'
done
touch /tmp/stop
wait $traffic
check "up once more" up mlx5_ib ib_umad
sleep 600 <>/dev/infiniband/umad0 &
holder=$!
check_output "rmmod ib_umad while a process holds umad0 open: refused (EAGAIN: in use), still loaded" \
	"can't unload module 'ib_umad': Resource temporarily unavailable;still loaded;" \
	sh -c '(rmmod ib_umad 2>&1; grep -q "^ib_umad " /proc/modules && echo "still loaded") | tr "\n" ";"'
check "the holder closes it, ib_umad unloads" sh -c "kill $holder; wait $holder 2>/dev/null; sleep 0.2; rmmod ib_umad"
check "the rest of the stack unloads" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

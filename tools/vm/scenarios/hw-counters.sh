# hw-counters: a port's hardware counters (mlx5 Q counters) in sysfs and `rdma stat show`, the
# same checks on both stacks. mlx5_ib allocates a Q counter set per port when it registers
# mlx5_0 and binds every QP to it; cx-model counts each QP's events on its set. Checked:
#   - ports/1/hw_counters lists C's names (the basic, out-of-sequence, retransmission, enhanced
#     error and RoCE accelerator groups: cx-model has all three capabilities) and lifespan, with
#     C's modes; every counter reads 0 before any traffic;
#   - `rdma stat show` (and `link mlx5_0/1`, `-j`) prints them in C's order with their values;
#     `rdma stat mode supported` lists the optional counters (STAT_GET_STATUS);
#   - known traffic moves exactly the counters it should: ib_write_lat -n 100 (client and
#     server on the same port, each writes 100 times: 200 received writes), then ib_read_lat
#     -n 50 (the client reads 50 times); sysfs and netlink agree;
#   - lifespan: 12 by default (C's 10 ms in jiffies at HZ=250, printed back in ms), writable
#     (10000, and 7 reads back 8: whole jiffies), 10001, -1 and text refused with EINVAL;
#   - an error case: port 2 does not exist (`Wrong device name`);
#   - a reload allocates new sets: the counters start from 0 again; the stack unloads with
#     every set freed (host check: two ALLOC_Q_COUNTER, two DEALLOC_Q_COUNTER), dmesg clean,
#     kmemleak clean (rust).
# stacks: rust c
# timeout: 400
# host-check: ALLOC_Q_COUNTER +0x0771 +2\b
# host-check: DEALLOC_Q_COUNTER +0x0772 +2\b
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

HW=/sys/class/infiniband/mlx5_0/ports/1/hw_counters

# C's order (mlx5_ib_fill_counters), as rdma stat prints it.
NAMES="rx_write_requests rx_read_requests rx_atomic_requests rx_dct_connect out_of_buffer
out_of_sequence duplicate_request rnr_nak_retry_err packet_seq_err implied_nak_seq_err
local_ack_timeout_err resp_local_length_error resp_cqe_error req_cqe_error
req_remote_invalid_request req_remote_access_errors resp_remote_access_errors
resp_cqe_flush_error req_cqe_flush_error req_transport_retries_exceeded
req_rnr_retries_exceeded roce_adp_retrans roce_adp_retrans_to roce_slow_restart
roce_slow_restart_cnps roce_slow_restart_trans"

# stat_line W R: the exact `rdma stat show` line with W received writes, R received reads and
# every other counter 0.
stat_line() {
	_l="link mlx5_0/1"
	for _n in $NAMES; do
		case $_n in
		rx_write_requests) _v=$1 ;;
		rx_read_requests) _v=$2 ;;
		*) _v=0 ;;
		esac
		_l="$_l $_n $_v"
	done
	echo "$_l "
}

# stat_json W R: the same as `rdma stat show -j` prints it.
stat_json() {
	_j='[{"ifname":"mlx5_0","port":1'
	for _n in $NAMES; do
		case $_n in
		rx_write_requests) _v=$1 ;;
		rx_read_requests) _v=$2 ;;
		*) _v=0 ;;
		esac
		_j="$_j,\"$_n\":$_v"
	done
	echo "$_j}]"
}

# sysfs_values: "name=value" of every counter file but lifespan, in C's order.
sysfs_values() {
	for _n in $NAMES; do
		echo "$_n=$(cat $HW/$_n)"
	done | tr '\n' ' '
}

# sysfs_expect W R: what sysfs_values prints with W writes and R reads.
sysfs_expect() {
	for _n in $NAMES; do
		case $_n in
		rx_write_requests) echo "$_n=$1" ;;
		rx_read_requests) echo "$_n=$2" ;;
		*) echo "$_n=0" ;;
		esac
	done | tr '\n' ' '
}

# same WHAT GOT WANT: passes if the two strings are equal, shows both otherwise.
same() {
	if [ "$2" = "$3" ]; then
		ktap_result 0 "$1"
	else
		ktap_result 1 "$1" "got:  $2
want: $3"
	fi
}

check "load the stack" load_stack
wait_for "mlx5_0 is registered" 30 "mlx5_0" rdma dev show

# The files: every counter (ls sorts them) and lifespan, counters read-only, lifespan 0644.
files=$(ls $HW | tr '\n' ' ')
want=$( (for n in $NAMES lifespan; do echo $n; done) | sort | tr '\n' ' ')
same "hw_counters has C's 26 counters and lifespan" "$files" "$want"
modes=$(stat -c '%n %a' $HW/* | sed 's#.*/##' | sort | awk '{print $2}' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
same "26 counters read-only (444), lifespan 644" "$modes" " 26 444; 1 644;"

same "every counter reads 0 before traffic" "$(sysfs_values)" "$(sysfs_expect 0 0)"
same "rdma stat show: C's names in C's order, all 0" "$(rdma stat show 2>&1)" "$(stat_line 0 0)"
same "rdma stat show link mlx5_0/1: the same" "$(rdma stat show link mlx5_0/1 2>&1)" "$(stat_line 0 0)"
same "rdma stat show -j: the same in JSON" "$(rdma stat show -j 2>&1)" "$(stat_json 0 0)"
same "rdma stat mode supported: the optional counters (STAT_GET_STATUS)" \
	"$(rdma stat mode supported 2>&1)" \
	"link mlx5_0/1 supported optional-counters cc_rx_ce_pkts,rdma_tx_packets,rdma_tx_bytes,rdma_rx_packets,rdma_rx_bytes"
same "rdma stat show link mlx5_0/2: no such port" "$(rdma stat show link mlx5_0/2 2>&1; echo "exit $?")" \
	"Wrong device name
exit 1"

# 100 RDMA write round trips through one port: each side writes 100 times.
loopback_pair 150 120 ib_write_lat -d mlx5_0 -n 100
[ $LP_CLIENT_RC = 0 ] && [ $LP_SERVER_RC = 0 ]
ktap_result $? "ib_write_lat -n 100 over loopback" "$LP_OUT"
same "sysfs after ib_write_lat -n 100: rx_write_requests 200, the rest 0" "$(sysfs_values)" "$(sysfs_expect 200 0)"
same "rdma stat show after ib_write_lat: the same" "$(rdma stat show 2>&1)" "$(stat_line 200 0)"

# 50 RDMA reads by the client.
loopback_pair 150 120 ib_read_lat -d mlx5_0 -n 50
[ $LP_CLIENT_RC = 0 ] && [ $LP_SERVER_RC = 0 ]
ktap_result $? "ib_read_lat -n 50 over loopback" "$LP_OUT"
same "sysfs after ib_read_lat -n 50: rx_read_requests 50" "$(sysfs_values)" "$(sysfs_expect 200 50)"
same "rdma stat show after ib_read_lat: the same" "$(rdma stat show 2>&1)" "$(stat_line 200 50)"
same "rdma stat show -j after both" "$(rdma stat show -j 2>&1)" "$(stat_json 200 50)"

# lifespan: C keeps it in jiffies (HZ=250 here: 4 ms each) and prints it in ms.
same "lifespan reads 12 (10 ms rounded up to 3 jiffies)" "$(cat $HW/lifespan)" "12"
lifespan_set() {
	(echo "$1" >$HW/lifespan) 2>/dev/null
	echo "rc $? $(cat $HW/lifespan)"
}
same "lifespan 10000 is taken" "$(lifespan_set 10000)" "rc 0 10000"
same "lifespan 10001 is refused (EINVAL), 10000 stays" "$(lifespan_set 10001)" "rc 1 10000"
same "lifespan -1 is refused" "$(lifespan_set -1)" "rc 1 10000"
same "lifespan abc is refused" "$(lifespan_set abc)" "rc 1 10000"
same "lifespan 7 reads back 8 (2 jiffies)" "$(lifespan_set 7)" "rc 0 8"
check_output "writing lifespan 10001 is EINVAL" 'Invalid argument' \
	sh -c "exec 2>&1; echo 10001 > $HW/lifespan; true"
same "a counter file cannot be written" "$( (echo 1 >$HW/rx_write_requests) 2>/dev/null; echo rc $?)" "rc 1"

# A reload allocates new counter sets: everything starts from 0 again.
check "unload the stack" unload_stack
check "load the stack again" load_stack
wait_for "mlx5_0 is registered again" 30 "mlx5_0" rdma dev show
same "after a reload every counter reads 0" "$(sysfs_values)" "$(sysfs_expect 0 0)"
same "after a reload lifespan is the default again" "$(cat $HW/lifespan)" "12"
same "after a reload rdma stat show reads 0" "$(rdma stat show 2>&1)" "$(stat_line 0 0)"

check "the stack unloads" unload_stack
check "no module of the stack is left" test -z "$(stack_loaded)"
if [ "$STACK" = rust ]; then
	kmemleak_clean "rust: kmemleak finds no leak"
fi
dmesg_clean "dmesg clean"

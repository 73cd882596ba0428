# uverbs-lifetimes: what user objects leave behind when their process or device goes (issue 17).
# Rust only: it checks the Rust stack's own accounting (C's firmware objects differ: its mlx5_ib
# keeps kernel PDs, UMR resources and mkeys of its own, and C 7.3 leaks the task of a process
# whose context was disassociated, see docs/uverbs-c-facts.md §6).
#   - tools/uverbs-holder holds a context, a PD, a 64 KiB MR, a CQ armed on a completion channel
#     and a UAR page it mapped (besides the one libmlx5 maps): the model counts one more
#     transport domain, PD, mkey and CQ and two more UARs; `rdma resource` counts them;
#   - the holder is killed (SIGKILL) while it holds them: the file's release destroys the MR,
#     the PD and the context, newest first; the model's counts and `rdma resource` are back to
#     where they were, and no user object is listed;
#   - an ibv_rc_pingpong pair (server and client) killed with SIGKILL mid-traffic: the model's
#     counts and `rdma resource` are back, no user object is listed;
#   - a new holder and a pingpong pair in traffic, then the PCI function is unbound under them:
#     the pingpongs end with an error; it reads DEVICE_FATAL, a store
#     into its UAR page lands in memory (the page was taken back: it reads back, no fault), its
#     commands fail with EIO, the unbind completes without waiting for it, and it exits;
#   - kmemleak and dmesg clean.
# stacks: rust
# timeout: 400

check "load the stack" load_stack
wait_for "mlx5_0 is registered and its port is ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1
base_objects=$(model_ctl objects)
base_res=$(rdma resource show mlx5_0)
check_output "the model answers with its object counts ($base_objects)" '^ok pds [0-9]+ tds [0-9]+ ' echo "$base_objects"

uverbs_holder /tmp/holder.out >/dev/null 2>&1 &
holder=$!
wait_for "the holder has its context, PD, MR, CQ and UAR page" 30 '^context' cat /tmp/holder.out
held=$(model_ctl objects)
count() { echo "$1" | sed -n "s/.*$2 \([0-9]*\).*/\1/p"; }
diff_of() { echo $(( $(count "$held" "$1") - $(count "$base_objects" "$1") )); }
check_output "the model holds one more transport domain, PD, mkey and CQ, two more UARs ($held)" \
	'^1 1 1 1 2$' echo "$(diff_of tds) $(diff_of pds) $(diff_of mkeys) $(diff_of cqs) $(diff_of uars)"
check_output "rdma resource counts the context" ' ctx 1( |$)' rdma resource show mlx5_0
check "SIGKILL the holder" kill -9 $holder
wait $holder 2>/dev/null
check_output "the model's object counts are back ($base_objects)" "^$base_objects\$" model_ctl objects
check_output "rdma resource's counts are back" "^$base_res\$" rdma resource show mlx5_0
check_output "no user object is listed" '^$' sh -c 'rdma resource show ctx; rdma resource show pd | grep " pid "; rdma resource show mr | grep " pid "; true'

# A pingpong pair killed mid-traffic.
ibv_rc_pingpong -d mlx5_0 -n 100000000 -s 4096 -p 18700 >/tmp/pp-server 2>&1 &
pps=$!
sleep 3
ibv_rc_pingpong -d mlx5_0 -n 100000000 -s 4096 -p 18700 localhost >/tmp/pp-client 2>&1 &
ppc=$!
sleep 5
check_output "a pingpong pair is in traffic: two QPs of two processes are listed" '^2$' \
	sh -c 'rdma resource show qp | grep -c "state RTS .*comm ibv_rc_pingpong"'
check "SIGKILL both pingpongs mid-traffic" kill -9 $pps $ppc
wait $pps $ppc 2>/dev/null
check_output "the model's object counts are back after the pingpongs ($base_objects)" "^$base_objects\$" model_ctl objects
check_output "rdma resource's counts are back after the pingpongs" "^$base_res\$" rdma resource show mlx5_0
check_output "no user object of the pingpongs is listed" '^$' sh -c 'rdma resource show ctx; rdma resource show qp | grep " pid "; rdma resource show cq | grep " pid "; rdma resource show mr | grep " pid "; true'

: >/tmp/holder.out
# With completion events (-e): a pingpong waits in the completion channel, which answers EIO
# once the device has gone (polling alone would spin on a CQ nothing writes any more, on C too).
timeout 120 ibv_rc_pingpong -d mlx5_0 -n 100000000 -s 4096 -e -p 18701 >/tmp/pp-server 2>&1 &
pps=$!
sleep 3
timeout 120 ibv_rc_pingpong -d mlx5_0 -n 100000000 -s 4096 -e -p 18701 localhost >/tmp/pp-client 2>&1 &
ppc=$!
sleep 3
rm -f /tmp/holder.go
uverbs_holder /tmp/holder.out /tmp/holder.go >/dev/null 2>&1 &
holder=$!
wait_for "a new holder has its context, PD and MR" 30 '^context' cat /tmp/holder.out
bdf=$(basename "$(readlink -f /sys/class/infiniband/mlx5_0/device)")
check "the PCI function ($bdf) unbinds under the holder" sh -c "echo $bdf >/sys/bus/pci/drivers/mlx5_core/unbind"
# The removal has returned: the holder's mappings were taken back, it may store into its page.
touch /tmp/holder.go
wait_for "the holder read DEVICE_FATAL and its command failed" 30 '^done' cat /tmp/holder.out
check_output "holder: context, async event 8 (DEVICE_FATAL), its UAR page is memory now, QUERY_PORT fails with EIO" \
	'^context;event 8;uar reads back 0x1234;query_port EIO;done;$' sh -c "tr '\\n' ';' </tmp/holder.out"
wait $holder
rc=$?
check_output "the holder exits 0" '^0$' echo $rc
wait $pps
rcs=$?
wait $ppc
rcc=$?
check_output "the pingpongs in traffic ended with an error, not a timeout (server $rcs, client $rcc)" \
	'^1 1$' sh -c "echo \$(( $rcs != 0 && $rcs != 124 )) \$(( $rcc != 0 && $rcc != 124 ))"

check "the stack unloads" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

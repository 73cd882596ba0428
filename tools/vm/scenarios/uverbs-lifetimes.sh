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
#   - a new holder, then the PCI function is unbound under it: it reads DEVICE_FATAL, a store
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

: >/tmp/holder.out
uverbs_holder /tmp/holder.out >/dev/null 2>&1 &
holder=$!
wait_for "a new holder has its context, PD and MR" 30 '^context' cat /tmp/holder.out
bdf=$(basename "$(readlink -f /sys/class/infiniband/mlx5_0/device)")
check "the PCI function ($bdf) unbinds under the holder" sh -c "echo $bdf >/sys/bus/pci/drivers/mlx5_core/unbind"
wait_for "the holder read DEVICE_FATAL and its command failed" 30 '^done' cat /tmp/holder.out
check_output "holder: context, async event 8 (DEVICE_FATAL), its UAR page is memory now, QUERY_PORT fails with EIO" \
	'^context;event 8;uar reads back 0x1234;query_port EIO;done;$' sh -c "tr '\\n' ';' </tmp/holder.out"
wait $holder
rc=$?
check_output "the holder exits 0" '^0$' echo $rc
check_output "the model's objects are all gone with the function" '^ok pds 0 tds 0 uars 0 mkeys 0 cqs 0 qps 0 srqs 0 rmps 0 xrcds 0$' model_ctl objects

check "the stack unloads" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# mlx5ib-verbs: draft
# stacks: c
# timeout: 600
check "load the stack" load_stack
wait_for "mlx5_0 registered" 30 'mlx5_0' sh -c 'ls /sys/class/infiniband'
check "the verbs client loads" insmod "$stack_dir/ib_verbs_client.ko"
check_output "dump" . sh -c 'dmesg | grep ib_verbs_client'
for t in pd cq mr; do check_output "res $t" . rdma res show $t dev mlx5_0; done
check_output "res qp" . rdma res show qp link mlx5_0
check_output "res -d qp" . rdma res show qp link mlx5_0 -d
check "rmmod" rmmod ib_verbs_client
check_output "dump2" . sh -c 'dmesg | grep ib_verbs_client | tail -3'
check "unload" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg clean"

# mixed-stacks: two VMs on different stacks at once (`# vm-stacks: rust c`): VM 0 loads the Rust
# stack, VM 1 the C stack, each on its own cx-model, the models linked by the wire. Each VM checks
# that it runs the stack it was given (the C ib_core has the MAD layer's module parameters, ours
# has not yet), brings mlx5_0 up to an ACTIVE port with the LID its model's GUID seed gives, and
# unloads. The base for traffic between the two stacks (issue: mlx5_ib kernel verbs).
# vms: 2
# vm-stacks: rust c
# timeout: 400

mad_param=/sys/module/ib_core/parameters/send_queue_size
check "load the stack" load_stack
if [ "$VM_INDEX" = 0 ]; then
	check "VM 0 runs the Rust stack (STACK=$STACK, no C MAD parameters)" sh -c "[ $STACK = rust ] && [ ! -e $mad_param ]"
	lid=6
else
	check "VM 1 runs the C stack (STACK=$STACK, the C MAD parameters)" sh -c "[ $STACK = c ] && [ -e $mad_param ]"
	lid=10
fi
wait_for "mlx5_0 port 1 ACTIVE with LID $lid" 60 "lid $lid sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP" \
	sh -c "rdma link show mlx5_0/1"
check "unload the stack" unload_stack
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# hardening-eqes: event queue entries a device should never send, on both stacks where C survives
# them. cx-model's `eqe` control command posts each one as the device would (owner bit, interrupt)
# to the EQ that takes the event type, or to every completion EQ:
#   - an event type no driver knows (0x3e) on the async EQ;
#   - a port change for port 7 (the function has one port);
#   - a CQ error, a QP catastrophic error (WQ_CATAS_ERROR) and an SRQ limit event for CQ, QP and
#     SRQ numbers that do not exist (0xabcdef) on the async EQ;
#   - a completion for a CQ that does not exist on every completion EQ (they exist once CQs do:
#     C's mlx5_ib creates its MAD CQs at load; on rust the test interface's completion=1 run);
#   - rust only: completions for all 32 command slots, none in flight (stray tokens). The C driver
#     dereferences the slot's empty entry (cmd.c, mlx5_cmd_comp_handler reads cmd->ent_arr[i] of
#     a free slot, which is NULL) and oopses, so C is not run on it.
# After each, the driver is still alive: a port going down and up is seen in sysfs (the async EQ
# is still armed and consumed), the port attributes read (commands still complete). Then unload,
# kmemleak and dmesg clean. No oops, no hang.
# stacks: rust c
# timeout: 400

port=/sys/class/infiniband/mlx5_0/ports/1
zeros() { printf "%0${1}d" 0; }
bogus=00abcdef

# still_alive <after what>: the port goes down and up, sysfs follows, attributes read.
still_alive() {
	check_output "after $1: model: port 1 down" '^ok port 1 down$' model_ctl port 1 down
	wait_for "after $1: sysfs sees the port DOWN (async EQ still armed)" 10 '^1: DOWN$' cat $port/state
	check_output "after $1: model: port 1 up" '^ok port 1 up$' model_ctl port 1 up
	wait_for "after $1: sysfs sees the port ACTIVE" 10 '^4: ACTIVE$' cat $port/state
	check_output "after $1: the port's LID reads (commands still complete)" '^0x[0-9a-f]+$' cat $port/lid
}

if [ "$STACK" = rust ]; then
	# The test interface binds the auxiliary device only while mlx5_ib does not; the completion
	# EQs it asks for stay until mlx5_core goes.
	check "load mlx5_core" load_stack ib_core mlx5_core
	check "completion EQs exist (test interface, completion=1)" insmod $stack_dir/mlx5_test_interface.ko completion=1
	wait_for "test interface: the completion side works" 10 "mlx5_test_interface: completion .*: ok" dmesg
	check "the test interface unloads" rmmod mlx5_test_interface
fi
check "load the stack" load_stack
wait_for "mlx5_0 port ACTIVE" 60 '^4: ACTIVE$' cat $port/state

check_output "model: unknown event type 0x3e on the async EQ" '^ok eqe 0x3e posted to 1 EQ' model_ctl eqe async 0x3e 0
still_alive "an unknown event type"

check_output "model: port change for port 7" '^ok eqe 0x9 posted to 1 EQ' \
	model_ctl eqe async 0x09 4 "$(zeros 16)70$(zeros 38)"
still_alive "a port change for a port that does not exist"

check_output "model: CQ error for CQ 0xabcdef" '^ok eqe 0x4 posted to 1 EQ' \
	model_ctl eqe async 0x04 0 "$bogus$(zeros 48)"
check_output "model: QP catastrophic error for QP 0xabcdef" '^ok eqe 0x5 posted to 1 EQ' \
	model_ctl eqe async 0x05 0 "$(zeros 40)00000000$bogus"
check_output "model: SRQ limit for SRQ 0xabcdef" '^ok eqe 0x14 posted to 1 EQ' \
	model_ctl eqe async 0x14 0 "$(zeros 40)01000000$bogus"
still_alive "events for a CQ, QP and SRQ that do not exist"

check_output "model: completion for CQ 0xabcdef on every completion EQ" '^ok eqe 0x0 posted to [1-9][0-9]* EQ' \
	model_ctl eqe comp 0x00 0 "$(zeros 48)$bogus"
still_alive "completions for a CQ that does not exist"

if [ "$STACK" = rust ]; then
	check_output "model: command completions for all 32 slots, none in flight" '^ok eqe 0xa posted to 1 EQ' \
		model_ctl eqe cmd 0x0a 0 "ffffffff$(zeros 48)"
	still_alive "stray command completions"
fi

check "the stack unloads" unload_stack
kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

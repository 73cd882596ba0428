# kunit: load our modules and report every rdma_rs_* KUnit suite they carry (suites run at load).
# stacks: rust
# kunit: yes

check "load the $STACK stack" load_stack
found=0
for s in /sys/kernel/debug/kunit/rdma_rs_*; do
	[ -d "$s" ] || continue
	found=$((found + 1))
	kunit_suite "${s##*/}"
done
check_output "at least one rdma_rs KUnit suite ran" '^[1-9]' echo $found
check "unload the stack" unload_stack
dmesg_clean "dmesg has no warnings"

# c-abi-iwcm: C's iWARP connection manager on either stack (issue "ib_core's C ABI", step 5:
# iw_cm; docs/c-abi.md). iw_cm.ko is C's, from the kernel tree, the same file on both stacks; on
# the Rust core it links to the C ABI's RDMA netlink (rdma_nl_register for its iWARP port mapper
# client, ibnl_put_msg/ibnl_put_attr, rdma_nl_unicast ...). `rdma_nl_tester iwpm` sends what the
# port mapper daemon (iwpmd) sends on RDMA_NL_IWCM: hellos (iw_cm answers with its ABI version
# through rdma_nl_unicast, then the dump's DONE), mapping info from iwpmd and from another
# name, a bad hello, an op without a callback, an answer nobody asked for; each answer must be
# the C stack's line (below). Before iw_cm and after it unloads, every request is EINVAL (no
# table for the client). Then the stack unloads; kmemleak (rust), dmesg.
# stacks: rust c

# The C stack's lines with iw_cm loaded (the oracle; recorded from it).
IWPM_LINES=$(cat <<'EOF2'
iwpm hello abi 4: msg client 2 op 8 from 0 [1]=4, done 0
iwpm hello abi 3: msg client 2 op 8 from 0 [1]=3, done 0
iwpm hello without its attribute: done -22
iwpm hello with a 1-byte version: done -22
iwpm mapinfo from iwpmd, no mapping: done 0
iwpm mapinfo from another name: done -22
iwpm remove mapping (no callback): error -22
iwpm reg pid answer without attributes: done -22
EOF2
)
# Without a table: every request gets EINVAL.
NO_TABLE=$(cat <<'EOF2'
iwpm hello abi 4: error -22
iwpm hello abi 3: error -22
iwpm hello without its attribute: error -22
iwpm hello with a 1-byte version: error -22
iwpm mapinfo from iwpmd, no mapping: error -22
iwpm mapinfo from another name: error -22
iwpm remove mapping (no callback): error -22
iwpm reg pid answer without attributes: error -22
EOF2
)

# iwpm_is <lines>: `rdma_nl_tester iwpm` prints exactly <lines>.
iwpm_is() {
	_got=$(rdma_nl_tester iwpm)
	[ "$_got" = "$1" ] && return 0
	printf 'expected:\n%s\ngot:\n%s\n' "$1" "$_got"
	return 1
}

check "load the $STACK stack" load_stack
check "no iWARP port mapper client before iw_cm: EINVAL" iwpm_is "$NO_TABLE"
check "insmod iw_cm.ko (C's, the same file on both stacks)" insmod $stack_dir/iw_cm.ko
check "iw_cm answers the port mapper's requests as on C" iwpm_is "$IWPM_LINES"
check "rmmod iw_cm" rmmod iw_cm
check "its client is gone: EINVAL again" iwpm_is "$NO_TABLE"
check "unload the stack" unload_stack
[ "$STACK" = rust ] && kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

# c-abi-iwcm: C's iWARP connection manager on either stack (issue "ib_core's C ABI", step 5:
# iw_cm; docs/c-abi.md). iw_cm.ko is C's, from the kernel tree, the same file on both stacks; on
# the Rust core it links to the C ABI's RDMA netlink (rdma_nl_register for its iWARP port mapper
# client, ibnl_put_msg/ibnl_put_attr, rdma_nl_unicast ...). `rdma_nl_tester iwpm` sends what the
# port mapper daemon (iwpmd) sends on RDMA_NL_IWCM: hellos (iw_cm answers with its ABI version
# through rdma_nl_unicast, then the dump's DONE), mapping info from iwpmd and from another
# name, a bad hello, an op without a callback, an answer nobody asked for; each answer must be
# the C stack's line (below). iw_cm is installed in the guest's module tree with the stack
# (`# install-modules: yes iw_cm`), as on a host: the port mapper's first request loads it
# (the core asks for `rdma-netlink-subsys-2`, iw_cm's alias, as C's get_cb_table does) and it
# answers. Then, with iw_cm unloaded and its file out of the tree, every request is EINVAL (no
# table, none to load); put back, insmod by hand serves again. Then the stack unloads; kmemleak
# (rust), dmesg.
# stacks: rust c
# install-modules: yes iw_cm

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

iw_cm_loaded() { grep -q '^iw_cm ' /proc/modules; }
installed=$(find /lib/modules/$(uname -r) -name iw_cm.ko)

check "load the $STACK stack" load_stack
check_output "iw_cm is in the module tree under its alias" 'rdma-netlink-subsys-2' modinfo -F alias iw_cm
check "iw_cm is not loaded yet" sh -c '! grep -q "^iw_cm " /proc/modules'
check "the port mapper's first request loads iw_cm, which answers as on C" iwpm_is "$IWPM_LINES"
check "iw_cm was loaded by the core's request_module" iw_cm_loaded
check "rmmod iw_cm" rmmod iw_cm
check "iw_cm out of the module tree" mv "$installed" /tmp/iw_cm.ko
check "no client and none to load: EINVAL" iwpm_is "$NO_TABLE"
check "iw_cm back in the tree" mv /tmp/iw_cm.ko "$installed"
check "insmod iw_cm.ko (C's, the same file on both stacks)" insmod $stack_dir/iw_cm.ko
check "iw_cm answers the port mapper's requests as on C" iwpm_is "$IWPM_LINES"
check "rmmod iw_cm" rmmod iw_cm
check "unload the stack" unload_stack
[ "$STACK" = rust ] && kmemleak_clean "kmemleak finds no leak"
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

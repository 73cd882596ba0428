# dev-rxe-user-2vm: development scenario for rxe user verbs (temporary).
# vms: 2
# vm-stacks: rust c
# timeout: 600
# make-test: no
# install-modules: yes udp_tunnel ip6_udp_tunnel rdma_rxe siw

check "load the stack" load_stack
meet net-up
check "rdma link add rxe0 type rxe netdev eth0" rdma link add rxe0 type rxe netdev eth0
meet rxe-up
if [ "$VM_INDEX" = 0 ]; then
	timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -n 50 > /tmp/pp.out 2>&1 &
	pp=$!
	wait_listening 18515 20
	meet pp1
	wait $pp; echo "# server rc=$?"; cat /tmp/pp.out | sed 's/^/# /'
else
	meet pp1
	timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -n 50 $PEER_IP > /tmp/pp.out 2>&1; echo "# client rc=$?"; cat /tmp/pp.out | sed 's/^/# /'
fi
meet pp1-done
dmesg | tail -30 | sed 's/^/# dmesg: /'
meet done

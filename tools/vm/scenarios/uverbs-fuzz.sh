# uverbs-fuzz: a uverbs fuzzer with the C stack as the oracle (issue "Hardening II"). VM 0 runs
# the Rust stack, VM 1 the C stack, each on its own cx-model. Both run `uverbs_badinput --fuzz
# SEED COUNT` for the same seeds: seeded random but well-typed ioctl and write() commands on one
# context (PDs, MRs and their rereg, CQs, QPs with modify/query, SRQs with modify, ports, and
# two threads destroying the same object at once), with handles live, dead, of the wrong type
# or never given, and sizes, flags, states and masks at their boundaries; each command is
# printed with its errno (a concurrent destroy with how many of its two calls succeeded). VM 1 serves its traces over the
# guests' virtio-net link (busybox httpd) and VM 0 compares them line by line: every errno must
# be C's. Each VM then closes its file with whatever the sequence left alive, unloads, and has
# no kernel report and no leak; every firmware object is back in both models.
# FUZZ_SEEDS (default "1 2 3 4") x FUZZ_COUNT (default 5000) commands per stack; uverbs-fuzz-full
# runs more.
# vms: 2
# vm-stacks: rust c
# timeout: 1500

SEEDS=${FUZZ_SEEDS:-1 2 3 4}
COUNT=${FUZZ_COUNT:-5000}
PORT=18600
mkdir -p /tmp/www

check "load the stack" load_stack
wait_for "mlx5_0 port 1 is ACTIVE" 60 'state ACTIVE' rdma link show mlx5_0/1
wait_for "uverbs0 is there" 30 uverbs0 ls /dev/infiniband
# C's mlx5_ib makes its UMR QP and CQ at the first MR rereg: one rereg first, on both stacks,
# so that the objects counted before are those the fuzzer's closes must come back to.
check_output "warm-up: an MR rereg" '^rereg to PD2: ok closed$' sh -c 'echo $(verbs_hostile rereg-pd)'
objects_before=$(model_ctl objects)
meet net-up
check_output "ping $PEER_IP: 3 of 3 answered" ' 0% packet loss' ping -c 3 -W 5 "$PEER_IP"

total=0
for seed in $SEEDS; do
	uverbs_badinput --fuzz "$seed" "$COUNT" >/tmp/www/trace-$seed 2>&1
	check_output "seed $seed: $COUNT commands sent" "^fuzz: $COUNT commands\$" tail -n 1 /tmp/www/trace-$seed
	total=$((total + COUNT))
	echo "# seed $seed: $(grep -c -- '-> 0' /tmp/www/trace-$seed) succeeded; refused: $(sed -n 's/.* -> \(E[A-Z0-9]*\)$/\1/p' /tmp/www/trace-$seed | sort | uniq -c | sort -rn | awk '{printf "%s %s, ", $2, $1}')"
	check_output "seed $seed: every object the sequence left is destroyed at close" "^$objects_before\$" model_ctl objects
done
echo "# $total commands on the $STACK stack"

if [ "$VM_INDEX" = 1 ]; then
	httpd -p $PORT -h /tmp/www
	wait_listening $PORT 10
	meet traces-served
	meet traces-compared
	killall httpd 2>/dev/null
else
	meet traces-served
	for seed in $SEEDS; do
		rm -f /tmp/c-trace
		wget -q -O /tmp/c-trace "http://$PEER_IP:$PORT/trace-$seed"
		first=$(diff /tmp/www/trace-$seed /tmp/c-trace | grep -E '^[-+][0-9]' | head -n 6 | tr '\n' '|')
		lines=$(wc -l </tmp/c-trace)
		ktap_result $([ -s /tmp/c-trace ] && cmp -s /tmp/www/trace-$seed /tmp/c-trace && echo 0 || echo 1) \
			"seed $seed: every errno is C's ($lines lines compared)" "first differences (-rust +c): $first"
		# The history of the object the first differing command named (on rust), to read the
		# difference without the guests.
		line=$(diff /tmp/www/trace-$seed /tmp/c-trace | grep -E '^-[0-9]' | head -n 1)
		if [ -n "$line" ]; then
			set -- $line
			n=${1#-}
			head -n $((n + 2)) /tmp/www/trace-$seed | grep -E " $3 [0-9]+ [0-9]+ [0-9]+ -> | made $3\$" |
				tail -n 12 | sed 's/^/# rust: /'
		fi
	done
	meet traces-compared
fi

check "unload the stack" unload_stack
# C 7.3 leaks the task of a process that registered MRs (see uverbs-devices): kmemleak is
# checked on rust only.
if [ "$STACK" = rust ]; then
	kmemleak_clean "rust: kmemleak: nothing leaked"
fi
dmesg_clean "dmesg has no warnings, oopses or lockdep reports"

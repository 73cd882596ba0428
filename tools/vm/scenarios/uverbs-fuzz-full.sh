# uverbs-fuzz-full: uverbs-fuzz with 20 seeds of 20000 commands each (400000 per stack). Not part
# of `make test` (it takes much longer): run it with `make vm-test SCENARIO=uverbs-fuzz-full`.
# vms: 2
# vm-stacks: rust c
# make-test: no
# timeout: 5400

FUZZ_SEEDS="$(seq 101 120)"
FUZZ_COUNT=20000
. /scenarios/uverbs-fuzz.sh

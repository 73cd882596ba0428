# hardening-failslab-full: hardening-failslab with every allocation point of every step failed in
# turn (stride 1). Not part of `make test` (it takes much longer): run it with
# `make vm-test SCENARIO=hardening-failslab-full`.
# stacks: rust
# make-test: no
# timeout: 5400
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

FAILSLAB_STRIDE=1
FAILSLAB_CLIENT_LAST=600
. /scenarios/hardening-failslab.sh

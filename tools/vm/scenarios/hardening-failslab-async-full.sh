# hardening-failslab-async-full: hardening-failslab-async with every allocation point of the
# interrupt thread failed in turn (stride 1; 151 points and 471 s on 2026-11-27). Not
# part of `make test`: run it with `make vm-test SCENARIO=hardening-failslab-async-full`.
# stacks: rust
# Rust only, as hardening-failslab-async: the C stack's own failure paths are not ours to test.
# make-test: no
# timeout: 2400
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held

FAILSLAB_IRQ_STRIDE=1
. /scenarios/hardening-failslab-async.sh

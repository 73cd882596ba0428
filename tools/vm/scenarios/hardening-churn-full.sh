# hardening-churn-full: hardening-churn with the 100 load/unload cycles of the whole stack the
# issue asks for, and 30 unbind/bind cycles. Not part of `make test` (long): run it with
# `make vm-test SCENARIO=hardening-churn-full STACK=rust` (or c).
# make-test: no
# timeout: 5400
# host-check: firmware pages: [0-9]+ given, [0-9]+ returned, 0 still held
# Two CPUs: readers on one CPU racing the reload on another.
# cpus: 2

CHURN_CYCLES=100
CHURN_BINDS=30
CHURN_ROUNDS=10
. /scenarios/hardening-churn.sh

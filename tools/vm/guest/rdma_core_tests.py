#!/usr/bin/env python3
"""rdma-core's own tests (Debian's python3-pyverbs, /usr/share/doc/rdma-core/tests) in the guest,
with an outcome per test (the harness copies this file next to the tests; `# guest-python: yes`).

  rdma_core_tests.py run --dev mlx5_0 --out FILE [--exclude NAME]... [--test-timeout SECS] [--seed S]
      runs the suite as its run_tests.py does (the same loader, the same `--dev`), verbose, and
      writes one line per test to FILE as each ends, `OUTCOME<TAB>TEST-ID<TAB>SECS<TAB>REASON`
      (SECS: the test's wall time in the guest, REASON: the skip reason or the error's last
      line), OUTCOME
      one of pass, fail, error, skip, xfail (expected failure), upass (unexpected success),
      excluded (named with --exclude, not run), notrun (its class's setUpClass failed or the
      suite stopped before it); the last line is `end` once the suite is over, so a list cut
      short by a hang shows it. A test running longer than --test-timeout seconds is stopped
      with an error (SIGALRM; a test stuck in the kernel is not, the scenario's timeout is).
      Python's random module is seeded with `S:TEST-ID` before each test (the tests draw QP
      caps, creation flags and sizes at random): both stacks, and every run, get the same draws.
  rdma_core_tests.py totals FILE
      one line: `N passed, N failed, N errors, N skipped` (and the rest if any).
  rdma_core_tests.py compare RUST-FILE C-FILE [--known TEST]...
      prints both stacks' outcome of every test, and the tests whose outcomes differ; exits 1 if a
      test C passes does not pass on Rust (printed on lines `c-only-pass: TEST`), unless it is
      one of the --known gaps (printed `known-gap: TEST`), or if either list is empty; adds 2 to
      the exit code if a --known gap is no longer one (C does not pass it, or Rust does too:
      `stale-known: TEST`). TEST is the test's
      id without `tests.` (`test_qp.QPTest.test_query_uc_qp`), as --exclude also takes it.
"""

import argparse
import os
import random
import signal
import sys
import time
import unittest

TESTS = os.path.dirname(os.path.abspath(__file__))
OUTCOMES = ["pass", "fail", "error", "skip", "xfail", "upass", "excluded", "notrun"]
WORDS = {"pass": "passed", "fail": "failed", "error": "errors", "skip": "skipped",
         "xfail": "expected failures", "upass": "unexpected successes", "excluded": "excluded",
         "notrun": "not run"}


class TestTimeout(Exception):
    pass


def first_line(text):
    text = str(text).strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return (lines[-1] if lines else "")[:200].replace("\t", " ")


def run(args):
    sys.path.insert(0, TESTS)
    # As run_tests.py: its argument parser takes --dev and leaves the rest to unittest.
    sys.argv = [os.path.join(TESTS, "run_tests.py"), "--dev", args.dev]
    from args_parser import parser
    from importlib.machinery import SourceFileLoader
    tests = SourceFileLoader("tests", os.path.join(TESTS, "__init__.py")).load_module()
    parser.parse_args()
    suite = unittest.defaultTestLoader.loadTestsFromModule(tests)

    def flatten(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                yield from flatten(t)
            else:
                yield t
    all_tests = list(flatten(suite))
    excluded = set(args.exclude or [])
    out = open(args.out, "w")

    def record(outcome, test_id, reason="", secs=0.0):
        out.write(f"{outcome}\t{test_id}\t{secs:.1f}\t{first_line(reason)}\n")
        out.flush()
        os.fsync(out.fileno())

    run_tests = []
    for t in all_tests:
        if t.id().split(".")[-1] in excluded or short(t.id()) in excluded:
            record("excluded", t.id(), "excluded by the scenario")
        else:
            run_tests.append(t)
    seen = set()
    # setUpClass/setUpModule failures: unittest reports them once (an _ErrorHolder named
    # "setUpClass (tests.test_x.Class)") and runs none of the class's tests.
    class_outcome = {}

    def alarm(_sig, _frame):
        raise TestTimeout(f"stopped after {args.test_timeout} s (the scenario's per-test limit)")
    signal.signal(signal.SIGALRM, alarm)

    class Recording(unittest.TextTestResult):
        def startTest(self, test):
            super().startTest(test)
            self._outcome = ("pass", "")
            self._started = time.monotonic()
            # Many tests draw their attributes at random (QP caps, creation flags, sizes): the
            # same seed per test makes both stacks run the same test, and every run the same.
            random.seed(f"{args.seed}:{test.id()}")
            signal.alarm(args.test_timeout)

        def stopTest(self, test):
            signal.alarm(0)
            super().stopTest(test)
            seen.add(test.id())
            record(self._outcome[0], test.id(), self._outcome[1], time.monotonic() - self._started)

        def _set(self, test, outcome, reason):
            if isinstance(test, unittest.case._SubTest):
                test = test.test_case
            if not hasattr(test, "_testMethodName"):  # a class or module fixture
                class_outcome[str(test)] = (outcome, reason)
                return
            if outcome in ("fail", "error") or self._outcome[0] == "pass":
                self._outcome = (outcome, reason)

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._set(test, "fail", self._exc_info_to_string(err, test))

        def addError(self, test, err):
            super().addError(test, err)
            self._set(test, "error", self._exc_info_to_string(err, test))

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            self._set(test, "skip", reason)

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._set(test, "xfail", "")

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._set(test, "upass", "")

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                kind = "fail" if issubclass(err[0], test.failureException) else "error"
                self._set(test, kind, self._exc_info_to_string(err, test))

    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=2, resultclass=Recording)
    runner.run(unittest.TestSuite(run_tests))
    for t in run_tests:
        if t.id() in seen:
            continue
        cls = f"{type(t).__module__}.{type(t).__qualname__}"
        why = next((v for k, v in class_outcome.items() if f"({cls})" in k), None)
        if why is not None:
            # As unittest counts it: a SkipTest in setUpClass skips the class, anything else is
            # one error for the class (its tests are counted as not run).
            record("skip" if why[0] == "skip" else "notrun", t.id(), f"setUpClass: {why[1]}")
        else:
            record("notrun", t.id(), "")
    record("end", "-", f"{len(all_tests)} tests")
    out.close()
    return 0


def read(path):
    """{test id: (outcome, reason)} and whether the list ends with `end`."""
    outcomes = {}
    ended = False
    try:
        lines = open(path).read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        parts = line.split("\t")
        if len(parts) < 2:
            continue
        if parts[0] == "end":
            ended = True
            continue
        outcomes[parts[1]] = (parts[0], parts[3] if len(parts) > 3 else "")
    return outcomes, ended


def totals_line(outcomes, ended=True):
    counts = {o: 0 for o in OUTCOMES}
    for o, _ in outcomes.values():
        counts[o] = counts.get(o, 0) + 1
    parts = [f"{counts[o]} {WORDS[o]}" for o in ("pass", "fail", "error", "skip")]
    parts += [f"{counts[o]} {WORDS[o]}" for o in OUTCOMES[4:] if counts[o]]
    line = ", ".join(parts) + f" of {len(outcomes)}"
    return line if ended else line + " (the list was cut short)"


def totals(args):
    outcomes, ended = read(args.file)
    print(totals_line(outcomes, ended))
    return 0


def short(test_id):
    return test_id[len("tests."):] if test_id.startswith("tests.") else test_id


def compare(args):
    rust, rust_ended = read(args.rust)
    c, c_ended = read(args.c)
    ids = sorted(set(rust) | set(c))
    width = max((len(short(i)) for i in ids), default=10)
    print(f"per-test outcomes ({len(ids)} tests): {'test':<{width}}  {'c':<8} rust")
    for i in ids:
        co, ro = c.get(i, ("missing", ""))[0], rust.get(i, ("missing", ""))[0]
        print(f"  {short(i):<{width}}  {co:<8} {ro}{'   <- differs' if co != ro else ''}")
    print(f"c:    {totals_line(c, c_ended)}")
    print(f"rust: {totals_line(rust, rust_ended)}")
    print("where the stacks differ:")
    c_only = []
    for i in ids:
        co, cr = c.get(i, ("missing", ""))
        ro, rr = rust.get(i, ("missing", ""))
        if co == ro:
            continue
        print(f"  {short(i)}: c {co}{' (' + cr + ')' if cr else ''}; rust {ro}{' (' + rr + ')' if rr else ''}")
        if co == "pass" and ro != "pass":
            c_only.append(short(i))
    known = set(args.known or [])
    for i in c_only:
        what = "known-gap" if i in known else "c-only-pass"
        print(f"{what}: {i} (rust: {rust.get('tests.' + i, ('missing', ''))[0]})")
    stale = sorted(known - set(c_only))
    for i in stale:
        co = c.get("tests." + i, ("missing", ""))[0]
        ro = rust.get("tests." + i, ("missing", ""))[0]
        print(f"stale-known: {i} (c: {co}, rust: {ro}): no longer a test only C passes")
    bad = [i for i in c_only if i not in known] or not rust or not c
    return (1 if bad else 0) | (2 if stale else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--dev", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--exclude", action="append")
    r.add_argument("--test-timeout", type=int, default=300)
    r.add_argument("--seed", default="rdma-rs", help="seeds Python's random module before each test")
    t = sub.add_parser("totals")
    t.add_argument("file")
    c = sub.add_parser("compare")
    c.add_argument("rust")
    c.add_argument("c")
    c.add_argument("--known", action="append")
    args = ap.parse_args()
    return {"run": run, "totals": totals, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The verdicts' power and false alarms (docs/VERDICTS.md), measured on
generated serving captures (make_serving.py: batch ramp-down, per-step
and per-kernel jitter, slow outlier steps, warm-up, graph replays) through
a running daemon (tests/verdict_rates.py):

  - PAIRS pairs of two runs of one build: `unchanged` at least 95% of
    them;
  - PAIRS pairs with the MoE family 10% slower in every step: `regressed`
    naming that family at least 95% of them; the same with the GEMM
    family (the largest);
  - 5% slower: the rate is printed (the default threshold is 5%, so about
    half is the expected rate);
  - the same with the runs of a pair sharing their benchmark's seed (the
    same steps: compared step by step): unchanged and MoE 10% slower.

Bounded: PAIRS (40) captures of about 5,000 kernels each per condition,
generated and imported in about a minute on two cores (three under ASan).
"""
import os
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import Daemon, check, check_eq  # noqa: E402
from verdict_rates import Rates, summary  # noqa: E402

PAIRS = int(os.environ.get("VERDICT_PAIRS", "40"))


def main():
    tmp = tempfile.mkdtemp(prefix="traced-rates-")
    t = time.time()
    try:
        d = Daemon(conf={"import_roots": tmp})
        with d:
            r = Rates(d, tmp, PAIRS)
            ok, n, bad = r.false_alarms()
            print("same build: %d of %d unchanged (%.1f%%)" % (
                ok, n, 100.0 * ok / n))
            check(ok >= 0.95 * n, "false alarms: %s" % [
                summary(v) for v in bad])
            for key, offset in (("moe", 3), ("gemm", 4)):
                ok, n, miss = r.detected(key, 1.10, offset)
                print("%s 10%% slower: %d of %d regressed naming it "
                      "(%.1f%%)" % (key, ok, n, 100.0 * ok / n))
                check(ok >= 0.95 * n, "%s misses: %s" % (
                    key, [summary(v) for v in miss]))
            ok, n, _ = r.detected("moe", 1.05, 5)
            print("moe 5%% slower: %d of %d regressed naming it (%.1f%%)" % (
                ok, n, 100.0 * ok / n))
            p = Rates(d, tmp, PAIRS, seed=2, paired=True)
            ok, n, bad = p.false_alarms()
            print("paired, same build: %d of %d unchanged (%.1f%%)" % (
                ok, n, 100.0 * ok / n))
            check(ok >= 0.95 * n, "paired false alarms: %s" % [
                summary(v) for v in bad])
            ok, n, miss = p.detected("moe", 1.10, 3)
            print("paired, moe 10%% slower: %d of %d regressed naming it "
                  "(%.1f%%)" % (ok, n, 100.0 * ok / n))
            check(ok >= 0.95 * n, "paired misses: %s" % [
                summary(v) for v in miss])
            check_eq((r.tests.get("paired_steps"), p.tests), (None, {
                "paired_steps": 2 * PAIRS}), "tests used")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("rates: %.0f s" % (time.time() - t))


if __name__ == "__main__":
    main()

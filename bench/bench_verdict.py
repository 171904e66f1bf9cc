"""bench_verdict.sh's body: the rates of verdicts on generated pairs."""
import os
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests"))
from tracedtest import Daemon  # noqa: E402
from verdict_rates import Rates  # noqa: E402

PAIRS = int(os.environ.get("PAIRS", "100"))
SLOWDOWNS = [float(x) for x in os.environ.get(
    "SLOWDOWNS", "3 4 5 6 7 8 10").split()]
FAMILY = os.environ.get("FAMILY", "moe")
TP = int(os.environ.get("TP", "1"))
THRESHOLD = os.environ.get("THRESHOLD", "5")
SEED = int(os.environ.get("SEED", "1"))
PAIRED = os.environ.get("PAIRED", "0") == "1"   # runs share a bench seed


def main():
    tmp = tempfile.mkdtemp(prefix="traced-bench-verdict-")
    t = time.time()
    try:
        d = Daemon(conf={"import_roots": tmp,
                         "regression_threshold_pct": THRESHOLD})
        with d:
            r = Rates(d, tmp, PAIRS, tp=TP, seed=SEED, paired=PAIRED)
            ok, n, _ = r.false_alarms()
            print("pairs %d, family %s, TP %d, threshold %s%%, %s" % (
                n, FAMILY, TP, THRESHOLD, "the runs of a pair share their "
                "benchmark's seed" if PAIRED else "seeds of their own"))
            print("| pair | verdict wanted | rate |")
            print("|---|---|---|")
            print("| same build | unchanged | %.1f%% (%d/%d) |" % (
                100.0 * ok / n, ok, n))
            smallest = None
            for i, pct in enumerate(SLOWDOWNS):
                ok, n, _ = r.detected(FAMILY, 1 + pct / 100.0, 10 + i)
                rate = 100.0 * ok / n
                print("| %s %g%% slower | regressed, naming it | %.1f%% "
                      "(%d/%d) |" % (FAMILY, pct, rate, ok, n))
                if rate >= 95.0 and smallest is None:
                    smallest = pct
            print("smallest slowdown detected in >= 95%% of pairs: %s" % (
                "%g%%" % smallest if smallest is not None else "none tried"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%.0f s (generation %.0f s); tests used: %s" % (
        time.time() - t, r.gen_s, r.tests))


if __name__ == "__main__":
    main()

# Across ranks and across runs (docs/ANALYSIS.md), and the summed tables.
# Collectives matched across ranks against tests/ref_collectives.py, on two
# real ranks (tests/data/hta_two_ranks) and the generated TP=4 set
# (tests/make_collectives.py): `traced index --collectives` and the routes.
foreach(case cli api spill)
  traced_py_test(collectives_${case} test_collectives.py ${case})
endforeach()
# Verdicts against baselines through a daemon: regressed, within noise,
# incomparable; pins; the list's badges, /metrics, the webhook on loopback
# (and a failing one, which never fails a capture).
foreach(case verdicts failures history)
  traced_py_test(verdicts_${case} test_verdicts.py ${case})
endforeach()
# The dashboard's collectives and verdicts in headless chromium.
traced_py_test(web_dom_shows_results test_web.py dom_shows_results)
set_tests_properties(web_dom_shows_results PROPERTIES SKIP_RETURN_CODE 77)
# The side files of the collectives gone wrong: left out with a warning.
traced_c_test(test_index_coll traced_index test_index_coll.c)
# The verdicts' power and false alarms on generated serving captures
# (make_serving.py) through a daemon: same-build pairs unchanged, a family
# 10% slower regressed naming it, each at least 95% of 40 pairs; the rate
# at 5% printed (bench/bench_verdict.sh sweeps further).
traced_py_test(verdicts_rates test_verdict_rates.py)
# Under the sanitizers every import is several times slower: half the
# pairs keep the test bounded on a loaded machine (the release build
# measures the rates on 40).
if(TRACED_SANITIZE)
  set_property(TEST verdicts_rates APPEND PROPERTY ENVIRONMENT
               "VERDICT_PAIRS=20")
endif()
# Verdicts on every real trace with steps (run labels or ProfilerStep#N):
# a copy with the dominant family 10% slower regressed naming it, a copy
# with 2% jitter on every kernel unchanged.
traced_py_test(verdicts_traces test_verdict_traces.py)
# Every figure two routes report, read from both, agrees.
traced_py_test(figures_agree test_figures_agree.py)

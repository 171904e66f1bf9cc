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
foreach(case verdicts failures)
  traced_py_test(verdicts_${case} test_verdicts.py ${case})
endforeach()
# The dashboard's collectives and verdicts in headless chromium.
traced_py_test(web_dom_shows_results test_web.py dom_shows_results)
set_tests_properties(web_dom_shows_results PROPERTIES SKIP_RETURN_CODE 77)
# The side files of the collectives gone wrong: left out with a warning.
traced_c_test(test_index_coll traced_index test_index_coll.c)

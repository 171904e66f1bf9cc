# The HTTP API (api/): a real daemon over real sockets. See tests/test_api.py.
foreach(case validation auth metrics contract imports diff cancel)
  traced_py_test(api_${case} test_api.py ${case})
endforeach()
# The analysis routes against tests/ref_index.py. See tests/test_api_analysis.py.
traced_py_test(api_analysis test_api_analysis.py)

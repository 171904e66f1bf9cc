# The HTTP API (api/): a real daemon over real sockets. See tests/test_api.py.
foreach(case validation auth metrics contract imports diff cancel)
  traced_py_test(api_${case} test_api.py ${case})
endforeach()
# The analysis routes against tests/ref_index.py. See tests/test_api_analysis.py.
traced_py_test(api_analysis test_api_analysis.py)

# common/file.c: the safe open every read for a client goes through (links,
# "..", FIFOs, folders, sizes; openat2 and the component walk).
traced_c_test(test_file traced_common test_file.c)

# The HTTP API (api/): a real daemon over real sockets. See tests/test_api.py.
foreach(case validation auth metrics contract imports diff cancel statuses)
  traced_py_test(api_${case} test_api.py ${case})
endforeach()
# The analysis routes against tests/ref_index.py. See tests/test_api_analysis.py.
traced_py_test(api_analysis test_api_analysis.py)

# common/file.c: the safe open every read for a client goes through (links,
# "..", FIFOs, folders, sizes; openat2 and the component walk).
traced_c_test(test_file traced_common test_file.c)
# daemon/layout.c: the trace-folder scan follows no link and opens nothing.
traced_c_test(test_layout_links traced_daemon test_layout_links.c)

# The attacks of docs/SECURITY.md, each against a real daemon: see
# tests/test_security.py.
foreach(case files fifos browser args slowloris bounds secrets echo)
  traced_py_test(security_${case} test_security.py ${case})
endforeach()
# Who may ask, judged on the headers (api/guard.c): tests/test_guard.py.
foreach(case bodies guesses)
  traced_py_test(security_${case} test_guard.py ${case})
endforeach()
traced_py_test(security_disk test_security.py disk)
set_tests_properties(security_disk PROPERTIES SKIP_RETURN_CODE 77)
# store/: the queue bound, the list's byte budget, DELETE's one decision.
traced_c_test(test_store_bounds traced_store test_store_bounds.c
              test_store_util.c)
target_link_libraries(test_store_bounds PRIVATE m)
# Open results: CSV of every table route. See
# tests/test_api_open.py.
traced_py_test(api_open_csv test_api_open.py csv)
# Slices of the raw trace against tests/ref_slice.py, and their bounds.
traced_py_test(api_open_slice test_api_open.py slice)
traced_py_test(api_open_slice_bounds test_api_open.py slice_bounds)
# A slice's client that reads too slowly, or too long, loses it.
traced_py_test(api_open_slice_slow test_api_open.py slice_slow)
# The routes, the table of tables (common/summary.h) and api/openapi.yaml
# agree, route by route and table by table.
traced_c_test(test_api_spec traced_api test_api_spec.c)

# Decode's routes (docs/DECODE.md) over HTTP against tests/ref_decode.py:
# generated ATOM-style imports per rank and summed, the repeated block,
# filters, CSV, /diff by module/layer/op; the SGLang pair's import; a
# capture with mark_trace on the simulator.
traced_py_test(test_api_decode test_api_decode.py)
# The op groups against the roof (docs/PERF.md): /ops/perf per rank and
# summed against `traced index`'s rows, its filters, the gpu_roof setting.
traced_py_test(test_api_perf test_api_perf.py)
# All ranks in one timeline against each rank's own slice.
traced_py_test(api_open_slice_ranks test_api_open.py slice_ranks)

# The dashboard (web/): files served, API paths it uses, and (with
# /usr/bin/chromium) the page rendered headless. See tests/test_web.py.
traced_py_test(web_assets_served test_web.py assets_served)
traced_py_test(web_paths_in_openapi test_web.py paths_in_openapi)
# The pages in chromium ask only routes that api_contract and the api_*
# tests walk under the sanitizers; their CPU is chromium's. Label
# `browser`: left to the release build (docs/TESTS.md, "What runs under
# the sanitizers").
foreach(case shows_kernels shows_pictures links_slices shows_decode shows_perf
        opens_perfetto)
  traced_py_test(web_dom_${case} test_web.py dom_${case})
  set_tests_properties(web_dom_${case} PROPERTIES SKIP_RETURN_CODE 77
                       LABELS browser)
endforeach()
# The pages as a performance engineer reads them (tests/test_web_pages.py):
# one palette, time axes and readouts, empty states that say why, names
# demangled, the top of a capture's page and a failure's log.
foreach(case palette axes empty_states demangled capture_top screens)
  traced_py_test(web_pages_${case} test_web_pages.py ${case})
  set_tests_properties(web_pages_${case} PROPERTIES SKIP_RETURN_CODE 77
                       LABELS browser)
endforeach()

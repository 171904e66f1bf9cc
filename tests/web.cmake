# The dashboard (web/): files served, API paths it uses, and (with
# /usr/bin/chromium) the page rendered headless. See tests/test_web.py.
traced_py_test(web_assets_served test_web.py assets_served)
traced_py_test(web_paths_in_openapi test_web.py paths_in_openapi)
traced_py_test(web_dom_shows_kernels test_web.py dom_shows_kernels)
set_tests_properties(web_dom_shows_kernels PROPERTIES SKIP_RETURN_CODE 77)
traced_py_test(web_dom_shows_pictures test_web.py dom_shows_pictures)
set_tests_properties(web_dom_shows_pictures PROPERTIES SKIP_RETURN_CODE 77)
traced_py_test(web_dom_links_slices test_web.py dom_links_slices)
set_tests_properties(web_dom_links_slices PROPERTIES SKIP_RETURN_CODE 77)
traced_py_test(web_dom_shows_decode test_web.py dom_shows_decode)
set_tests_properties(web_dom_shows_decode PROPERTIES SKIP_RETURN_CODE 77)
traced_py_test(web_dom_shows_perf test_web.py dom_shows_perf)
set_tests_properties(web_dom_shows_perf PROPERTIES SKIP_RETURN_CODE 77)
traced_py_test(web_dom_opens_perfetto test_web.py dom_opens_perfetto)
set_tests_properties(web_dom_opens_perfetto PROPERTIES SKIP_RETURN_CODE 77)
# The pages as a performance engineer reads them (tests/test_web_pages.py):
# one palette, time axes and readouts, empty states that say why, names
# demangled, the top of a capture's page and a failure's log.
foreach(case palette axes empty_states demangled capture_top screens)
  traced_py_test(web_pages_${case} test_web_pages.py ${case})
  set_tests_properties(web_pages_${case} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
# The pages in chromium ask only routes that api_contract and the api_*
# tests walk under the sanitizers; their CPU is chromium's. Label
# `browser`: left to the release build (docs/TESTS.md, "What runs under
# the sanitizers").
foreach(name web_dom_shows_kernels web_dom_shows_pictures web_dom_links_slices
        web_dom_shows_decode web_dom_shows_perf web_dom_opens_perfetto)
  set_property(TEST ${name} APPEND PROPERTY LABELS browser)
endforeach()
foreach(case palette axes empty_states demangled capture_top screens)
  set_property(TEST web_pages_${case} APPEND PROPERTY LABELS browser)
endforeach()

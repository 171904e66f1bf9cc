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
traced_py_test(web_dom_opens_perfetto test_web.py dom_opens_perfetto)
set_tests_properties(web_dom_opens_perfetto PROPERTIES SKIP_RETURN_CODE 77)

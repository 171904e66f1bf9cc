# The critical path (index/cpath*.c, host*.c): every figure of every real
# trace and of the generated ones (make_cpath.py) against the independent
# reference (ref_cpath.py); and against Holistic Trace Analysis itself,
# each difference explained (skipped without HTA and pandas/networkx).
traced_py_test(test_cpath_traces test_cpath_traces.py $<TARGET_FILE:traced>)
traced_py_test(test_cpath_hta test_cpath_hta.py $<TARGET_FILE:traced>)
set_tests_properties(test_cpath_hta PROPERTIES SKIP_RETURN_CODE 77)

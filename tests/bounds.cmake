# What a trace can make grow, a store that cannot be written, CSV that
# spreadsheets cannot run (docs/SECURITY.md): tests/test_bounds.py.
foreach(case names caps csv times)
  traced_py_test(bounds_${case} test_bounds.py ${case})
endforeach()
# Need root (a tmpfs; chattr): skipped elsewhere.
foreach(case spill_disk readonly)
  traced_py_test(bounds_${case} test_bounds.py ${case})
  set_tests_properties(bounds_${case} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()

# Sweeps (docs/SWEEPS.md) end to end on the ATOM simulator: each case its
# own entry, so that they run side by side.
foreach(case api run daemon death cancel_running restart recollect scaling
        compare)
  traced_py_test(test_sweeps_${case} test_sweeps.py ${case})
endforeach()

# Sweeps (docs/SWEEPS.md) end to end on the ATOM simulator: each case its
# own entry, so that they run side by side.
foreach(case api run daemon death cancel_running restart recollect scaling
        compare)
  traced_py_test(test_sweeps_${case} test_sweeps.py ${case})
endforeach()
# compare's verdict at conc 16 needs that point's batches to fill as they
# do on a machine with room: where other tests crowd the bench client, its
# requests arrive one by one, the batches stay small and the GEMM's 1.3x
# slope is inside the band of the two buckets left (docs/VERDICTS.md,
# "Strata"). It runs alone.
set_tests_properties(test_sweeps_compare PROPERTIES RUN_SERIAL TRUE)

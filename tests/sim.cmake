# The ATOM simulator (sim/): scripts, server, bench, fault switches and its
# strictness, its own container, the ranks it composes of real forward
# passes, and its faster clock (SIM_TIME_SCALE), in eight groups that
# ctest can run side by side. They run none of traced's code: the
# sanitizer build leaves them to the release one.
if(NOT TRACED_SANITIZE)
  foreach(group scripts server faults strict container pkill composed clock)
    traced_py_test(test_sim_${group} test_sim.py ${group})
  endforeach()
  # It plants a process ATOM's pkill patterns match, which every capture
  # beside it would judge: it runs alone.
  set_tests_properties(test_sim_pkill PROPERTIES RUN_SERIAL TRUE)
endif()

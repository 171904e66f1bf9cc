# The ATOM simulator (sim/): scripts, server, bench, fault switches, its
# strictness, ATOM's container and its faster clock (SIM_TIME_SCALE), in
# six groups that ctest can run side by side. They run none of traced's
# code: the sanitizer build leaves them to the release one.
if(NOT TRACED_SANITIZE)
  foreach(group scripts server faults strict container clock)
    traced_py_test(test_sim_${group} test_sim.py ${group})
  endforeach()
endif()

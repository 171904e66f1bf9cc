# The ATOM simulator (sim/): scripts, server, bench and fault switches, in
# three groups that ctest can run side by side.
traced_py_test(test_sim_scripts test_sim.py scripts)
traced_py_test(test_sim_server test_sim.py server)
traced_py_test(test_sim_faults test_sim.py faults)
traced_py_test(test_sim_strict test_sim.py strict)

# The ATOM simulator (sim/): scripts, server, bench and fault switches.
traced_py_test(test_sim test_sim.py)

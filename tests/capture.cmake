# The capture runner (daemon/): the trace-folder layout and the server-log
# scan as C unit tests; captures, faults, cancels, recovery and imports end
# to end on the ATOM simulator (sim/) with the real traced binary.
traced_c_test(test_capture_layout traced_daemon test_capture_layout.c)
traced_c_test(test_capture_loop traced_daemon test_capture_loop.c)
traced_py_test(test_capture test_capture.py)
traced_py_test(test_capture_faults test_capture_faults.py)
traced_py_test(test_capture_cancel test_capture_cancel.py)
traced_c_test(test_capture_plan traced_daemon test_capture_plan.c)
# Captures against ATOM as it ships: each case is its own entry so that the
# long ones (an export holding the server 20 s and 65 s) run side by side.
foreach(case blocking_export_bench blocking_export_daemon
        export_failure_and_presets every_preset launch_faults)
  traced_py_test(test_capture_atom_${case} test_capture_atom.py ${case})
endforeach()
# A full disk under the database mid-capture (needs root and a tmpfs).
traced_py_test(test_capture_disk test_capture_disk.py)
set_tests_properties(test_capture_disk PROPERTIES SKIP_RETURN_CODE 77)
# A full disk while imports wait: nothing wedged once space is back, and
# SIGTERM within its deadline.
traced_py_test(test_capture_disk_queue test_capture_disk.py queue)
set_tests_properties(test_capture_disk_queue PROPERTIES SKIP_RETURN_CODE 77)

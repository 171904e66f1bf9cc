# The capture runner (daemon/): the trace-folder layout and the server-log
# scan as C unit tests; captures, faults, cancels, recovery and imports end
# to end on the ATOM simulator (sim/) with the real traced binary.
traced_c_test(test_capture_layout traced_daemon test_capture_layout.c)
traced_c_test(test_capture_loop traced_daemon test_capture_loop.c)
traced_c_test(test_capture_phases traced_common test_capture_phases.c)
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
# What traced settles before ATOM runs (atom/launch.c), a dead exporter,
# the scripts' python: each case its own entry.
foreach(case v4_level refused dead_exporter python)
  traced_py_test(test_capture_foresee_${case} test_capture_foresee.py ${case})
endforeach()
# ATOM in its own container: GPU holders by the KFD device, memory held
# from outside, and what the scripts' pkill patterns match. The patterns
# match across the machine and every capture judges what they match: the
# case that plants such a process runs alone.
foreach(case container kill_patterns)
  traced_py_test(test_capture_container_${case} test_capture_container.py
                 ${case})
endforeach()
set_tests_properties(test_capture_container_kill_patterns PROPERTIES
                     RUN_SERIAL TRUE)
# A fresh ATOM container (docs/ATOM.md): each point its own entry, so that
# they run side by side.
foreach(case folders presets seqs template failures budgets partial daemon
        ranks foreign make_run)
  traced_py_test(test_capture_fresh_${case} test_capture_fresh.py ${case})
endforeach()
# README.md's tour, command by command, against make run's script.
traced_py_test(test_tour test_tour.py)
# What a capture request may make root do (atom/policy.c).
foreach(case hostile_bench_args server_and_bench_words env_policy
        link_moved_after_accept shell_words model_folder_trust env_code
        no_link_oracle)
  traced_py_test(test_policy_${case} test_policy.py ${case})
endforeach()
# The hardened systemd unit (systemd/traced.service).
traced_py_test(test_unit test_unit.py)
# A full disk under the database mid-capture (needs root and a tmpfs).
traced_py_test(test_capture_disk test_capture_disk.py)
set_tests_properties(test_capture_disk PROPERTIES SKIP_RETURN_CODE 77)
# A full disk while imports wait: nothing wedged once space is back, and
# SIGTERM within its deadline.
traced_py_test(test_capture_disk_queue test_capture_disk.py queue)
set_tests_properties(test_capture_disk_queue PROPERTIES SKIP_RETURN_CODE 77)

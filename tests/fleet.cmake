# The fleet (docs/FLEET.md) against real PostgreSQL clusters the tests start
# themselves (tests/pgtest.py): the end to end run, the dashboard's lab
# pages, roles, migrations, the backfill and every fault. Each case is its
# own entry (its own cluster, ports and folders) so that they run side by
# side; each exits 77 (skipped) where no PostgreSQL server is installed.
foreach(case e2e web roles migrate_race backfill stop kill9 after_commit
        two_nodes rebuild newer_schema password disk standby bad_dsn
        sweep)
  traced_py_test(fleet_${case} test_fleet.py ${case})
  set_tests_properties(fleet_${case} PROPERTIES SKIP_RETURN_CODE 77
                       TIMEOUT 900)
endforeach()

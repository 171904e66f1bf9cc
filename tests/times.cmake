# Each test's measured seconds (docs/TESTS.md, "Times"), for ctest's
# scheduler and the tiers. A row: "NAME RELEASE_S ASAN_S [LABEL...]" (the
# release build's and the ASan+UBSan build's; "-": not run there), from a
# fresh clone's `make test` on the shared 2-core machine at a load average
# of 11-16, where a test takes about twice its quiet time;
# `scripts/test_times.py --cmake LOG` prints the times of a run. In this
# build each test gets:
#   COST   its seconds, so that the slowest start first (a fresh clone has
#          no Testing/Temporary/CTestCostData.txt of its own yet)
#   slow   (a label) when 20 s or more here (10 s on a quiet machine):
#          left out of `make check`
# and its row's labels:
#   waits  its length is the simulator's clock and its C paths run in
#          other tests: not under the sanitizers (docs/TESTS.md, "What runs
#          under the sanitizers")
#   cpu    busy on a core for its length: two of ctest's slots (PROCESSORS
#          2), so that at most two such run at once at `-j 4`
# A test without a row costs nothing and is in every tier.
set(TRACED_TEST_TIMES
  "test_cpath_traces 176 54 cpu"
  "verdicts_traces 162 56 cpu"
  "test_capture_atom_every_preset 109 92"
  "verdicts_rates 106 88 cpu"
  "web_dom_shows_pictures 90 59 cpu"
  "api_open_slice 87 150 cpu"
  "test_capture_faults 84 85"
  "test_name_bomb 70 33 cpu"
  "test_capture_fresh_budgets 65 62"
  "test_capture_disk_queue 62 83"
  "test_sim_scripts 62 -"
  "test_decode 60 31 cpu"
  "test_reader 51 221 cpu"
  "test_capture_fresh_foreign 47 37"
  "test_slice_points 44 269 cpu"
  "test_capture_cancel 43 47"
  "test_capture 43 50"
  "web_dom_shows_decode 38 33 cpu"
  "test_sim_strict 37 -"
  "test_capture_atom_export_failure_and_presets 36 36"
  "test_capture_atom_launch_faults 36 28"
  "bounds_caps 33 28"
  "test_store_concurrency 33 40 cpu"
  "fleet_e2e 31 59"
  "test_index_traces 30 40 cpu"
  "test_sim_server 28 -"
  "test_capture_fresh_folders 25 18"
  "bounds_names 24 45"
  "test_capture_disk 24 25"
  "fleet_web 24 36"
  "test_capture_fresh_failures 24 20"
  "web_dom_shows_results 24 24 cpu"
  "fleet_kill9 24 30"
  "test_capture_fresh_presets 23 18"
  "test_sim_faults 22 -"
  "fleet_two_nodes 22 31"
  "test_api_decode 22 23"
  "fleet_disk 21 25"
  "test_capture_fresh_template 21 20"
  "api_open_slice_slow 21 22"
  "fleet_backfill 21 26"
  "fleet_stop 20 33"
  "collectives_spill 20 15"
  "fleet_migrate_race 20 20"
  "fleet_rebuild 18 20"
  "fleet_roles 17 24"
  "test_capture_fresh_seqs 17 16"
  "fleet_after_commit 17 12"
  "test_capture_atom_blocking_export_daemon 16 - waits"
  "verdicts_history 15 10"
  "api_imports 15 35 cpu"
  "bounds_spill_disk 14 16"
  "security_slowloris 14 14"
  "web_dom_opens_perfetto 14 13 cpu"
  "fleet_password 14 16"
  "verdicts_failures 13 15"
  "fleet_standby 13 23"
  "test_capture_fresh_daemon 13 8"
  "web_dom_shows_kernels 13 9 cpu"
  "web_dom_links_slices 13 21 cpu"
  "test_index_memory 13 16"
  "bounds_readonly 13 15"
  "security_bounds 13 16"
  "fleet_newer_schema 12 12"
  "test_sim_clock 11 -"
  "test_capture_fresh_make_run 11 15"
  "test_capture_fresh_ranks 11 6"
  "test_capture_atom_blocking_export_bench 10 - waits"
  "test_points 10 15"
  "verdicts_verdicts 10 11"
  "test_index_fixtures 10 21"
  "test_policy_hostile_bench_args 9 9"
  "api_open_slice_ranks 9 12"
  "api_contract 9 15"
  "test_capture_fresh_partial 9 8"
  "test_policy_link_moved_after_accept 8 8"
  "collectives_api 7 13"
  "security_files 6 5"
  "api_open_csv 6 8"
  "api_diff 6 18"
  "api_statuses 6 5"
  "api_analysis 6 7"
  "test_index_file 5 6"
  "test_store 4 12"
  "api_open_slice_bounds 4 12"
  "api_cancel 4 5"
  "api_validation 4 4"
  "test_store_results 4 13"
  "security_secrets 4 4"
  "test_store_fleet 4 13"
  "test_capture_loop 3 4"
  "test_policy_server_and_bench_words 3 2"
  "test_cpath_hta 3 3"
  "test_store_bounds 3 6"
  "test_store_index 3 9"
  "test_decode_tracelens 3 7"
  "security_browser 3 3"
  "collectives_cli 3 3"
  "test_policy_env_policy 3 1"
  "web_paths_in_openapi 3 2"
  "security_fifos 3 4"
  "security_args 3 2"
  "security_echo 2 4"
  "api_auth 2 2"
  "bounds_csv 2 4"
  "api_metrics 2 3"
  "security_disk 2 4"
  "web_assets_served 2 1"
  "test_unit 1 0"
  "test_index_agg 1 1"
  "test_layout_links 1 1"
  "test_index_coll 0 1"
  "test_capture_plan 0 1"
  "test_store_diff 0 2"
  "test_store_query 0 3"
  "test_store_analysis 0 1"
  "test_store_verdict 0 2"
  "test_capture_phases 0 0"
  "test_capture_layout 0 1"
  "test_file 0 0"
  "test_slice 0 0"
  "test_api_spec 0 0"
  "test_config 0 0"
  "test_index_decode 0 0"
)
foreach(row IN LISTS TRACED_TEST_TIMES)
  separate_arguments(f UNIX_COMMAND "${row}")
  list(POP_FRONT f name release_s asan_s)
  if(NOT TEST ${name})
    continue()
  endif()
  set(secs ${release_s})
  if(TRACED_SANITIZE)
    set(secs ${asan_s})
  endif()
  if(NOT secs STREQUAL "-")
    set_tests_properties(${name} PROPERTIES COST ${secs})
    if(secs GREATER_EQUAL 20)
      list(APPEND f slow)
    endif()
  endif()
  if("cpu" IN_LIST f)
    set_tests_properties(${name} PROPERTIES PROCESSORS 2)
  endif()
  if(f)
    set_property(TEST ${name} APPEND PROPERTY LABELS ${f})
  endif()
endforeach()

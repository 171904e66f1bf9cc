# Each test's measured seconds (docs/TESTS.md, "Times"), for ctest's
# scheduler and the tiers. A row: "NAME RELEASE_S ASAN_S [LABEL...]" (the
# release build's and the ASan+UBSan build's; "-": not run there);
# `scripts/test_times.py --cmake LOG` prints the times of a run. In this
# build each test gets:
#   COST   its seconds, so that the slowest start first (a fresh clone has
#          no Testing/Temporary/CTestCostData.txt of its own yet)
#   slow   (a label) when 10 s or more: left out of `make check`
# and its row's labels:
#   waits  its length is the simulator's clock and its C paths run in
#          other tests: not under the sanitizers (docs/TESTS.md, "What runs
#          under the sanitizers")
#   cpu    busy on a core for its length: two of ctest's slots (PROCESSORS
#          2), so that at most two such run at once at `-j 4`
# A test without a row costs nothing and is in every tier.
set(TRACED_TEST_TIMES
  "test_capture_fresh_budgets 107 -"
  "test_capture_atom_blocking_export_daemon 69 - waits"
  "test_capture_disk_queue 58 -"
  "test_sim_scripts 51 -"
  "test_capture_atom_every_preset 47 -"
  "web_dom_shows_pictures 44 - cpu"
  "test_capture_faults 43 -"
  "test_cpath_traces 41 - cpu"
  "verdicts_traces 32 - cpu"
  "test_capture_fresh_foreign 30 -"
  "test_sim_strict 29 -"
  "web_dom_shows_decode 27 - cpu"
  "test_sim_server 26 -"
  "api_open_slice 24 - cpu"
  "test_capture_cancel 24 -"
  "test_capture_disk 24 -"
  "verdicts_rates 23 - cpu"
  "test_capture_atom_blocking_export_bench 23 - waits"
  "test_sim_faults 19 -"
  "test_capture 19 -"
  "fleet_standby 18 -"
  "api_open_slice_slow 18 22"
  "web_dom_shows_results 17 - cpu"
  "test_slice_points 15 252 cpu"
  "fleet_e2e 14 -"
  "web_dom_links_slices 14 - cpu"
  "security_slowloris 13 14"
  "test_capture_fresh_folders 13 -"
  "test_capture_atom_launch_faults 13 -"
  "fleet_stop 13 -"
  "test_capture_fresh_failures 12 -"
  "fleet_password 12 -"
  "bounds_names 12 -"
  "web_dom_opens_perfetto 12 - cpu"
  "test_capture_atom_export_failure_and_presets 12 -"
  "fleet_kill9 11 -"
  "verdicts_failures 11 -"
  "test_capture_fresh_make_run 11 -"
  "fleet_two_nodes 11 -"
  "fleet_web 11 -"
  "fleet_disk 10 -"
  "test_decode 10 32 cpu"
  "fleet_newer_schema 9 -"
  "test_reader 8 103 cpu"
  "test_capture_fresh_template 8 -"
  "fleet_roles 8 -"
  "test_policy_link_moved_after_accept 8 -"
  "fleet_rebuild 7 -"
  "test_policy_hostile_bench_args 7 -"
  "fleet_backfill 7 -"
  "test_capture_fresh_presets 7 -"
  "test_name_bomb 6 25 cpu"
  "fleet_after_commit 6 -"
  "bounds_readonly 6 -"
  "test_capture_fresh_seqs 6 -"
  "web_dom_shows_kernels 5 - cpu"
  "test_index_traces 5 7 cpu"
  "collectives_spill 5 -"
  "test_store_concurrency 5 18 cpu"
  "test_capture_fresh_daemon 5 -"
  "bounds_caps 4 -"
  "test_capture_loop 4 -"
  "test_api_decode 4 -"
  "test_capture_fresh_ranks 4 -"
  "verdicts_verdicts 3 -"
  "fleet_migrate_race 3 -"
  "test_capture_fresh_partial 3 -"
  "test_cpath_hta 3 -"
  "collectives_api 3 -"
  "bounds_spill_disk 2 -"
  "api_imports 2 68 cpu"
  "test_points 2 2"
  "collectives_cli 2 -"
  "verdicts_history 2 -"
  "test_index_memory 2 4"
  "api_statuses 2 6"
  "test_index_fixtures 1 3"
  "api_diff 1 12"
  "security_bounds 1 11"
  "test_policy_server_and_bench_words 1 -"
  "api_contract 1 12"
  "api_open_csv 1 8"
  "test_policy_env_policy 1 -"
  "api_open_slice_ranks 1 -"
  "test_store_results 1 4"
  "api_analysis 1 5"
  "test_unit 1 -"
  "security_files 1 9"
  "web_paths_in_openapi 1 -"
  "api_open_slice_bounds 1 3"
  "test_store_fleet 1 3"
  "api_validation 1 2"
  "api_cancel 1 2"
  "test_index_file 1 5"
  "security_fifos 1 3"
  "test_store 1 2"
  "web_assets_served 1 -"
  "test_store_index 0 2"
  "bounds_csv 0 -"
  "security_secrets 0 3"
  "security_args 0 2"
  "security_browser 0 2"
  "security_disk 0 3"
  "test_decode_tracelens 0 1"
  "test_store_bounds 0 3"
  "test_index_coll 0 -"
  "api_auth 0 1"
  "api_metrics 0 1"
  "security_echo 0 1"
  "test_index_agg 0 1"
  "test_store_verdict 0 0"
  "test_store_query 0 0"
  "test_store_analysis 0 0"
  "test_capture_layout 0 -"
  "test_layout_links 0 0"
  "test_capture_plan 0 -"
  "test_store_diff 0 0"
  "test_api_spec 0 0"
  "test_slice 0 0"
  "test_index_decode 0 0"
  "test_file 0 0"
  "test_config 0 0"
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
    if(secs GREATER_EQUAL 10)
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

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
# A test without a row yet (new since the last measured run) costs 30 s,
# so that it starts among the slow ones rather than alone at the end, and
# is in every tier.
set(TRACED_TEST_TIMES
  "verdicts_traces 166 141 cpu"
  "test_cpath_traces 151 150 cpu"
  "test_capture_atom_every_preset 130 137"
  "test_capture_faults 105 123"
  "test_capture_container_container 97 181"
  "verdicts_rates 74 51 cpu"
  "test_sim_scripts 69 -"
  "test_capture_disk_queue 66 69"
  "test_capture_fresh_budgets 64 71"
  "api_open_slice 61 167 cpu"
  "test_sim_container 53 -"
  "index_stop_sigterm 20 18 cpu"
  "web_dom_shows_pictures 49 38 cpu"
  "test_slice_points 48 283 cpu"
  "test_sim_strict 43 -"
  "test_capture_cancel 39 51"
  "test_capture_fresh_foreign 37 58"
  "bounds_names 37 47"
  "test_capture_atom_launch_faults 35 43"
  "test_capture 34 54"
  "test_tour 33 37"
  "fleet_web 31 36"
  "web_dom_shows_decode 31 29 cpu"
  "fleet_kill9 30 45"
  "fleet_e2e 30 35"
  "web_dom_shows_results 30 37 cpu"
  "test_sim_composed 30 -"
  "test_decode 29 48 cpu"
  "test_sim_server 29 -"
  "test_capture_fresh_presets 28 34"
  "test_capture_atom_export_failure_and_presets 28 51"
  "test_capture_disk 28 28"
  "test_capture_foresee_dead_exporter 28 36"
  "fleet_sweep 28 29"
  "web_pages_capture_top 28 31"
  "test_capture_fresh_failures 27 29"
  "test_capture_fresh_folders 24 33"
  "test_sim_faults 24 -"
  "test_reader 24 214 cpu"
  "web_dom_shows_perf 24 18 cpu"
  "test_capture_fresh_template 23 29"
  "api_open_slice_slow 23 24"
  "test_index_traces 23 40 cpu"
  "test_name_bomb 22 48 cpu"
  "bounds_caps 21 28"
  "index_stop_cancel 17 18"
  "test_sweeps_recollect 21 19"
  "fleet_disk 20 32"
  "test_sweeps_run 20 20"
  "test_sweeps_compare 20 22"
  "fleet_standby 19 22"
  "test_api_perf 19 15"
  "fleet_stop 18 45"
  "test_api_decode 18 17"
  "test_reals 18 12"
  "test_capture_atom_blocking_export_daemon 17 - waits"
  "fleet_two_nodes 17 40"
  "figures_agree 17 17"
  "fleet_backfill 16 30"
  "test_capture_fresh_seqs 16 22"
  "fleet_roles 16 22"
  "test_store_concurrency 15 68 cpu"
  "fleet_password 15 17"
  "test_sweeps_daemon 15 13"
  "test_sweeps_restart 15 11"
  "test_capture_foresee_v4_level 14 28"
  "security_slowloris 14 16"
  "test_capture_container_kill_patterns 14 13"
  "fleet_rebuild 14 31"
  "fleet_newer_schema 14 27"
  "test_sweeps_death 14 10"
  "test_sweeps_scaling 14 21"
  "web_pages_axes 14 22"
  "verdicts_failures 13 23"
  "fleet_after_commit 13 24"
  "bounds_readonly 12 21"
  "web_dom_links_slices 12 16 cpu"
  "web_pages_empty_states 12 13"
  "web_pages_palette 12 19"
  "test_sim_clock 11 -"
  "test_capture_fresh_make_run 11 16"
  "test_capture_fresh_ranks 11 19"
  "test_memory 11 6"
  "test_policy_link_moved_after_accept 10 19"
  "web_dom_opens_perfetto 10 16 cpu"
  "test_sweeps_api 10 12"
  "web_pages_demangled 10 9"
  "test_perf_tracelens 10 7"
  "test_capture_fresh_daemon 9 21"
  "collectives_spill 9 18"
  "test_policy_hostile_bench_args 9 16"
  "test_capture_atom_blocking_export_bench 9 - waits"
  "test_capture_foresee_refused 9 19"
  "bounds_spill_disk 9 19"
  "test_points 9 11"
  "fleet_migrate_race 8 17"
  "security_bounds 8 26"
  "test_capture_fresh_partial 8 16"
  "test_sweeps_cancel_running 8 7"
  "web_dom_shows_kernels 7 8 cpu"
  "verdicts_history 7 20"
  "api_open_csv 6 18"
  "test_index_memory 6 23"
  "api_contract 6 10"
  "test_index_fixtures 6 11"
  "verdicts_verdicts 6 17"
  "security_guesses 6 7"
  "api_analysis 5 17"
  "api_open_slice_ranks 5 22"
  "test_store 5 11"
  "test_perf_models 5 1"
  "test_sim_pkill 4 -"
  "api_statuses 4 9"
  "security_files 4 14"
  "test_capture_loop 4 4"
  "security_bodies 4 6"
  "index_stop_deadline 3 3"
  "test_store_fleet 4 11"
  "test_store_results 4 8"
  "api_imports 4 38 cpu"
  "api_diff 4 13"
  "collectives_api 3 20"
  "security_secrets 3 11"
  "bounds_times 3 9"
  "api_open_slice_bounds 3 10"
  "test_index_file 3 17"
  "test_cpath_hta 3 8"
  "api_cancel 2 6"
  "security_disk 2 5"
  "collectives_cli 2 9"
  "test_policy_env_policy 2 4"
  "test_policy_server_and_bench_words 2 7"
  "api_validation 2 6"
  "bounds_csv 1 6"
  "web_paths_in_openapi 1 8"
  "security_browser 1 5"
  "web_assets_served 1 3"
  "test_capture_foresee_python 1 3"
  "test_store_index 1 10"
  "api_auth 1 4"
  "test_decode_tracelens 1 5"
  "security_echo 1 3"
  "test_store_bounds 1 11"
  "test_policy_model_folder_trust 1 2"
  "test_policy_env_code 1 3"
  "security_args 1 4"
  "security_fifos 1 5"
  "api_metrics 1 2"
  "fleet_bad_dsn 1 2"
  "test_policy_shell_words 1 1"
  "test_unit 1 1"
  "test_index_coll 1 2"
  "test_policy_no_link_oracle 1 2"
  "web_pages_screens 1 1"
  "test_capture_plan 0 2"
  "test_store_verdict 0 2"
  "test_store_query 0 2"
  "test_capture_layout 0 1"
  "test_index_agg 0 4"
  "test_layout_links 0 1"
  "test_store_diff 0 1"
  "test_store_analysis 0 1"
  "test_api_spec 0 0"
  "test_tree 1 -"
  "test_file 0 0"
  "test_capture_phases 0 0"
  "test_slice 0 1"
  "test_config 0 0"
  "test_index_decode 0 0"
  "test_roof 0 0"
)
get_property(unmeasured DIRECTORY PROPERTY TESTS)
foreach(row IN LISTS TRACED_TEST_TIMES)
  separate_arguments(f UNIX_COMMAND "${row}")
  list(POP_FRONT f name release_s asan_s)
  if(NOT TEST ${name})
    continue()
  endif()
  list(REMOVE_ITEM unmeasured ${name})
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
foreach(name IN LISTS unmeasured)
  set_tests_properties(${name} PROPERTIES COST 30)
endforeach()

# store tests: C, linked with traced_store; fixtures are built in the tests
# from hand-written inputs (tests/test_store_util.c), never from index/.
traced_c_test(test_store traced_store test_store.c test_store_util.c)
target_link_libraries(test_store PRIVATE m)
traced_c_test(test_store_query traced_store test_store_query.c
              test_store_util.c)
target_link_libraries(test_store_query PRIVATE m)
traced_c_test(test_store_diff traced_store test_store_diff.c
              test_store_util.c)
target_link_libraries(test_store_diff PRIVATE m)
traced_c_test(test_store_concurrency traced_store test_store_concurrency.c
              test_store_util.c)
target_link_libraries(test_store_concurrency PRIVATE m)
# Real traces indexed by idx_file() (traced_index), stored and read back.
traced_c_test(test_store_index traced_store test_store_index.c
              test_store_util.c)
target_link_libraries(test_store_index PRIVATE traced_index m)
# The analysis tables: idle, the re-binned timeline, families, by family.
traced_c_test(test_store_analysis traced_store test_store_analysis.c
              test_store_util.c)
target_link_libraries(test_store_analysis PRIVATE m)
# A capture's finish: the all-ranks tables summed once answer what summing
# the ranks' rows answers, for every table, filter, sort and limit.
traced_c_test(test_store_results traced_store test_store_results.c
              test_store_util.c test_store_traces.c)
target_link_libraries(test_store_results PRIVATE traced_index m)
# The verdicts' statistics against closed forms and hand-computed values;
# a capture's figures by stratum from hand-written step samples.
traced_c_test(test_store_verdict traced_store test_store_verdict.c
              test_store_util.c)
target_link_libraries(test_store_verdict PRIVATE m)
# The fleet's side of the store (docs/FLEET.md): the outbox the triggers
# fill, the backfill, a capture of real traces published and copied into a
# lab view's file answering every table as its node does, the lab's index.
traced_c_test(test_store_fleet traced_store test_store_fleet.c
              test_store_util.c test_store_traces.c)
target_link_libraries(test_store_fleet PRIVATE traced_index m)

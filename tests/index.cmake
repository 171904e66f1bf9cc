# The indexer's aggregation (index/agg/ and the rooms of its passes: host/,
# cpath/, decode/...; file.c, cli.c). test_index_agg links those rooms'
# sources directly (not the whole traced_index library) so that it tests
# them alone, fed hand-made events: every room but the reader's and the
# slicer's, so that a pass's new room is in (agg.c's pass table names its
# hooks).
file(GLOB AGG_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/index/*/*.c)
list(FILTER AGG_SRC EXCLUDE REGEX "/index/(read|slice)/")
list(REMOVE_ITEM AGG_SRC ${CMAKE_SOURCE_DIR}/index/agg/coll_match.c)
traced_c_test(test_index_agg traced_common test_index_agg.c ${AGG_SRC}
  ${CMAKE_SOURCE_DIR}/index/read/format.c ${CMAKE_SOURCE_DIR}/index/read/args.c)
target_link_libraries(test_index_agg PRIVATE ${IBERTY_LIB} m)

# `traced index` on every real trace against the Python reference.
traced_py_test(test_index_traces test_index_traces.py)

# Generated fixtures (ATOM TP=2 labels, seed 003 mcTracer, malformed files)
# against the generator's own figures; the command line.
traced_py_test(test_index_fixtures test_index_fixtures.py)

# Peak RSS flat from 21 MB to 170 MB of JSON; spill, merge and the launch
# join's overflow path exact at scale.
traced_py_test(test_index_memory test_index_memory.py)

# idx_file(): progress, cancel, rank override, rules, errors.
traced_c_test(test_index_file traced_index test_index_file.c)

# The distinct-names bomb through a running daemon: VmHWM under 128 MB,
# names beyond max_kernel_names folded, every count and total kept.
traced_py_test(test_name_bomb test_name_bomb.py)

# Slices of the raw trace (index/slice/slice.c, slice_json.c): the mending of
# the reader's quirks, hand-made traces byte for byte, traced's tracks.
traced_c_test(test_slice traced_index test_slice.c)
# Slices from access points (docs/SLICES.md): byte for byte the whole
# file's slice on every real trace.
traced_c_test(test_slice_points traced_index test_slice_points.c
              test_reader_util.c)

# Decode (docs/DECODE.md): host stacks and replay matching alone; every
# decode table of `traced index` against tests/ref_decode.py on every real
# trace, both real graph-capture pairs and a generated ATOM-style folder;
# the (op, parent module) rows against TraceLens's own ops summary.
traced_c_test(test_index_decode traced_index test_index_decode.c)
traced_py_test(test_decode test_decode.py)
traced_py_test(test_decode_tracelens test_decode_tracelens.py)

# index/'s rooms include one another as a stack (index/README.md's order),
# and only through their faces.
traced_py_test(test_index_rooms test_index_rooms.py)
# The op performance models alone (index/perf/): every row of TraceLens's
# per-op reports (../shared/traces/perf_pairs) through its own model,
# from the arguments the report gives.
add_executable(perf_eval perf_eval.c)
target_link_libraries(perf_eval PRIVATE traced_index)
traced_py_test(test_perf_models test_perf_models.py)
set_property(TEST test_perf_models APPEND PROPERTY ENVIRONMENT
             "PERF_EVAL=$<TARGET_FILE:perf_eval>")
# The op groups of `traced index` (op_perf) against the same reports row by
# row: work, rates and counts (with TRACELENS_DIR, TraceLens's live answers
# for the other shared traces taken with record_shapes too).
traced_py_test(test_perf_tracelens test_perf_tracelens.py)
# Memory over time (index/memory/): every shared trace with [memory]
# events against tests/ref_memory.py (peaks exact, the timeline's buckets,
# by op), and the memory routes over HTTP.
traced_py_test(test_memory test_memory.py)

# A rank being indexed stops when asked (docs/ARCHITECTURE.md): SIGTERM
# while it is read and while its records are walked, then indexed again to
# the same figures; a cancel frees its slot; rank_index_timeout_s fails it.
foreach(case sigterm cancel deadline)
  traced_py_test(index_stop_${case} test_index_stop.py ${case})
endforeach()

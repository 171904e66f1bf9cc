# The trace reader and byte source (index/reader*.c, index/read/source.c,
# index/inflate_*.c).
traced_c_test(test_reader traced_index test_reader.c test_reader_source.c
              test_reader_util.c test_reader_scan.c)

# libFuzzer target (scripts/fuzz.sh): clang only, with ASan and UBSan.
if(TRACED_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TRACED_FUZZ needs clang (CC=clang, fresh build dir)")
  endif()
  # Coverage feedback from the reader itself, not just the harness.
  target_compile_options(traced_index PRIVATE -fsanitize=fuzzer-no-link)
  # Small scan windows and source slots, so that events cross them
  # (index/read/reader.c, index/read/source.c).
  target_compile_definitions(traced_index PRIVATE IDX_SCAN_WINDOW=1024
                             IDX_SOURCE_SLOT_BYTES=4096)
  # fuzz_reader: the reader; fuzz_index: the indexer past it (aggregation,
  # decode, the critical path); fuzz_points: an access points file, its
  # slice figures, and a slice made from them.
  foreach(target fuzz_reader fuzz_index fuzz_points)
    add_executable(${target} ${target}.c)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${target} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${target} PRIVATE traced_index)
  endforeach()
endif()

# Access points (index/read/points.c, index/read/points_resume.c, their recording
# in index/read/source.c): resumed from every point of every real trace.
traced_c_test(test_points traced_index test_points.c test_reader_util.c)

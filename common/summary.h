/*
 * The rank summary's vocabulary, defined once (docs/API.md, "Rank
 * summary"): every member of the summary object and of each of its
 * tables' rows, with its type, its column in the store, how it sums over
 * the ranks of a capture and the schema version that added it. The
 * indexer expands these lists into the C structs it fills and the JSON it
 * writes (index/agg/agg.h), the store into its INSERTs, its new migration
 * steps and its SELECT lists (store/ranks.c, schema.c, queries.c), so a
 * figure has one name and one type on both sides of the "figure types
 * only" contract between index/ and store/, and the compiler finds a
 * member one side forgot. The tables themselves, what serves them and how,
 * are one map further down (TR_TABLE_MAP). Any thread.
 *
 * Rows: XX(key, column, TYPE, ALL, since).
 *   key     the JSON member
 *   column  the store column (ranks: also the SELECT name)
 *   TYPE    INT        integer, required
 *           INT_NULL   integer or null
 *           TEXT       string, required
 *           TEXT_NULL  string or null
 *           NAME       string interned into names: column is name_id
 *           JSON       any JSON value, stored as compact text
 *           JSON_NULL  JSON value or null
 *           REAL       a real number (a figure that is no count: FLOPs,
 *                      rates), required
 *           REAL_NULL  a real number or null
 *           AVG        derived, not stored: floor(total_ns / count)
 *           SHARE      derived, not stored: total_ns over the rank's ALL
 *                      column, rounded half up to 6 decimals
 *           RATIO      derived, not stored: the row's ALL column over its
 *                      count, rounded half up to 6 decimals
 *           PART       derived, not stored: total_ns over the row's ALL
 *                      column, rounded half up to 6 decimals
 *   ALL     how GET .../<table> without ?rank= sums the ranks' rows:
 *           KEY (grouped by), SUM, MIN, MAX, ANY (max(): one value per
 *           key), MIXED (the ranks' common text, else "mixed"), NONE (not
 *           in the all-ranks answer), EACH (the table is not summed: every
 *           rank's rows as they are, each with its rank); for SHARE rows,
 *           the rank column it is a share of (kernel_ns, device_ns), for
 *           RATIO rows the row's column over its count
 *   since   the schema version (store/schema.c) whose step created the
 *           column; a new figure is a new row with the next version, and
 *           a released row is never edited.
 */
#ifndef TR_SUMMARY_H
#define TR_SUMMARY_H

#include <stdbool.h>

/* The scalars of a rank summary, in the order the summary prints them. */
#define TR_SUM_RANK(XX)                                                        \
  XX(rank, trace_rank, INT_NULL, NONE, 1)                                      \
  XX(file, file, TEXT, NONE, 1)                                                \
  XX(format, format, TEXT, NONE, 1)                                            \
  XX(file_bytes, file_bytes, INT, NONE, 1)                                     \
  XX(json_bytes, json_bytes, INT, NONE, 1)                                     \
  XX(events, events, INT, NONE, 1)                                             \
  XX(skipped_events, skipped_events, INT, NONE, 1)                             \
  XX(t0_ns, t0_ns, INT, NONE, 1)                                               \
  XX(span_ns, span_ns, INT, NONE, 1)                                           \
  XX(device, device, TEXT_NULL, NONE, 1)                                       \
  XX(kernel_events, kernel_events, INT, NONE, 1)                               \
  XX(kernel_ns, kernel_ns, INT, NONE, 1)                                       \
  XX(distinct_kernels, distinct_kernels, INT, NONE, 1)                         \
  XX(memcpy_count, memcpy_count, INT, NONE, 1)                                 \
  XX(memcpy_bytes, memcpy_bytes, INT, NONE, 1)                                 \
  XX(memcpy_ns, memcpy_ns, INT, NONE, 1)                                       \
  XX(memset_count, memset_count, INT, NONE, 1)                                 \
  XX(memset_ns, memset_ns, INT, NONE, 1)                                       \
  XX(device_ns, device_ns, INT, NONE, 1)                                       \
  XX(gpu_busy_ns, gpu_busy_ns, INT, NONE, 1)                                   \
  XX(runtime_events, runtime_events, INT, NONE, 1)                             \
  XX(runtime_ns, runtime_ns, INT, NONE, 1)                                     \
  XX(idle_ns, idle_ns, INT, NONE, 3)                                           \
  XX(launch_delays, launch_delays, INT, NONE, 3)                               \
  XX(launch_delay_min_ns, launch_delay_min_ns, INT, NONE, 3)                   \
  XX(launch_delay_p50_ns, launch_delay_p50_ns, INT, NONE, 3)                   \
  XX(launch_delay_p99_ns, launch_delay_p99_ns, INT, NONE, 3)                   \
  XX(launch_delay_max_ns, launch_delay_max_ns, INT, NONE, 3)                   \
  XX(warmup_steps, warmup_steps, INT, NONE, 3)                                 \
  XX(timeline_bucket_ns, timeline_bucket_ns, INT, NONE, 3)                     \
  XX(kernel_names_folded, kernel_names_folded, INT, NONE, 4)                   \
  XX(runtime_names_folded, runtime_names_folded, INT, NONE, 4)                 \
  XX(warnings, warnings, JSON, NONE, 4)                                        \
  XX(collective_events, collective_events, INT, NONE, 5)                       \
  XX(collective_ns, collective_ns, INT, NONE, 5)                               \
  XX(exposed_comm_ns, exposed_comm_ns, INT, NONE, 5)                           \
  XX(host_events, host_events, INT, NONE, 9)                                   \
  XX(critical_path_steps, critical_path_steps, INT, NONE, 9)                   \
  TR_SUM_RANK_DECODE(XX)                                                       \
  TR_SUM_RANK_PERF(XX)                                                         \
  TR_SUM_RANK_MEMORY(XX)

/* Decode's completeness on a rank (index/decode/decode.h, docs/DECODE.md,
 * "Completeness"): the capture traces read and their graphs; graph
 * replays (graph launches), how many were matched to a captured graph
 * exactly, short (fewer kernels than the graph's launches, placed one way
 * only: missing_launches of the graphs' launches had no kernel), left
 * unmatched (by reason in unmatched_reasons: {reason: {replays, ns}}), or
 * had no device record at all; device records whose launch the trace
 * does not hold, and those whose launch has no op above it. Shares are of
 * device_ns. */
#define TR_SUM_RANK_DECODE(XX)                                                 \
  XX(capture_traces, capture_traces, INT, NONE, 8)                             \
  XX(capture_graphs, capture_graphs, INT, NONE, 8)                             \
  XX(capture_launches, capture_launches, INT, NONE, 8)                         \
  XX(replays, replays, INT, NONE, 8)                                           \
  XX(replay_kernels, replay_kernels, INT, NONE, 8)                             \
  XX(replay_ns, replay_ns, INT, NONE, 8)                                       \
  XX(replays_matched, replays_matched, INT, NONE, 8)                           \
  XX(replays_short, replays_short, INT, NONE, 8)                               \
  XX(replays_short_ns, replays_short_ns, INT, NONE, 8)                         \
  XX(missing_launches, missing_launches, INT, NONE, 8)                         \
  XX(replays_unmatched, replays_unmatched, INT, NONE, 8)                       \
  XX(replays_unmatched_ns, replays_unmatched_ns, INT, NONE, 8)                 \
  XX(unmatched_reasons, unmatched_reasons, JSON, NONE, 8)                      \
  XX(empty_graph_launches, empty_graph_launches, INT, NONE, 8)                 \
  XX(kernels_no_launch, kernels_no_launch, INT, NONE, 8)                       \
  XX(kernels_no_launch_ns, kernels_no_launch_ns, INT, NONE, 8)                 \
  XX(kernels_no_op, kernels_no_op, INT, NONE, 8)                               \
  XX(kernels_no_op_ns, kernels_no_op_ns, INT, NONE, 8)

/* The op groups' completeness (index/perf/perf.h, docs/PERF.md): the
 * roof the rank is put against ({name, source, matrix {precision:
 * TFLOPS}, vec_fp32, vec_fp64, tb_s}; null: its GPU is not in the table
 * and no gpu_roof is set), the op instances counted in groups, those whose
 * arguments fit no model, and those left out past a bound. */
#define TR_SUM_RANK_PERF(XX)                                                   \
  XX(gpu_roof, gpu_roof, JSON_NULL, NONE, 11)                                  \
  XX(op_instances, op_instances, INT, NONE, 11)                                \
  XX(op_unmodeled, op_unmodeled, INT, NONE, 11)                                \
  XX(op_instances_lost, op_instances_lost, INT, NONE, 11)

/* Memory over time (index/memory/, docs/ANALYSIS.md "Memory"): the rank's
 * [memory] events (profile_memory), and its allocations left out of the
 * attribution to ops past its bound (never_freed then counts without
 * them). */
#define TR_SUM_RANK_MEMORY(XX)                                                 \
  XX(memory_events, memory_events, INT, NONE, 11)                              \
  XX(memory_untracked, memory_untracked, INT, NONE, 11)

#define TR_SUM_KERNEL(XX)                                                      \
  XX(name, name_id, NAME, KEY, 1)                                              \
  XX(category, category, TEXT, ANY, 1)                                         \
  XX(count, count, INT, SUM, 1)                                                \
  XX(total_ns, total_ns, INT, SUM, 1)                                          \
  XX(avg_ns, avg_ns, AVG, AVG, 1)                                              \
  XX(min_ns, min_ns, INT, MIN, 1)                                              \
  XX(max_ns, max_ns, INT, MAX, 1)                                              \
  XX(median_ns, median_ns, INT, NONE, 1)                                       \
  XX(share, share, SHARE, kernel_ns, 1)                                        \
  XX(first_ns, first_ns, INT, NONE, 1)                                         \
  XX(last_ns, last_ns, INT, NONE, 1)                                           \
  XX(family, family, TEXT, ANY, 3)                                             \
  XX(demangled, demangled, TEXT_NULL, ANY, 3)                                  \
  TR_CPATH_COLS(XX)

/* What the critical path adds to a kernel's row and to a family's
 * (index/agg/agg.h's struct agg_cols, docs/CRITICAL_PATH.md): the time
 * on the path, and the launch calls' and queue waits' time. */
#define TR_CPATH_COLS(XX)                                                      \
  XX(critical_ns, critical_ns, INT, SUM, 9)                                    \
  XX(launch_calls, launch_calls, INT, SUM, 9)                                  \
  XX(launch_call_ns, launch_call_ns, INT, SUM, 9)                              \
  XX(launch_call_p50_ns, launch_call_p50_ns, INT, MAX, 9)                      \
  XX(launch_call_p99_ns, launch_call_p99_ns, INT, MAX, 9)                      \
  XX(launch_queue_ns, launch_queue_ns, INT, SUM, 9)                            \
  XX(launch_queue_p50_ns, launch_queue_p50_ns, INT, MAX, 9)                    \
  XX(launch_queue_p99_ns, launch_queue_p99_ns, INT, MAX, 9)

#define TR_SUM_LAUNCH(XX)                                                      \
  XX(name, name_id, NAME, KEY, 1)                                              \
  XX(grid, grid, JSON_NULL, KEY, 1)                                            \
  XX(block, block, JSON_NULL, KEY, 1)                                          \
  XX(registers_per_thread, registers_per_thread, INT_NULL, KEY, 1)             \
  XX(shared_bytes, shared_bytes, INT_NULL, KEY, 1)                             \
  XX(count, count, INT, SUM, 1)                                                \
  XX(total_ns, total_ns, INT, SUM, 1)                                          \
  XX(avg_ns, avg_ns, AVG, AVG, 1)                                              \
  XX(min_ns, min_ns, INT, MIN, 1)                                              \
  XX(max_ns, max_ns, INT, MAX, 1)

#define TR_SUM_CATEGORY(XX)                                                    \
  XX(category, category, TEXT, KEY, 1)                                         \
  XX(count, count, INT, SUM, 1)                                                \
  XX(total_ns, total_ns, INT, SUM, 1)                                          \
  XX(share, share, SHARE, device_ns, 1)

#define TR_SUM_MEMCPY(XX)                                                      \
  XX(kind, kind, TEXT, KEY, 1)                                                 \
  XX(count, count, INT, SUM, 1)                                                \
  XX(total_ns, total_ns, INT, SUM, 1)                                          \
  XX(bytes, bytes, INT, SUM, 1)                                                \
  XX(max_bytes, max_bytes, INT, MAX, 1)

#define TR_SUM_RUNTIME(XX)                                                     \
  XX(name, name_id, NAME, KEY, 1)                                              \
  XX(count, count, INT, SUM, 1)                                                \
  XX(total_ns, total_ns, INT, SUM, 1)                                          \
  XX(avg_ns, avg_ns, AVG, AVG, 1)                                              \
  XX(median_ns, median_ns, INT, MAX, 1)                                        \
  XX(max_ns, max_ns, INT, MAX, 1)

#define TR_SUM_STEP(XX)                                                        \
  XX(kind, kind, TEXT, KEY, 1)                                                 \
  XX(count, count, INT, SUM, 1)                                                \
  XX(total_ns, total_ns, INT, SUM, 1)                                          \
  XX(avg_ns, avg_ns, AVG, AVG, 1)                                              \
  XX(tokens, tokens, INT, SUM, 1)                                              \
  XX(padded, padded, INT, SUM, 1)                                              \
  XX(kernel_ns, kernel_ns, INT, SUM, 1)                                        \
  XX(source, source, TEXT, MIXED, 1)                                           \
  XX(min_ns, min_ns, INT, MIN, 3)                                              \
  XX(p50_ns, p50_ns, INT, MAX, 3)                                              \
  XX(p90_ns, p90_ns, INT, MAX, 3)                                              \
  XX(p99_ns, p99_ns, INT, MAX, 3)                                              \
  XX(max_ns, max_ns, INT, MAX, 3)                                              \
  XX(warmup_steps, warmup_steps, INT, SUM, 3)                                  \
  XX(steady_count, steady_count, INT, SUM, 3)                                  \
  XX(steady_total_ns, steady_total_ns, INT, SUM, 3)                            \
  XX(steady_min_ns, steady_min_ns, INT, MIN, 3)                                \
  XX(steady_p50_ns, steady_p50_ns, INT, MAX, 3)                                \
  XX(steady_p90_ns, steady_p90_ns, INT, MAX, 3)                                \
  XX(steady_p99_ns, steady_p99_ns, INT, MAX, 3)                                \
  XX(steady_max_ns, steady_max_ns, INT, MAX, 3)

#define TR_SUM_PHASE(XX)                                                       \
  XX(index, idx, INT, EACH, 1)                                                 \
  XX(start_ns, start_ns, INT, EACH, 1)                                         \
  XX(end_ns, end_ns, INT, EACH, 1)                                             \
  XX(busy_ns, busy_ns, INT, EACH, 1)                                           \
  XX(kernel_events, kernel_events, INT, EACH, 1)                               \
  XX(cause, cause, TEXT, EACH, 1)                                              \
  XX(top_kernels, top_kernels, JSON, EACH, 1)                                  \
  XX(top_launches, top_launches, JSON, EACH, 1)

/* The steps of a kind by real batch size (dim "bs") or tokens ("tok"):
 * buckets [lo, hi], hi null for the last, open one. */
#define TR_SUM_STEP_BUCKET(XX)                                                 \
  XX(kind, kind, TEXT, KEY, 3)                                                 \
  XX(dim, dim, TEXT, KEY, 3)                                                   \
  XX(lo, lo, INT, KEY, 3)                                                      \
  XX(hi, hi, INT_NULL, KEY, 3)                                                 \
  XX(count, count, INT, SUM, 3)                                                \
  XX(padded, padded, INT, SUM, 3)                                              \
  XX(padded_share, padded_share, RATIO, padded, 3)                             \
  XX(min_ns, min_ns, INT, MIN, 3)                                              \
  XX(p50_ns, p50_ns, INT, MAX, 3)                                              \
  XX(p99_ns, p99_ns, INT, MAX, 3)                                              \
  XX(max_ns, max_ns, INT, MAX, 3)

/* Each kind's step durations in bins made of whole histogram buckets
 * (agg_map.c): 64 ns wide below 1024 ns, 8 per power of two above, so
 * every count is exact; [lo_ns, hi_ns). */
#define TR_SUM_STEP_HIST(XX)                                                   \
  XX(kind, kind, TEXT, KEY, 3)                                                 \
  XX(lo_ns, lo_ns, INT, KEY, 3)                                                \
  XX(hi_ns, hi_ns, INT, KEY, 3)                                                \
  XX(count, count, INT, SUM, 3)

/* The slowest steps of each kind (role "slowest", index 0 the slowest) and
 * its median step (role "median"), each with its top kernels. */
#define TR_SUM_STEP_OUTLIER(XX)                                                \
  XX(kind, kind, TEXT, EACH, 3)                                                \
  XX(role, role, TEXT, EACH, 3)                                                \
  XX(index, idx, INT, EACH, 3)                                                 \
  XX(start_ns, start_ns, INT, EACH, 3)                                         \
  XX(dur_ns, dur_ns, INT, EACH, 3)                                             \
  XX(label, label, TEXT, EACH, 3)                                              \
  XX(top_kernels, top_kernels, JSON, EACH, 3)

/* Idle time (span minus busy) by step kind (null: outside any step, or a
 * trace without steps) and cause. */
#define TR_SUM_IDLE(XX)                                                        \
  XX(step, step, TEXT_NULL, KEY, 3)                                            \
  XX(cause, cause, TEXT, KEY, 3)                                               \
  XX(idle_ns, idle_ns, INT, SUM, 3)

/* The utilisation timeline: equal buckets over the span. by_category and
 * steps are objects {name: ns}; step is the kind covering most of it. */
#define TR_SUM_TIMELINE(XX)                                                    \
  XX(index, idx, INT, EACH, 3)                                                 \
  XX(start_ns, start_ns, INT, EACH, 3)                                         \
  XX(end_ns, end_ns, INT, EACH, 3)                                             \
  XX(busy_ns, busy_ns, INT, EACH, 3)                                           \
  XX(by_category, by_category, JSON, EACH, 3)                                  \
  XX(steps, steps, JSON, EACH, 3)                                              \
  XX(step, step, TEXT_NULL, EACH, 3)

/* The buckets a rank's timeline is cut into when indexed; a route
 * re-bins them into at most this many rows. */
#define TR_TIMELINE_BUCKETS 4096
/* The memory timeline's buckets (index/memory/): every fourth boundary of
 * the utilisation timeline's, so that the two align at a quarter of the
 * rows a device. */
#define TR_MEMORY_BUCKETS   (TR_TIMELINE_BUCKETS / 4)

/* Kernel families (index/agg/family.c): kernels names with the template and
 * parameter lists and the tile and ordinal suffixes dropped. */
#define TR_SUM_FAMILY(XX)                                                      \
  XX(family, family, TEXT, KEY, 3)                                             \
  XX(category, category, TEXT, ANY, 3)                                         \
  XX(kernels, kernels, INT, MAX, 3)                                            \
  XX(count, count, INT, SUM, 3)                                                \
  XX(total_ns, total_ns, INT, SUM, 3)                                          \
  XX(avg_ns, avg_ns, AVG, AVG, 3)                                              \
  XX(min_ns, min_ns, INT, MIN, 3)                                              \
  XX(max_ns, max_ns, INT, MAX, 3)                                              \
  XX(p50_ns, p50_ns, INT, MAX, 3)                                              \
  XX(p99_ns, p99_ns, INT, MAX, 3)                                              \
  XX(share, share, SHARE, kernel_ns, 3)                                        \
  TR_CPATH_COLS(XX)

/* A family's kernels that start inside the labels of a step kind, and per
 * step of that kind (per_step_ns: total_ns / steps, floored; all ranks:
 * the largest). */
#define TR_SUM_FAMILY_STEP(XX)                                                 \
  XX(family, family, TEXT, KEY, 3)                                             \
  XX(step, step, TEXT, KEY, 3)                                                 \
  XX(count, count, INT, SUM, 3)                                                \
  XX(total_ns, total_ns, INT, SUM, 3)                                          \
  XX(steps, steps, INT, SUM, 3)                                                \
  XX(per_step_ns, per_step_ns, INT, MAX, 3)

/* The critical path (index/cpath*.c, docs/CRITICAL_PATH.md): per step kind (the
 * run-label kind, "ProfilerStep", or "trace" for one path over the span),
 * the steps, those analysed, and the paths' length and breakdown summed:
 * the time bound by CPU ops, by kernels, copies and memsets, by
 * collectives, by launch delay, by kernel-to-kernel gaps (these five make
 * the length), and the wall time of its zero-weight sync and host-idle
 * edges; the launches waiting (max; ns x depth over extent_ns). */
#define TR_SUM_CRIT_KIND(XX)                                                   \
  XX(step, step, TEXT, KEY, 9)                                                 \
  XX(steps, steps, INT, SUM, 9)                                                \
  XX(analyzed, analyzed, INT, SUM, 9)                                          \
  XX(window_ns, window_ns, INT, SUM, 9)                                        \
  XX(length_ns, length_ns, INT, SUM, 9)                                        \
  XX(length_p50_ns, length_p50_ns, INT, MAX, 9)                                \
  XX(length_max_ns, length_max_ns, INT, MAX, 9)                                \
  TR_CRIT_BOUNDS(XX, SUM)                                                      \
  XX(kernels, kernels, INT, SUM, 9)                                            \
  XX(kernels_on_path, kernels_on_path, INT, SUM, 9)                            \
  XX(queue_max, queue_max, INT, MAX, 9)                                        \
  XX(queue_area_ns, queue_area_ns, INT, SUM, 9)                                \
  XX(extent_ns, extent_ns, INT, SUM, 9)

/* The breakdown's columns, in enum cp_bound's order; ALL: SUM for the
 * kinds' sums, EACH for a step's own (rows of every rank as they are). */
#define TR_CRIT_BOUNDS(XX, ALL)                                                \
  XX(cpu_ns, cpu_ns, INT, ALL, 9)                                              \
  XX(gpu_ns, gpu_ns, INT, ALL, 9)                                              \
  XX(comm_ns, comm_ns, INT, ALL, 9)                                            \
  XX(launch_ns, launch_ns, INT, ALL, 9)                                        \
  XX(gap_ns, gap_ns, INT, ALL, 9)                                              \
  XX(sync_ns, sync_ns, INT, ALL, 9)                                            \
  XX(idle_ns, idle_ns, INT, ALL, 9)

/* Each step (the first 65536 of a rank, and the picked ones): its window
 * from t0, status (ok, too_big, cycle), path, breakdown; role median /
 * slowest (of its kind) with the launches waiting over it (queue:
 * [[t_ns, depth], ...] from t0). */
#define TR_SUM_CRIT_STEP(XX)                                                   \
  XX(index, idx, INT, EACH, 9)                                                 \
  XX(step, step, TEXT, EACH, 9)                                                \
  XX(label, label, TEXT_NULL, EACH, 9)                                         \
  XX(start_ns, start_ns, INT, EACH, 9)                                         \
  XX(dur_ns, dur_ns, INT, EACH, 9)                                             \
  XX(status, status, TEXT, EACH, 9)                                            \
  XX(length_ns, length_ns, INT, EACH, 9)                                       \
  XX(path_from_ns, path_from_ns, INT, EACH, 9)                                 \
  XX(path_to_ns, path_to_ns, INT, EACH, 9)                                     \
  TR_CRIT_BOUNDS(XX, EACH)                                                     \
  XX(events, events, INT, EACH, 9)                                             \
  XX(kernels, kernels, INT, EACH, 9)                                           \
  XX(kernels_on_path, kernels_on_path, INT, EACH, 9)                           \
  XX(queue_max, queue_max, INT, EACH, 9)                                       \
  XX(queue_area_ns, queue_area_ns, INT, EACH, 9)                               \
  XX(extent_ns, extent_ns, INT, EACH, 9)                                       \
  XX(role, role, TEXT_NULL, EACH, 9)                                           \
  XX(queue, queue, JSON_NULL, EACH, 9)

/* The paths of the picked steps (step: its kind) as stretches: what (a
 * name), where ("thread pid/tid" or "stream device/stream"), bound, from
 * and to (from t0), their weight in the length, and how many events
 * merged into it. */
#define TR_SUM_CRIT_SEGMENT(XX)                                                \
  XX(index, idx, INT, EACH, 9)                                                 \
  XX(step, step, TEXT, EACH, 9)                                                \
  XX(seq, seq, INT, EACH, 9)                                                   \
  XX(what, what, TEXT, EACH, 9)                                                \
  XX(kind, what_kind, TEXT, EACH, 9)                                           \
  XX(where, lane, TEXT, EACH, 9)                                               \
  XX(bound, bound, TEXT, EACH, 9)                                              \
  XX(from_ns, from_ns, INT, EACH, 9)                                           \
  XX(to_ns, to_ns, INT, EACH, 9)                                               \
  XX(weight_ns, weight_ns, INT, EACH, 9)                                       \
  XX(count, count, INT, EACH, 9)

/* Per kernel name (or family) and step kind: the steps it ran in and
 * those it was on the path in, its instances and those on the path,
 * their time there, and the slack of its instances (0 on the path). */
#define TR_CRIT_PATH_FIGURES(XX)                                               \
  XX(step, step, TEXT, KEY, 9)                                                 \
  XX(steps, steps, INT, SUM, 9)                                                \
  XX(steps_on, steps_on, INT, SUM, 9)                                          \
  XX(instances, instances, INT, SUM, 9)                                        \
  XX(on_path, on_path, INT, SUM, 9)                                            \
  XX(critical_ns, critical_ns, INT, SUM, 9)                                    \
  XX(slack_p50_ns, slack_p50_ns, INT, MAX, 9)                                  \
  XX(slack_p99_ns, slack_p99_ns, INT, MAX, 9)                                  \
  XX(slack_max_ns, slack_max_ns, INT, MAX, 9)

#define TR_SUM_KERNEL_PATH(XX)                                                 \
  XX(name, name_id, NAME, KEY, 9)                                              \
  XX(family, family, TEXT, ANY, 9)                                             \
  TR_CRIT_PATH_FIGURES(XX)

#define TR_SUM_FAMILY_PATH(XX)                                                 \
  XX(family, family, TEXT, KEY, 9)                                             \
  TR_CRIT_PATH_FIGURES(XX)

/* Who kept the device waiting: each host_late and sync idle stretch's part
 * in a step kind (null: outside steps, a trace without) by the innermost
 * host event running on the launching thread when the device went idle:
 * culprit its name (null: none ran, or the thread is unknown), culprit_kind
 * cpu_op, annotation, python, runtime, none or unknown. */
#define TR_SUM_CULPRIT(XX)                                                     \
  XX(step, step, TEXT_NULL, KEY, 9)                                            \
  XX(cause, cause, TEXT, KEY, 9)                                               \
  XX(culprit, culprit, TEXT_NULL, KEY, 9)                                      \
  XX(culprit_kind, culprit_kind, TEXT, KEY, 9)                                 \
  XX(count, count, INT, SUM, 9)                                                \
  XX(idle_ns, idle_ns, INT, SUM, 9)                                            \
  XX(p50_ns, p50_ns, INT, MAX, 9)                                              \
  XX(p99_ns, p99_ns, INT, MAX, 9)

/* Kernel sequences: runs of n (2-8) consecutive kernels of a step (by
 * start), as families joined by " > ", counted over the steps of a kind
 * (overlapping runs each count) with their kernels' time; steps: that
 * kind's analysed steps. The most frequent per kind and length. */
#define TR_SUM_SEQUENCE(XX)                                                    \
  XX(step, step, TEXT, KEY, 9)                                                 \
  XX(n, n, INT, KEY, 9)                                                        \
  XX(sequence, sequence, TEXT, KEY, 9)                                         \
  XX(count, count, INT, SUM, 9)                                                \
  XX(total_ns, total_ns, INT, SUM, 9)                                          \
  XX(steps, steps, INT, SUM, 9)

/* The kernels of each kind's median step, in start order, a run of one
 * name as one row (count kernels): family, name, their time and its share
 * of the step's kernel time. */
#define TR_SUM_MEDIAN_SEQ(XX)                                                  \
  XX(step, step, TEXT, EACH, 9)                                                \
  XX(position, position, INT, EACH, 9)                                         \
  XX(family, family, TEXT, EACH, 9)                                            \
  XX(name, name, TEXT, EACH, 9)                                                \
  XX(count, count, INT, EACH, 9)                                               \
  XX(dur_ns, dur_ns, INT, EACH, 9)                                             \
  XX(share, share, JSON, EACH, 9)

/* The figures tracked in single steps (index/agg/agg_samples.c): each
 * category with device time, the largest families (at least 0.5% of the
 * kernel time, at most 24) and kernels (at least 1%, at most 12); index is
 * the place of its value in each step sample's values. */
#define TR_SUM_SAMPLE_FIGURE(XX)                                               \
  XX(index, idx, INT, EACH, 6)                                                 \
  XX(figure, figure, TEXT, EACH, 6)                                            \
  XX(name, name, TEXT, EACH, 6)

/* Single real steps of the step side (at most 2048 a rank: every stride-th
 * of a kind, in start order): ordinal its place among its kind's steps,
 * step the N of ProfilerStep#N, bs and tok its label's (null: none),
 * start_ns from the rank's t0_ns, warmup 1 when the steady state leaves it
 * out, values each tracked figure's device time in it (ns, by index). */
#define TR_SUM_STEP_SAMPLE(XX)                                                 \
  XX(kind, kind, TEXT, EACH, 6)                                                \
  XX(ordinal, ordinal, INT, EACH, 6)                                           \
  XX(step, step, INT_NULL, EACH, 6)                                            \
  XX(bs, bs, INT_NULL, EACH, 6)                                                \
  XX(tok, tok, INT_NULL, EACH, 6)                                              \
  XX(start_ns, start_ns, INT, EACH, 6)                                         \
  XX(dur_ns, dur_ns, INT, EACH, 6)                                             \
  XX(warmup, warmup, INT, EACH, 6)                                             \
  XX(values, vals, JSON, EACH, 6)

/* Decode (index/decode/decode.h, docs/DECODE.md): device time by what launched
 * it, per step kind (step null: outside every step), from the op, module
 * and layer above each kernel's launch (a replayed kernel's: above the
 * launch that recorded it into its graph). The figures the tables share:
 *   kernels      device records (kernels, copies, memsets)
 *   total_ns     their durations
 *   steps        the kind's steps on the rank (0 outside steps)
 *   per_step_ns  total_ns / steps, floored (all ranks: the largest)
 *   p50_ns       its time per step across the kind's steps, a step where
 *   p99_ns       it took none counting 0 (all ranks: the largest)
 *   step_ns      the kind's device time on the rank
 *   share        total_ns / step_ns
 * since: the version of the table they are columns of. */
#define TR_DEC_FIGURES(XX, since)                                              \
  XX(kernels, kernels, INT, SUM, since)                                        \
  XX(total_ns, total_ns, INT, SUM, since)                                      \
  XX(steps, steps, INT, SUM, since)                                            \
  XX(per_step_ns, per_step_ns, INT, MAX, since)                                \
  XX(p50_ns, p50_ns, INT, MAX, since)                                          \
  XX(p99_ns, p99_ns, INT, MAX, since)                                          \
  XX(step_ns, step_ns, INT, SUM, since)                                        \
  XX(share, share, PART, step_ns, since)

/* By module path (layers collapsed: layers.*); layers: how many layers
 * it ran in. */
#define TR_SUM_DEC_MODULE(XX)                                                  \
  XX(step, step, TEXT_NULL, KEY, 8)                                            \
  XX(module, module, TEXT_NULL, KEY, 8)                                        \
  XX(layers, layers, INT, MAX, 8)                                              \
  TR_DEC_FIGURES(XX, 8)

#define TR_SUM_DEC_LAYER(XX)                                                   \
  XX(step, step, TEXT_NULL, KEY, 8)                                            \
  XX(layer, layer, INT_NULL, KEY, 8)                                           \
  TR_DEC_FIGURES(XX, 8)

/* By op, the innermost one above the launch (its direct time: total_ns);
 * count: its instances that launched; subtree_ns: every kernel with the
 * op anywhere above its launch. */
#define TR_SUM_DEC_OP(XX)                                                      \
  XX(step, step, TEXT_NULL, KEY, 8)                                            \
  XX(op, op, TEXT_NULL, KEY, 8)                                                \
  XX(count, count, INT, SUM, 8)                                                \
  TR_DEC_FIGURES(XX, 8)                                                        \
  XX(subtree_ns, subtree_ns, INT, SUM, 8)

#define TR_SUM_DEC_LAYER_MODULE(XX)                                            \
  XX(step, step, TEXT_NULL, KEY, 8)                                            \
  XX(layer, layer, INT_NULL, KEY, 8)                                           \
  XX(module, module, TEXT_NULL, KEY, 8)                                        \
  TR_DEC_FIGURES(XX, 8)

/* By (op, module): TraceLens's ops summary by parent module. */
#define TR_SUM_DEC_OP_MODULE(XX)                                               \
  XX(step, step, TEXT_NULL, KEY, 8)                                            \
  XX(op, op, TEXT_NULL, KEY, 8)                                                \
  XX(module, module, TEXT_NULL, KEY, 8)                                        \
  XX(count, count, INT, SUM, 8)                                                \
  XX(kernels, kernels, INT, SUM, 8)                                            \
  XX(total_ns, total_ns, INT, SUM, 8)

/* The kernels of each module. */
#define TR_SUM_DEC_KERNEL(XX)                                                  \
  XX(step, step, TEXT_NULL, KEY, 8)                                            \
  XX(module, module, TEXT_NULL, KEY, 8)                                        \
  XX(name, name_id, NAME, KEY, 8)                                              \
  XX(kernels, kernels, INT, SUM, 8)                                            \
  XX(total_ns, total_ns, INT, SUM, 8)

/* Each step kind: its steps, their device time (step_ns) and what of it
 * has an op (attributed_ns); the median step (the earliest of the steps
 * whose label lasted nearest the kind's p50): its label, start (from
 * t0_ns) and label duration, its device time. */
#define TR_SUM_DEC_STEP(XX)                                                    \
  XX(step, step, TEXT, KEY, 8)                                                 \
  XX(steps, steps, INT, SUM, 8)                                                \
  XX(kernels, kernels, INT, SUM, 8)                                            \
  XX(step_ns, step_ns, INT, SUM, 8)                                            \
  XX(attributed_ns, attributed_ns, INT, SUM, 8)                                \
  XX(median_label, median_label, TEXT_NULL, ANY, 8)                            \
  XX(median_start_ns, median_start_ns, INT_NULL, ANY, 8)                       \
  XX(median_dur_ns, median_dur_ns, INT_NULL, ANY, 8)                           \
  XX(median_ns, median_ns, INT, MAX, 8)

/* The repeated block: each module that ran in layers (layers collapsed
 * in its path), over those layers: their number, total_ns, the kind's
 * steps, a layer's time per step on average (total_ns / layers / steps,
 * floored), the fastest and slowest layer's (a layer's total / steps,
 * floored) and which layers they are (ties: the lower). All ranks: each
 * layer's time summed over the ranks, steps summed, then the same. */
#define TR_SUM_DEC_BLOCK(XX)                                                   \
  XX(step, step, TEXT_NULL, KEY, 8)                                            \
  XX(module, module, TEXT, KEY, 8)                                             \
  XX(layers, layers, INT, MAX, 8)                                              \
  XX(total_ns, total_ns, INT, SUM, 8)                                          \
  XX(steps, steps, INT, SUM, 8)                                                \
  XX(layer_ns, layer_ns, INT, MAX, 8)                                          \
  XX(fastest_layer, fastest_layer, INT, ANY, 8)                                \
  XX(fastest_ns, fastest_ns, INT, MIN, 8)                                      \
  XX(slowest_layer, slowest_layer, INT, ANY, 8)                                \
  XX(slowest_ns, slowest_ns, INT, MAX, 8)

/* Kernel time by source line (docs/DECODE.md, "Sources"): per step kind
 * and the innermost Python frame of the model's code above the launch
 * (with_stack: "<file>(<line>): <function>" outside torch, the standard
 * library and the kernel libraries; null: none), with its module path;
 * the frame's file, line and function; the figures of decode_modules. */
#define TR_SUM_DEC_SOURCE(XX)                                                  \
  XX(step, step, TEXT_NULL, KEY, 11)                                           \
  XX(source, source, TEXT_NULL, KEY, 11)                                       \
  XX(module, module, TEXT_NULL, KEY, 11)                                       \
  XX(file, file, TEXT_NULL, ANY, 11)                                           \
  XX(line, line, INT_NULL, ANY, 11)                                            \
  XX(function, function, TEXT_NULL, ANY, 11)                                   \
  TR_DEC_FIGURES(XX, 11)

/* The median step of each kind (decode_steps) by layer and module: the
 * stacked bar of one step; top_kernels its kernels, largest first (at
 * most 5: [{name, kernels, total_ns}]). */
#define TR_SUM_DEC_MEDIAN(XX)                                                  \
  XX(step, step, TEXT, EACH, 8)                                                \
  XX(layer, layer, INT_NULL, EACH, 8)                                          \
  XX(module, module, TEXT_NULL, EACH, 8)                                       \
  XX(kernels, kernels, INT, EACH, 8)                                           \
  XX(total_ns, total_ns, INT, EACH, 8)                                         \
  XX(top_kernels, top_kernels, JSON, EACH, 8)

/* Each op group (index/perf/, docs/PERF.md): TraceLens's (op,
 * parameters) row of its per-op report, the instances under a
 * checkpoint's recompute apart. params: the model's parameters (JSON
 * text: the key); the first instance's arguments as the trace gives them;
 * compute_spec ("matrix_bf16"), null without a precision; per instance
 * flops and bytes (null: a dtype of unknown size); over the instances:
 * count, those with device time (timed), their device records, those
 * inside another modeled op (nested), the union of each one's records'
 * intervals (kernel_*_ns: sum, least, largest, median), inv_s the sum of
 * 1 / that time in seconds over the timed ones (the rates' means:
 * docs/PERF.md); the roof of its compute spec and the bandwidth. */
#define TR_SUM_OP_PERF(XX)                                                     \
  XX(op, op, TEXT, KEY, 11)                                                    \
  XX(category, category, TEXT, ANY, 11)                                        \
  XX(params, params, TEXT, KEY, 11)                                            \
  XX(recompute, recompute, INT, KEY, 11)                                       \
  XX(input_dims, input_dims, JSON, ANY, 11)                                    \
  XX(input_types, input_types, JSON, ANY, 11)                                  \
  XX(input_strides, input_strides, JSON, ANY, 11)                              \
  XX(concrete_inputs, concrete_inputs, JSON, ANY, 11)                          \
  XX(compute_spec, compute_spec, TEXT_NULL, ANY, 11)                           \
  XX(count, count, INT, SUM, 11)                                               \
  XX(timed, timed, INT, SUM, 11)                                               \
  XX(kernels, kernels, INT, SUM, 11)                                           \
  XX(nested, nested, INT, SUM, 11)                                             \
  XX(flops, flops, REAL, ANY, 11)                                              \
  XX(bytes, bytes, REAL_NULL, ANY, 11)                                         \
  XX(kernel_ns, kernel_ns, INT, SUM, 11)                                       \
  XX(kernel_min_ns, kernel_min_ns, INT, MIN, 11)                               \
  XX(kernel_max_ns, kernel_max_ns, INT, MAX, 11)                               \
  XX(kernel_p50_ns, kernel_p50_ns, INT, MAX, 11)                               \
  XX(inv_s, inv_s, REAL, SUM, 11)                                              \
  XX(peak_tflops, peak_tflops, REAL_NULL, ANY, 11)                             \
  XX(peak_tb_s, peak_tb_s, REAL_NULL, ANY, 11)

/* Per device of a rank's [memory] events (index/memory/): its name as
 * PyTorch writes a device ("cuda:0", "cpu"), kineto's Device Type and
 * Device Id; the events, allocations and frees with their bytes; the
 * largest Total Allocated of its events (peak_allocated_bytes, exact), the
 * time from t0 of the first event reaching it and the step kind open on
 * that event's thread then; the largest Total Reserved; Total Allocated of
 * its first and last events; the allocations made inside the trace and
 * not freed by its end; the bytes freed that were allocated before it. */
#define TR_SUM_MEMORY(XX)                                                      \
  XX(device, device, TEXT, EACH, 11)                                           \
  XX(device_type, device_type, INT, EACH, 11)                                  \
  XX(device_id, device_id, INT, EACH, 11)                                      \
  XX(events, events, INT, EACH, 11)                                            \
  XX(allocs, allocs, INT, EACH, 11)                                            \
  XX(frees, frees, INT, EACH, 11)                                              \
  XX(alloc_bytes, alloc_bytes, INT, EACH, 11)                                  \
  XX(freed_bytes, freed_bytes, INT, EACH, 11)                                  \
  XX(peak_allocated_bytes, peak_allocated_bytes, INT, EACH, 11)                \
  XX(peak_ns, peak_ns, INT, EACH, 11)                                          \
  XX(peak_step, peak_step, TEXT_NULL, EACH, 11)                                \
  XX(peak_reserved_bytes, peak_reserved_bytes, INT, EACH, 11)                  \
  XX(first_allocated_bytes, first_allocated_bytes, INT, EACH, 11)              \
  XX(last_allocated_bytes, last_allocated_bytes, INT, EACH, 11)                \
  XX(never_freed_bytes, never_freed_bytes, INT, EACH, 11)                      \
  XX(never_freed_count, never_freed_count, INT, EACH, 11)                      \
  XX(freed_before_bytes, freed_before_bytes, INT, EACH, 11)

/* A device's memory over TR_MEMORY_BUCKETS buckets of the span (only
 * those with events; times from t0): its events there, the least and largest
 * Total Allocated and the largest Total Reserved they give. */
#define TR_SUM_MEMORY_TIMELINE(XX)                                             \
  XX(device, device, TEXT, EACH, 11)                                           \
  XX(index, idx, INT, EACH, 11)                                                \
  XX(start_ns, start_ns, INT, EACH, 11)                                        \
  XX(end_ns, end_ns, INT, EACH, 11)                                            \
  XX(events, events, INT, EACH, 11)                                            \
  XX(allocated_min_bytes, allocated_min_bytes, INT, EACH, 11)                  \
  XX(allocated_max_bytes, allocated_max_bytes, INT, EACH, 11)                  \
  XX(reserved_max_bytes, reserved_max_bytes, INT, EACH, 11)

/* A device's allocations by what made them: the innermost CPU op and the
 * module path above the [memory] event on its thread (null: none); the
 * allocations and their bytes, those live at the device's peak (the
 * first event reaching peak_allocated_bytes), those never freed. */
#define TR_SUM_MEMORY_OP(XX)                                                   \
  XX(device, device, TEXT, EACH, 11)                                           \
  XX(op, op, TEXT_NULL, EACH, 11)                                              \
  XX(module, module, TEXT_NULL, EACH, 11)                                      \
  XX(allocs, allocs, INT, EACH, 11)                                            \
  XX(alloc_bytes, alloc_bytes, INT, EACH, 11)                                  \
  XX(peak_live_bytes, peak_live_bytes, INT, EACH, 11)                          \
  XX(peak_live_count, peak_live_count, INT, EACH, 11)                          \
  XX(never_freed_bytes, never_freed_bytes, INT, EACH, 11)                      \
  XX(never_freed_count, never_freed_count, INT, EACH, 11)

/*
 * The capture's own tables: computed across ranks once every rank is
 * indexed (index/agg/coll_match.c), stored per capture (capture_id first,
 * store/schema.c), served as they are (ALL is EACH).
 *
 * The collective figures of a rank, for a family or a step kind:
 *   count, total_ns  its collectives (all of them, matched or not)
 *   exposed_ns       of total_ns, the time no compute kernel ran on the
 *                    rank (index/agg/agg_coll.c)
 *   matched          of count, those matched with the other ranks' k-th
 *   wait_ns          over the matched: the last arrival minus its own
 *                    start (within its duration)
 *   transfer_ns      its duration minus its wait
 *   late_ns          its own start minus the first arrival
 *   last             how often it arrived last (ties: the lower rank)
 *   held_ns          when last, the others' waits summed: how long it held
 *                    them back
 */
#define TR_COLL_FIGURES(XX)                                                    \
  XX(count, count, INT, EACH, 5)                                               \
  XX(total_ns, total_ns, INT, EACH, 5)                                         \
  XX(exposed_ns, exposed_ns, INT, EACH, 5)                                     \
  XX(matched, matched, INT, EACH, 5)                                           \
  XX(wait_ns, wait_ns, INT, EACH, 5)                                           \
  XX(transfer_ns, transfer_ns, INT, EACH, 5)                                   \
  XX(late_ns, late_ns, INT, EACH, 5)                                           \
  XX(last, last, INT, EACH, 5)                                                 \
  XX(held_ns, held_ns, INT, EACH, 5)

/* Per kernel family (index/agg/family.c) and rank. */
#define TR_COLL_FAMILY(XX)                                                     \
  XX(family, family, TEXT, EACH, 5)                                            \
  XX(rank, rank, INT, EACH, 5)                                                 \
  TR_COLL_FIGURES(XX)

/* Per step kind (null: outside every label) and rank: each rank's
 * collectives by the kind whose label covers their start on that rank. */
#define TR_COLL_STEP(XX)                                                       \
  XX(step, step, TEXT_NULL, EACH, 5)                                           \
  XX(rank, rank, INT, EACH, 5)                                                 \
  TR_COLL_FIGURES(XX)

/* The matched collectives of the largest start skew: the index-th of its
 * family on its lane (the stream's ordinal among the rank's streams of
 * that family); start_ns the first arrival from the capture's t0 (its
 * earliest rank's t0_ns); per_rank [{rank, start_ns (from that rank's
 * t0_ns, as its phases), dur_ns, wait_ns, transfer_ns}]. */
#define TR_COLL_INSTANCE(XX)                                                   \
  XX(family, family, TEXT, EACH, 5)                                            \
  XX(index, idx, INT, EACH, 5)                                                 \
  XX(lane, lane, INT, EACH, 5)                                                 \
  XX(start_ns, start_ns, INT, EACH, 5)                                         \
  XX(skew_ns, skew_ns, INT, EACH, 5)                                           \
  XX(last_rank, last_rank, INT, EACH, 5)                                       \
  XX(per_rank, per_rank, JSON, EACH, 5)

/* The rank x time picture: equal bins over the capture's span (from its
 * t0), matched collectives binned by their first arrival; per rank that
 * took part: how many, its lateness, wait and last arrivals summed; the
 * bin's largest skew. */
#define TR_COLL_TIMELINE(XX)                                                   \
  XX(bin, bin, INT, EACH, 5)                                                   \
  XX(start_ns, start_ns, INT, EACH, 5)                                         \
  XX(end_ns, end_ns, INT, EACH, 5)                                             \
  XX(rank, rank, INT, EACH, 5)                                                 \
  XX(instances, instances, INT, EACH, 5)                                       \
  XX(late_ns, late_ns, INT, EACH, 5)                                           \
  XX(wait_ns, wait_ns, INT, EACH, 5)                                           \
  XX(last, last, INT, EACH, 5)                                                 \
  XX(skew_max_ns, skew_max_ns, INT, EACH, 5)

/*
 * The table of tables (libuv's UV_HANDLE_TYPE_MAP, Redis's command table):
 * every table traced stores and serves, one row each. Its stored rows are
 * the field list above it names; everything else about it is here:
 *
 *   R(XX, name, ROWS, row, rows, route, params, by, flags, key, kind)
 *   C(XX, name, ROWS, row, route, ...)   the same for a table of the
 *                whole capture, which the indexer does not write
 *
 *   name    the summary's member (R: in the order the summary prints
 *           them) and the SQL table: one row per rank row (rank_id
 *           first), or per capture (C: capture_id first), made across
 *           the ranks at the capture's finish (index/agg/coll_match.c)
 *   ROWS    its field list; row names the indexer's struct
 *           (struct agg_sum_<row>)
 *   rows    the indexer's function that hands the table's rows to the
 *           summary, void rows(struct idx_agg *, struct agg_out *):
 *           declared from this column (index/agg/agg.h), defined by the
 *           pass that makes the table, called in the map's order
 *   route   GET /captures/<id>/<route> serves it (api/routes.c)
 *   params  the query parameters it takes, TR_P() of TR_PARAM_MAP;
 *           format (json or csv) comes with TR_T_CSV
 *   by      the values ?by= takes (TR_BY(...), the first the default),
 *           or TR_NO_BY
 *   flags   TR_T_GROWS: one row per name, so ?limit defaults to
 *           table_limit (else table_limit_max: the rows are bounded by
 *           the taxonomy); TR_T_OPCAT: its ?category= is an op category
 *           (tr_op_categories); TR_T_SUMMED: a done capture keeps its all-ranks
 *           answer (store/sums.c: per value of by, the first stored as
 *           name, the others as name_<by>); TR_T_CSV: ?format=csv
 *   key     in the summed rows, the member ?q= and ?sort=name read
 *           (NULL: none)
 *   kind    in the summed rows, the member ?kind= matches (NULL: none)
 *
 * Only each table's SQL is written by hand (store/queries.c, analysis.c,
 * results.c: struct store__sql store__sql_<name>); its rows are the
 * indexer's (the rows column). docs/ARCHITECTURE.md lists what adding a
 * table touches.
 */
#define TR_TABLE_ROWS_(R, C, XX)                                               \
  R(XX, kernels, TR_SUM_KERNEL, kernel, agg_kernel_rows, "kernels",            \
    TR_P(RANK) | TR_P(Q) | TR_P(CATEGORY) | TR_P(SORT) | TR_P(LIMIT) |         \
        TR_P(FAMILY) | TR_P(ON_PATH),                                          \
    TR_NO_BY, TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "name", NULL)               \
  R(XX, launches, TR_SUM_LAUNCH, launch, agg_launch_rows, "launches",          \
    TR_P(RANK) | TR_P(Q) | TR_P(SORT) | TR_P(LIMIT), TR_NO_BY,                 \
    TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "name", NULL)                         \
  R(XX, categories, TR_SUM_CATEGORY, category, agg_category_rows,              \
    "categories", TR_P(RANK) | TR_P(LIMIT), TR_NO_BY, TR_T_SUMMED | TR_T_CSV,  \
    NULL, NULL)                                                                \
  R(XX, memcpy, TR_SUM_MEMCPY, memcpy, agg_memcpy_rows, "memcpy",              \
    TR_P(RANK) | TR_P(LIMIT), TR_NO_BY, TR_T_SUMMED | TR_T_CSV, NULL, NULL)    \
  R(XX, runtime, TR_SUM_RUNTIME, runtime, agg_runtime_rows, "runtime",         \
    TR_P(RANK) | TR_P(Q) | TR_P(SORT) | TR_P(LIMIT), TR_NO_BY,                 \
    TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "name", NULL)                         \
  R(XX, steps, TR_SUM_STEP, step, agg_step_rows, "steps",                      \
    TR_P(RANK) | TR_P(LIMIT), TR_NO_BY, TR_T_SUMMED | TR_T_CSV, NULL, NULL)    \
  R(XX, phases, TR_SUM_PHASE, phase, agg_phase_rows, "phases",                 \
    TR_P(RANK) | TR_P(LIMIT), TR_NO_BY, TR_T_CSV, NULL, NULL)                  \
  R(XX, step_buckets, TR_SUM_STEP_BUCKET, step_bucket, agg_step_bucket_rows,   \
    "steps/buckets", TR_P(RANK) | TR_P(KIND) | TR_P(LIMIT), TR_NO_BY,          \
    TR_T_SUMMED | TR_T_CSV, NULL, "kind")                                      \
  R(XX, step_histogram, TR_SUM_STEP_HIST, step_hist, agg_step_hist_rows,       \
    "steps/histogram", TR_P(RANK) | TR_P(KIND) | TR_P(LIMIT), TR_NO_BY,        \
    TR_T_SUMMED | TR_T_CSV, NULL, "kind")                                      \
  R(XX, step_outliers, TR_SUM_STEP_OUTLIER, step_outlier,                      \
    agg_step_outlier_rows, "steps/outliers",                                   \
    TR_P(RANK) | TR_P(KIND) | TR_P(LIMIT), TR_NO_BY, TR_T_CSV, NULL, NULL)     \
  R(XX, idle, TR_SUM_IDLE, idle, agg_idle_rows, "idle", TR_P(RANK) | TR_P(BY), \
    TR_BY("cause", "step"), TR_T_SUMMED | TR_T_CSV, NULL, NULL)                \
  R(XX, timeline, TR_SUM_TIMELINE, timeline, agg_timeline_rows, "timeline",    \
    TR_P(RANK) | TR_P(BUCKETS), TR_NO_BY, TR_T_CSV, NULL, NULL)                \
  R(XX, families, TR_SUM_FAMILY, family, agg_family_rows, "families",          \
    TR_P(RANK) | TR_P(Q) | TR_P(CATEGORY) | TR_P(SORT) | TR_P(LIMIT) |         \
        TR_P(ON_PATH),                                                         \
    TR_NO_BY, TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "family", NULL)             \
  R(XX, family_steps, TR_SUM_FAMILY_STEP, family_step, agg_family_step_rows,   \
    "families/steps", TR_P(RANK) | TR_P(Q) | TR_P(KIND) | TR_P(LIMIT),         \
    TR_NO_BY, TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "family", "step")           \
  R(XX, sample_figures, TR_SUM_SAMPLE_FIGURE, sample_figure,                   \
    agg_sample_figure_rows, "steps/samples/figures", TR_P(RANK) | TR_P(LIMIT), \
    TR_NO_BY, TR_T_CSV, NULL, NULL)                                            \
  R(XX, step_samples, TR_SUM_STEP_SAMPLE, step_sample, agg_step_sample_rows,   \
    "steps/samples", TR_P(RANK) | TR_P(KIND) | TR_P(LIMIT), TR_NO_BY,          \
    TR_T_CSV, NULL, NULL)                                                      \
  R(XX, decode_modules, TR_SUM_DEC_MODULE, dec_module, dec_module_rows,        \
    "decode/modules", TR_P(RANK) | TR_P(KIND) | TR_P(Q) | TR_P(LIMIT),         \
    TR_NO_BY, TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "module", "step")           \
  R(XX, decode_layers, TR_SUM_DEC_LAYER, dec_layer, dec_layer_rows,            \
    "decode/layers", TR_P(RANK) | TR_P(KIND) | TR_P(LIMIT), TR_NO_BY,          \
    TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, NULL, "step")                         \
  R(XX, decode_ops, TR_SUM_DEC_OP, dec_op, dec_op_rows, "decode/ops",          \
    TR_P(RANK) | TR_P(KIND) | TR_P(Q) | TR_P(LIMIT), TR_NO_BY,                 \
    TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "op", "step")                         \
  R(XX, decode_layer_modules, TR_SUM_DEC_LAYER_MODULE, dec_layer_module,       \
    dec_layer_module_rows, "decode/layer_modules",                             \
    TR_P(RANK) | TR_P(KIND) | TR_P(Q) | TR_P(MODULE) | TR_P(LIMIT), TR_NO_BY,  \
    TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "module", "step")                     \
  R(XX, decode_op_modules, TR_SUM_DEC_OP_MODULE, dec_op_module,                \
    dec_op_module_rows, "decode/op_modules",                                   \
    TR_P(RANK) | TR_P(KIND) | TR_P(Q) | TR_P(MODULE) | TR_P(LIMIT), TR_NO_BY,  \
    TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "op", "step")                         \
  R(XX, decode_kernels, TR_SUM_DEC_KERNEL, dec_kernel, dec_kernel_rows,        \
    "decode/kernels",                                                          \
    TR_P(RANK) | TR_P(KIND) | TR_P(Q) | TR_P(MODULE) | TR_P(LIMIT), TR_NO_BY,  \
    TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "name", "step")                       \
  R(XX, decode_blocks, TR_SUM_DEC_BLOCK, dec_block, dec_block_rows,            \
    "decode/blocks", TR_P(RANK) | TR_P(KIND) | TR_P(Q) | TR_P(LIMIT),          \
    TR_NO_BY, TR_T_GROWS | TR_T_CSV, "module", "step")                         \
  R(XX, decode_steps, TR_SUM_DEC_STEP, dec_step, dec_step_rows,                \
    "decode/steps", TR_P(RANK) | TR_P(LIMIT), TR_NO_BY,                        \
    TR_T_SUMMED | TR_T_CSV, NULL, NULL)                                        \
  R(XX, decode_median, TR_SUM_DEC_MEDIAN, dec_median, dec_median_rows,         \
    "decode/median", TR_P(RANK) | TR_P(KIND) | TR_P(LIMIT), TR_NO_BY,          \
    TR_T_GROWS | TR_T_CSV, NULL, "step")                                       \
  R(XX, sources, TR_SUM_DEC_SOURCE, dec_source, dec_source_rows, "sources",    \
    TR_P(RANK) | TR_P(KIND) | TR_P(Q) | TR_P(MODULE) | TR_P(LIMIT), TR_NO_BY,  \
    TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "source", "step")                     \
  R(XX, critical_kinds, TR_SUM_CRIT_KIND, crit_kind, cp_kind_rows,             \
    "critical_path/summary", TR_P(RANK) | TR_P(KIND) | TR_P(LIMIT), TR_NO_BY,  \
    TR_T_SUMMED | TR_T_CSV, NULL, "step")                                      \
  R(XX, critical_steps, TR_SUM_CRIT_STEP, crit_step, cp_step_rows,             \
    "critical_path/steps", TR_P(RANK) | TR_P(KIND) | TR_P(STEP) | TR_P(LIMIT), \
    TR_NO_BY, TR_T_GROWS | TR_T_CSV, NULL, NULL)                               \
  R(XX, critical_segments, TR_SUM_CRIT_SEGMENT, crit_segment, cp_segment_rows, \
    "critical_path", TR_P(RANK) | TR_P(KIND) | TR_P(STEP) | TR_P(LIMIT),       \
    TR_NO_BY, TR_T_GROWS | TR_T_CSV, NULL, NULL)                               \
  R(XX, kernel_paths, TR_SUM_KERNEL_PATH, kernel_path, cp_kernel_path_rows,    \
    "critical_path/kernels",                                                   \
    TR_P(RANK) | TR_P(Q) | TR_P(KIND) | TR_P(FAMILY) | TR_P(LIMIT), TR_NO_BY,  \
    TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "name", "step")                       \
  R(XX, family_paths, TR_SUM_FAMILY_PATH, family_path, cp_family_path_rows,    \
    "critical_path/families", TR_P(RANK) | TR_P(Q) | TR_P(KIND) | TR_P(LIMIT), \
    TR_NO_BY, TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "family", "step")           \
  R(XX, idle_culprits, TR_SUM_CULPRIT, culprit, cp_culprit_rows,               \
    "idle/culprits", TR_P(RANK) | TR_P(KIND) | TR_P(LIMIT), TR_NO_BY,          \
    TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, NULL, "step")                         \
  R(XX, kernel_sequences, TR_SUM_SEQUENCE, sequence, cp_sequence_rows,         \
    "sequences", TR_P(RANK) | TR_P(Q) | TR_P(KIND) | TR_P(LIMIT), TR_NO_BY,    \
    TR_T_GROWS | TR_T_SUMMED | TR_T_CSV, "sequence", "step")                   \
  R(XX, median_sequence, TR_SUM_MEDIAN_SEQ, median_seq, cp_median_seq_rows,    \
    "sequences/median", TR_P(RANK) | TR_P(KIND) | TR_P(LIMIT), TR_NO_BY,       \
    TR_T_GROWS | TR_T_CSV, NULL, NULL)                                         \
  R(XX, op_perf, TR_SUM_OP_PERF, op_perf, pf_op_perf_rows, "ops/perf",         \
    TR_P(RANK) | TR_P(Q) | TR_P(CATEGORY) | TR_P(SORT) | TR_P(LIMIT),          \
    TR_NO_BY, TR_T_GROWS | TR_T_CSV | TR_T_OPCAT, "op", NULL)                  \
  R(XX, memory, TR_SUM_MEMORY, memory, mem_device_rows, "memory",              \
    TR_P(RANK) | TR_P(LIMIT), TR_NO_BY, TR_T_CSV, NULL, NULL)                  \
  R(XX, memory_timeline, TR_SUM_MEMORY_TIMELINE, memory_timeline,              \
    mem_timeline_rows, "memory/timeline", TR_P(RANK) | TR_P(BUCKETS),          \
    TR_NO_BY, TR_T_CSV, NULL, NULL)                                            \
  R(XX, memory_ops, TR_SUM_MEMORY_OP, memory_op, mem_op_rows, "memory/ops",    \
    TR_P(RANK) | TR_P(Q) | TR_P(LIMIT), TR_NO_BY, TR_T_GROWS | TR_T_CSV, "op", \
    NULL)                                                                      \
  C(XX, collective_families, TR_COLL_FAMILY, coll_family, "collectives",       \
    TR_P(RANK) | TR_P(BY) | TR_P(FAMILY) | TR_P(LIMIT),                        \
    TR_BY("family", "step", "rank"), TR_T_CSV, NULL, NULL)                     \
  C(XX, collective_steps, TR_COLL_STEP, coll_step, "collectives/steps",        \
    TR_P(RANK) | TR_P(LIMIT), TR_NO_BY, TR_T_CSV, NULL, NULL)                  \
  C(XX, collective_instances, TR_COLL_INSTANCE, coll_instance,                 \
    "collectives/instances", TR_P(FAMILY) | TR_P(LIMIT), TR_NO_BY,             \
    TR_T_GROWS | TR_T_CSV, NULL, NULL)                                         \
  C(XX, collective_timeline, TR_COLL_TIMELINE, coll_timeline,                  \
    "collectives/timeline", TR_P(RANK), TR_NO_BY, TR_T_CSV, NULL, NULL)

/* XX(scope, name, ROWS, row, route, params, by, flags, key, kind): every
 * row, scope PER_RANK or PER_CAPTURE. */
#define TR_TABLE_MAP(XX) TR_TABLE_ROWS_(TR_ROW_RANK_, TR_ROW_CAP_, XX)

/* XX(name, ROWS, row): the rank summary's tables, in the order it prints
 * them (the indexer's structs and JSON, the store's INSERTs expand it). */
#define TR_SUM_TABLES(XX) TR_TABLE_ROWS_(TR_ROW_NAME_, TR_ROW_SKIP_, XX)

/* XX(name, ROWS, row): the capture's tables. */
#define TR_CAP_TABLES(XX) TR_TABLE_ROWS_(TR_ROW_SKIP_, TR_ROW_NAME_, XX)

/* XX(name, rows): the rank summary's tables and the indexer's function
 * that writes each, in the summary's order (index/agg/agg_json.c). */
#define TR_SUM_WRITERS(XX) TR_TABLE_ROWS_(TR_ROW_WRITER_, TR_ROW_SKIP_, XX)

#define TR_ROW_RANK_(XX, name, ROWS, row, rows, ...)                           \
  XX(PER_RANK, name, ROWS, row, __VA_ARGS__)
#define TR_ROW_CAP_(XX, ...)                   XX(PER_CAPTURE, __VA_ARGS__)
#define TR_ROW_NAME_(XX, name, ROWS, row, ...) XX(name, ROWS, row)
#define TR_ROW_WRITER_(XX, name, ROWS, row, rows, ...) XX(name, rows)
#define TR_ROW_SKIP_(XX, ...)

/* XX(NAME, name, type): the query parameters of the table routes, type
 * INT, TEXT or ENUM (api/api_int.h's API_P_<type>). */
#define TR_PARAM_MAP(XX)                                                       \
  XX(RANK, rank, INT)                                                          \
  XX(Q, q, TEXT)                                                               \
  XX(CATEGORY, category, ENUM)                                                 \
  XX(SORT, sort, ENUM)                                                         \
  XX(LIMIT, limit, INT)                                                        \
  XX(FAMILY, family, TEXT)                                                     \
  XX(KIND, kind, TEXT)                                                         \
  XX(BY, by, ENUM)                                                             \
  XX(BUCKETS, buckets, INT)                                                    \
  XX(MODULE, module, TEXT)                                                     \
  XX(STEP, step, TEXT)                                                         \
  XX(ON_PATH, on_path, INT)

enum tr_param {
#define XX(e, name, type) TR_PARAM_##e,
  TR_PARAM_MAP(XX)
#undef XX
      TR_NPARAMS
};

#define TR_P(e)     (1u << TR_PARAM_##e)
#define TR_BY(...)  ((const char *const[]){ __VA_ARGS__, NULL })
#define TR_NO_BY    NULL
#define TR_T_GROWS  1u
#define TR_T_SUMMED 2u
#define TR_T_CSV    4u
#define TR_T_OPCAT  8u /* ?category=: tr_op_categories */

enum tr_table {
#define XX(scope, name, ...) TR_TABLE_##name,
  TR_TABLE_MAP(XX)
#undef XX
      TR_NTABLES
};

/* A row of TR_TABLE_MAP as data (common/summary.c). */
struct tr_table_row {
  const char *name;       /* the summary member, SQL table and sum */
  const char *route;      /* after /captures/<id>/ */
  unsigned params;        /* TR_P() bits */
  const char *const *by;  /* NULL-terminated, or NULL */
  unsigned flags;         /* TR_T_* */
  const char *key, *kind; /* in the summed rows, or NULL */
  bool per_capture;       /* a CAP row */
};

extern const struct tr_table_row tr_tables[TR_NTABLES];
/* The names of TR_PARAM_MAP, by enum tr_param. */
extern const char *const tr_param_names[TR_NPARAMS];
/* The values of ?sort= (the first the default), NULL-terminated. */
extern const char *const tr_sorts[];
/* TraceLens's op categories, its per-op report's sheets (docs/PERF.md):
 * the op groups' category, NULL-terminated. */
extern const char *const tr_op_categories[];

/*
 * XX(by, table, key, key_sql, join, count, total, decode, rates): the
 * values of /diff's ?by= (the first the default), each read from a table
 * of TR_TABLE_MAP (store/diff.c): key the member its rows are named by,
 * key_sql that key in SQL over the table's row x (joined with join), count
 * the member summed as the rows' count, total the one summed as their
 * time; decode: a decode table, of one step kind with ?kind= ('' keys
 * stand for null); rates: the op groups (docs/PERF.md), whose rows also
 * give each side's achieved TFLOPS/s and TB/s. A sequence is kept per
 * step kind and length by each rank (the most frequent:
 * index/cpath/cpath_json.c), so one missing on a side was rarer there, not
 * absent.
 */
/* clang-format off */
#define TR_DIFF_BY_MAP(XX)                                                     \
  XX(kernel, kernels, name, "n.name", " JOIN names n ON n.id = x.name_id",     \
     count, total_ns, false, false)                                            \
  XX(category, categories, category, "x.category", "", count, total_ns, false, \
     false)                                                                    \
  XX(step, steps, kind, "x.kind", "", count, total_ns, false, false)           \
  XX(family, families, family, "x.family", "", count, total_ns, false, false)  \
  XX(sequence, kernel_sequences, sequence, "x.step || ': ' || x.sequence", "", \
     count, total_ns, false, false)                                            \
  XX(module, decode_modules, module, "coalesce(x.module, '')", "", kernels,    \
     total_ns, true, false)                                                    \
  XX(layer, decode_layers, layer, "coalesce(CAST(x.layer AS TEXT), '')", "",   \
     kernels, total_ns, true, false)                                           \
  XX(op, decode_ops, op, "coalesce(x.op, '')", "", count, total_ns, true,      \
     false)                                                                    \
  XX(perf, op_perf, group,                                                     \
     "x.op || ' ' || x.params || CASE WHEN x.recompute THEN ' recompute'"      \
     " ELSE '' END", "", count, kernel_ns, false, true)
/* clang-format on */

/* The values of TR_DIFF_BY_MAP, NULL-terminated. */
extern const char *const tr_diff_bys[];

/* The table called name (or served at route), or -1. */
int tr_table_find(const char *name);
int tr_table_find_route(const char *route);

/* The number of rows of a list: TR_SUM_COUNT(TR_SUM_KERNEL). */
#define TR_SUM_ONE_(key, col, ty, all, since) +1
#define TR_SUM_COUNT(ROWS)                    (0 ROWS(TR_SUM_ONE_))

#endif

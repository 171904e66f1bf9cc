/*
 * libFuzzer target for the indexer past the reader: the input is a trace
 * file indexed whole by idx_file() on one thread, so that the aggregation,
 * decode, the time pass and the critical path (index/agg*.c, dec_*.c,
 * cpath*.c, host*.c) all see it, with small name caps so that folding is
 * reached. Any crash, leak, hang or sanitizer report is a bug, and so is a
 * success whose summary is not an object holding the rank's figures, or
 * whose span or totals are negative (the times docs/TRACE_FORMATS.md bounds
 * keep them below 2^63, the sums saturate: tests/data/fuzz.dict holds the
 * values at those edges). The
 * seeds (scripts/fuzz.sh) are small whole traces cut from real ones: a
 * trace cut short is refused before the time pass.
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "index/index.h"

/* A figure of the rank that no trace may make negative. */
static int negative(json_t *sum)
{
  static const char *const keys[] = {
    "span_ns",      "kernel_ns",  "device_ns",     "gpu_busy_ns", "memcpy_ns",
    "memcpy_bytes", "runtime_ns", "collective_ns", "replay_ns"
  };

  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
    json_t *v = json_object_get(sum, keys[i]);

    if (json_is_integer(v) && json_integer_value(v) < 0)
      return 1;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static char path[64];
  struct idx_options o = { 0 };
  struct tr_err err = { 0 };
  json_t *out = NULL;
  FILE *f;

  if (path[0] == '\0')
    snprintf(path, sizeof(path), "/tmp/traced-fuzz-index-%d.json",
             (int)getpid());
  if ((f = fopen(path, "wb")) == NULL)
    return 0;
  if (fwrite(data, 1, size, f) != size) {
    fclose(f);
    return 0;
  }
  fclose(f);
  o.format = IDX_FORMAT_AUTO;
  o.rank = -1;
  o.threads = 1;
  o.max_kernel_names = 16;
  o.max_inflated_bytes = 64u << 20;
  o.max_spill_bytes = 64u << 20;
  if (idx_file(path, &o, &out, &err) == 0 &&
      (!json_is_object(out) || json_object_get(out, "events") == NULL ||
       negative(out)))
    __builtin_trap();
  json_decref(out);
  return 0;
}

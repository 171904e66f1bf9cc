/*
 * The points of a sweep (docs/SWEEPS.md): a request's own concurrency
 * ladder, or the scenarios ATOM's CI runs its model and variant at, read
 * from the models.json presets come from and bounded as
 * .github/scripts/catalog.py bounds them. HTTP threads; reads models.json.
 */
#ifndef ATOM_SWEEP_H
#define ATOM_SWEEP_H

#include <jansson.h>

#include "common/config.h"
#include "common/tr.h"

/* The values of a sweep request's "scenario", NULL-terminated: "ci". */
extern const char *const atom_sweep_scenarios[];

/*
 * The points of the sweep request req (borrowed, as sent: "conc" an array
 * of integers or absent, "scenario", "model", "variant", "isl", "osl" as
 * given or absent): a new array of {isl, osl, conc[, ratio]}, by scenario
 * (the file's order) then concurrency (ascending). With "conc" the
 * request's ISL and OSL (or their defaults) at each concurrency of the
 * ladder (each within TR_REQUEST_MAP's range, no value twice); with
 * "scenario": "ci", the pairs of the model's preset with its variant's
 * concurrencies between conc_min (default 0) and conc_max (default 256),
 * ratio its random_range_ratio (default 0.8), only the pairs of the
 * request's isl and osl when it gives them. At most cfg->sweep_points_max
 * points. TR_EINVAL naming "conc", "scenario", "isl" or "osl" otherwise;
 * models_json's errors as atom/preset.h says.
 */
int atom_sweep_points(const struct cfg *cfg, json_t *req, json_t **out,
                      struct tr_err *err);

/* The request of point pt (an element of atom_sweep_points()'s answer)
 * of a sweep whose capture request is base (validated, borrowed): base at
 * pt's isl, osl and conc, with the scenario's range ratio as the bench's
 * --random-range-ratio (run_benchmark.sh passes RANDOM_RANGE_RATIO, and
 * the last value of a flag wins) unless base's bench_args give one. A
 * new object; NULL when out of memory. */
json_t *atom_sweep_point(json_t *base, json_t *pt);

#endif

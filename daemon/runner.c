/* TEMPORARY stub runner, replaced by the capture work. */
#include <stdlib.h>
#include "daemon/runner.h"

struct cap_runner { int unused; };

int cap_runner_new(uv_loop_t *loop, const struct cfg *cfg,
                   struct cap_runner **out, struct tr_err *err)
{
  (void)loop; (void)cfg; (void)err;
  *out = calloc(1, sizeof(**out));
  return *out ? 0 : TR_ENOMEM;
}
void cap_runner_wake(struct cap_runner *r) { (void)r; }
int64_t cap_runner_current(const struct cap_runner *r) { (void)r; return 0; }
int cap_runner_cancel(struct cap_runner *r, int64_t id)
{
  (void)r; (void)id;
  return TR_ENOTFOUND;
}
void cap_runner_shutdown(struct cap_runner *r, void (*done)(void *ud),
                         void *ud)
{
  (void)r;
  done(ud);
}
void cap_runner_free(struct cap_runner *r) { free(r); }

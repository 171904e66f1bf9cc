/* TEMPORARY stub, replaced by the api work. */
#include <stdlib.h>
#include "api/api.h"
int api_start(const struct cfg *cfg, const struct api_hooks *hooks,
              struct api **out, struct tr_err *err)
{
  (void)cfg; (void)hooks; (void)out;
  return tr_err_set(err, TR_EINVAL, "", "api not built yet");
}
void api_stop(struct api *api) { (void)api; }
int api_port(const struct api *api) { (void)api; return 0; }

/* TEMPORARY stub, replaced by the indexer work. */
#include <stdio.h>
#include "index/index.h"
int idx_cli_main(int argc, char **argv)
{
  (void)argc; (void)argv;
  fprintf(stderr, "traced index: not built yet\n");
  return 2;
}

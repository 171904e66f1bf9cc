#include "common/stats.h"

struct tr_stats tr_stats;

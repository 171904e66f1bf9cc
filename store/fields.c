/*
 * The rank summary's field list (common/summary.h) as the store's tables
 * of struct store__field: what ranks.c binds and what queries.c selects.
 */
#include <string.h>

#include "common/summary.h"
#include "store/store_int.h"

/* A SHARE row's ALL slot names its denominator column, a RATIO row's its
 * numerator, every other row's how it sums over ranks. */
#define FIELD_OF_SHARE(key, col, den)   { #key, #col, F_SHARE, A_SHARE, #den },
#define FIELD_OF(key, col, ty, all)     { #key, #col, F_##ty, A_##all, NULL },
#define FIELD_INT(k, c, a)              FIELD_OF(k, c, INT, a)
#define FIELD_INT_NULL(k, c, a)         FIELD_OF(k, c, INT_NULL, a)
#define FIELD_TEXT(k, c, a)             FIELD_OF(k, c, TEXT, a)
#define FIELD_TEXT_NULL(k, c, a)        FIELD_OF(k, c, TEXT_NULL, a)
#define FIELD_NAME(k, c, a)             FIELD_OF(k, c, NAME, a)
#define FIELD_JSON(k, c, a)             FIELD_OF(k, c, JSON, a)
#define FIELD_JSON_NULL(k, c, a)        FIELD_OF(k, c, JSON_NULL, a)
#define FIELD_REAL(k, c, a)             FIELD_OF(k, c, REAL, a)
#define FIELD_REAL_NULL(k, c, a)        FIELD_OF(k, c, REAL_NULL, a)
#define FIELD_AVG(k, c, a)              FIELD_OF(k, c, AVG, a)
#define FIELD_SHARE(k, c, a)            FIELD_OF_SHARE(k, c, a)
#define FIELD_RATIO(k, c, a)            { #k, #c, F_RATIO, A_RATIO, #a },
#define FIELD_PART(k, c, a)             { #k, #c, F_PART, A_PART, #a },
#define FIELD(key, col, ty, all, since) FIELD_##ty(key, col, all)

const struct store__field store__rank_fields[] = { TR_SUM_RANK(FIELD) };
const size_t store__rank_nfields =
    sizeof(store__rank_fields) / sizeof(store__rank_fields[0]);

#define ROW_FIELDS(member, ROWS, row)                                          \
  static const struct store__field row##_fields[] = { ROWS(FIELD) };
TR_SUM_TABLES(ROW_FIELDS)

#define TABLE(member, ROWS, row)                                               \
  { #member, row##_fields, sizeof(row##_fields) / sizeof(row##_fields[0]) },
const struct store__table store__tables[] = { TR_SUM_TABLES(TABLE) };
const size_t store__ntables = sizeof(store__tables) / sizeof(store__tables[0]);

TR_CAP_TABLES(ROW_FIELDS)
const struct store__table store__cap_tables[] = { TR_CAP_TABLES(TABLE) };
const size_t store__ncap_tables =
    sizeof(store__cap_tables) / sizeof(store__cap_tables[0]);

const struct store__table *store__table(const char *member)
{
  for (size_t i = 0; i < store__ntables; i++)
    if (strcmp(store__tables[i].member, member) == 0)
      return &store__tables[i];
  return NULL;
}

bool store__field_stored(const struct store__field *f)
{
  return f->ty != F_AVG && f->ty != F_SHARE && f->ty != F_RATIO &&
         f->ty != F_PART;
}

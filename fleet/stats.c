/*
 * The fleet's counters, written by the publisher's pool jobs and the lab
 * view's follower, read by the HTTP threads for /healthz and /metrics.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fleet/fleet_int.h"

struct fleet_stats fleet_stats;

static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;
static char errors[2][256]; /* [lab]: guarded by error_lock */

void fleet_stats_error(bool lab, const char *msg)
{
  pthread_mutex_lock(&error_lock);
  snprintf(errors[lab], sizeof(errors[lab]), "%s", msg ? msg : "");
  pthread_mutex_unlock(&error_lock);
}

static void error_of(bool lab, char *out, size_t size)
{
  pthread_mutex_lock(&error_lock);
  snprintf(out, size, "%.255s", errors[lab]);
  pthread_mutex_unlock(&error_lock);
}

int64_t fleet_now_ms(void)
{
  return tr_now_ns() / 1000000;
}

/* Seconds the oldest unpublished capture has waited; 0 with none. */
static int64_t outbox_age_s(void)
{
  int64_t oldest = atomic_load(&fleet_stats.oldest_ms);

  return oldest > 0 ? (fleet_now_ms() - oldest) / 1000 : 0;
}

/* Seconds since the lab view last read PostgreSQL (or since it started). */
static int64_t unheard_s(void)
{
  int64_t heard = atomic_load(&fleet_stats.heard_ms);

  if (heard == 0)
    heard = atomic_load(&fleet_stats.started_ms);
  return (fleet_now_ms() - heard) / 1000;
}

bool fleet_degraded(const struct cfg *cfg, char *reason, size_t size)
{
  int64_t bound = cfg->fleet_outbox_max_age_s, age;
  char why[256];

  if (atomic_load(&fleet_stats.publishing) && (age = outbox_age_s()) > bound) {
    error_of(false, why, sizeof(why));
    snprintf(reason, size,
             "fleet: %lld captures wait to be published, the oldest for "
             "%lld s%s%s",
             (long long)atomic_load(&fleet_stats.outbox), (long long)age,
             why[0] ? ": " : "", why);
    return true;
  }
  if (atomic_load(&fleet_stats.following) && (age = unheard_s()) > bound) {
    error_of(true, why, sizeof(why));
    snprintf(reason, size,
             "fleet: the lab view has not read the fleet's PostgreSQL for "
             "%lld s%s%s",
             (long long)age, why[0] ? ": " : "", why);
    return true;
  }
  return false;
}

/* The fleet's metrics for /metrics (Prometheus text 0.0.4), one row
 * each: XX(type, name, help, value), the lab view's after the publisher's
 * (FLEET_VIEW_METRICS: only with fleet_view). */
#define FLEET_METRICS(XX)                                                      \
  XX(gauge, "traced_fleet_outbox_length",                                      \
     "Captures and deletes waiting to be published to the fleet.",             \
     atomic_load(&fleet_stats.outbox))                                         \
  XX(gauge, "traced_fleet_outbox_age_seconds",                                 \
     "How long the oldest of them has waited (0: none).", outbox_age_s())      \
  XX(gauge, "traced_fleet_connected",                                          \
     "1 while the publisher's PostgreSQL connection is up.",                   \
     atomic_load(&fleet_stats.connected))                                      \
  XX(gauge, "traced_fleet_degraded",                                           \
     "1 while /healthz says degraded for the fleet.",                          \
     fleet_degraded(cfg, reason, sizeof(reason)))                              \
  XX(counter, "traced_fleet_published_total", "Captures published.",           \
     atomic_load(&fleet_stats.published))                                      \
  XX(counter, "traced_fleet_deleted_total", "Deletes published.",              \
     atomic_load(&fleet_stats.deleted))                                        \
  XX(counter, "traced_fleet_backfilled_total",                                 \
     "Old captures put in the outbox by the backfill.",                        \
     atomic_load(&fleet_stats.backfilled))                                     \
  XX(counter, "traced_fleet_failures_total",                                   \
     "Publish attempts that failed (retried with backoff).",                   \
     atomic_load(&fleet_stats.failures))

#define FLEET_VIEW_METRICS(XX)                                                 \
  XX(gauge, "traced_fleet_followed_seq",                                       \
     "The last change of the fleet the lab view applied.",                     \
     atomic_load(&fleet_stats.followed_seq))                                   \
  XX(gauge, "traced_fleet_unheard_seconds",                                    \
     "Seconds since the lab view last read PostgreSQL.", unheard_s())          \
  XX(counter, "traced_fleet_copies_total",                                     \
     "Captures copied from PostgreSQL to answer the lab view.",                \
     atomic_load(&fleet_stats.copies))                                         \
  XX(counter, "traced_fleet_follow_failures_total",                            \
     "Reads of the fleet's changes that failed.",                              \
     atomic_load(&fleet_stats.follow_failures))

static void metric(FILE *f, const char *type, const char *name,
                   const char *help, long long v)
{
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", name, help, name, type,
          name, v);
}

void fleet_metrics(const struct cfg *cfg, FILE *f)
{
  char reason[512];

#define PUT(type, name, help, value)                                           \
  metric(f, #type, name, help, (long long)(value));
  if (cfg->fleet_dsn[0] == '\0')
    return;
  FLEET_METRICS(PUT)
  if (cfg->fleet_view) {
    FLEET_VIEW_METRICS(PUT)
  }
#undef PUT
}

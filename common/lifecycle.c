#include "common/lifecycle.h"

#include <stddef.h>
#include <string.h>

static const char *const status_names[] = {
#define XX(e, name, final) #name,
  TR_STATUS_MAP(XX)
#undef XX
};

static const bool status_final[] = {
#define XX(e, name, final) final,
  TR_STATUS_MAP(XX)
#undef XX
};

const char *const tr_kind_names[] = {
#define XX(e, name) #name,
  TR_KIND_MAP(XX)
#undef XX
      NULL
};

static const char *const phase_names[] = {
#define XX(e, name, ...) #name,
  TR_PHASE_MAP(XX)
#undef XX
};

static const unsigned phase_server[] = {
#define XX(e, name, log, from, server) server,
  TR_PHASE_MAP(XX)
#undef XX
};

const struct tr_member tr_members[] = {
#define XX(name, type, lo, hi, dflt) { #name, TR_M_##type, lo, hi, dflt },
  TR_REQUEST_MAP(XX)
#undef XX
};

const unsigned tr_members_n = sizeof(tr_members) / sizeof(tr_members[0]);

const char *tr_status_name(enum tr_status s)
{
  return (unsigned)s < TR_NSTATUS ? status_names[s] : "?";
}

const char *tr_phase_name(enum tr_phase p)
{
  return (unsigned)p < TR_NPHASE ? phase_names[p] : "?";
}

bool tr_phase_server(enum tr_phase p, unsigned server)
{
  return (unsigned)p < TR_NPHASE && (phase_server[p] & server) != 0;
}

bool tr_status_final(enum tr_status s)
{
  return (unsigned)s < TR_NSTATUS && status_final[s];
}

static int find(const char *const *names, int n, const char *name)
{
  for (int i = 0; name != NULL && i < n; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  return -1;
}

int tr_status_parse(const char *name)
{
  return find(status_names, TR_NSTATUS, name);
}

int tr_phase_parse(const char *name)
{
  return find(phase_names, TR_NPHASE, name);
}

const struct tr_member *tr_member_find(const char *name)
{
  for (unsigned i = 0; name != NULL && i < tr_members_n; i++)
    if (strcmp(tr_members[i].name, name) == 0)
      return &tr_members[i];
  return NULL;
}

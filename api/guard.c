/*
 * Who may ask: every request passes here before its route runs. A browser
 * on the machine is the attacker's best tool (docs/SECURITY.md): a page
 * anywhere can make it POST to 127.0.0.1, and DNS rebinding can make it read
 * the answers. So:
 *
 *   Host     must name traced: the listen address, a numeric address the
 *            connection really arrived on, `localhost` or a loopback
 *            literal when listening on loopback (with the listening port),
 *            or one of allowed_hosts (any port). A rebound name is none of
 *            these.
 *   Origin   when sent, must be this very origin (http(s)://<Host>) or
 *            name one of allowed_hosts; a foreign or "null" origin is
 *            refused, whatever the method.
 *   Sec-Fetch-Site  cross-site fetches are refused, except a top-level
 *            navigation (a link to the dashboard pasted into a wiki).
 *   token    the bearer token when one is configured (GET/HEAD of the
 *            dashboard's files and /healthz are exempt): auth_token, or
 *            read from auth_token_file when the API starts.
 *   Content-Type  a POST body must say application/json (415): a form or
 *            text/plain POST, the ones a page may send without a
 *            preflight, never reach a route. Other methods need a
 *            preflight, which is never granted: no CORS header is ever
 *            sent.
 *
 * All of it is judged on the headers alone, before a byte of the body is
 * kept (server.c): a refused request's body is never stored or parsed.
 * An address that keeps getting 401s gets each further one later
 * (fail_delay()): its connection is suspended and resumed by conns.c's
 * reaper, so no thread waits.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "api/api_int.h"
#include "common/file.h"
#include "common/net.h"

/* Bytes of auth_token_file read at most. */
#define TOKEN_MAX 4096
/* A token shorter than this is warned about (docs/SECURITY.md): one
 * chosen by hand is, a random one (openssl rand -hex 32) is 64 bytes. */
#define TOKEN_MIN 16

/* ---- Host ---- */

/* "[::1]:7700" -> name "[::1]", port 7700; "localhost" -> port 80. False
 * when it is not name[:port]. */
static bool split_host(const char *host, char *name, size_t size, long *port)
{
  const char *close = host[0] == '[' ? strchr(host, ']') : NULL;
  const char *colon = close ? strchr(close, ':') : strrchr(host, ':');
  size_t n = colon ? (size_t)(colon - host) : strlen(host);
  char *end;

  if (n == 0 || n >= size || (host[0] == '[' && close == NULL))
    return false;
  memcpy(name, host, n);
  name[n] = '\0';
  *port = 80;
  if (colon == NULL)
    return true;
  *port = strtol(colon + 1, &end, 10);
  return end != colon + 1 && *end == '\0';
}

/* name (a v6 literal in brackets) as a numeric address in canonical text
 * (inet_ntop's); false when it is not a plain numeric address: a name
 * needs DNS and is never trusted as an address, nor is "127.1". */
static bool numeric(const char *name, char *canon, size_t size)
{
  unsigned char addr[16];
  char bare[64];
  size_t n = strlen(name);
  int af = AF_INET;

  if (name[0] == '[' && n >= 2 && n - 2 < sizeof(bare)) {
    memcpy(bare, name + 1, n - 2);
    bare[n - 2] = '\0';
    af = AF_INET6;
  } else if (snprintf(bare, sizeof(bare), "%s", name) >= (int)sizeof(bare)) {
    return false;
  }
  return inet_pton(af, bare, addr) == 1 &&
         inet_ntop(af, addr, canon, (socklen_t)size) != NULL;
}

/* The address the connection arrived on, in canonical text (a v4 address
 * on a dual-stack socket without its ::ffff: prefix). */
static bool local_address(struct api_req *r, char *canon, size_t size)
{
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  struct sockaddr_storage ss;
  socklen_t len = sizeof(ss);

  if (ci == NULL ||
      getsockname(ci->connect_fd, (struct sockaddr *)&ss, &len) != 0 ||
      getnameinfo((struct sockaddr *)&ss, len, canon, (socklen_t)size, NULL, 0,
                  NI_NUMERICHOST) != 0)
    return false;
  if (strncmp(canon, "::ffff:", 7) == 0 && strchr(canon + 7, '.') != NULL)
    memmove(canon, canon + 7, strlen(canon + 7) + 1);
  return true;
}

static bool in_list(char *const *list, const char *name)
{
  for (; list != NULL && *list != NULL; list++)
    if (strcasecmp(*list, name) == 0)
      return true;
  return false;
}

static bool host_allowed(struct api_req *r, const char *host)
{
  const struct cfg *cfg = r->api->cfg;
  char name[256], canon[64], local[64];
  long port;

  /* What the dashboard and scripts send almost always: no parsing. */
  if (strcmp(host, r->api->listen_host) == 0)
    return true;
  if (!split_host(host, name, sizeof(name), &port))
    return false;
  /* A configured name is the operator's, not a rebound one: any port
   * (a reverse proxy may keep its own). */
  if (in_list(cfg->allowed_hosts, name))
    return true;
  if (port != r->api->port)
    return false;
  if (!numeric(name, canon, sizeof(canon)))
    return r->api->loopback && strcasecmp(name, "localhost") == 0;
  if (r->api->loopback && tr_addr_loopback(canon))
    return true;
  return local_address(r, local, sizeof(local)) && strcmp(local, canon) == 0;
}

/* ---- Origin and Sec-Fetch-Site ---- */

static const char *header(struct api_req *r, const char *name)
{
  return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* The Origin is this very site (http(s)://<Host>), or one of allowed_hosts
 * (the dashboard behind a reverse proxy that rewrites Host). */
static bool origin_allowed(struct api_req *r, const char *origin,
                           const char *host)
{
  static const char *const schemes[] = { "http://", "https://" };
  char name[256];
  long port;

  for (size_t i = 0; i < 2; i++) {
    size_t n = strlen(schemes[i]);

    if (strncasecmp(origin, schemes[i], n) != 0)
      continue;
    if (host != NULL && strcasecmp(origin + n, host) == 0)
      return true;
    return split_host(origin + n, name, sizeof(name), &port) &&
           in_list(r->api->cfg->allowed_hosts, name);
  }
  return false;
}

static bool safe_method(const struct api_req *r)
{
  return strcmp(r->method, MHD_HTTP_METHOD_GET) == 0 ||
         strcmp(r->method, MHD_HTTP_METHOD_HEAD) == 0;
}

/* A cross-site fetch that is not a top-level navigation. */
static bool cross_site(struct api_req *r)
{
  const char *site = header(r, "Sec-Fetch-Site");
  const char *mode = header(r, "Sec-Fetch-Mode");

  if (site == NULL || strcasecmp(site, "same-origin") == 0 ||
      strcasecmp(site, "none") == 0)
    return false;
  return !safe_method(r) || mode == NULL || strcasecmp(mode, "navigate") != 0;
}

/* ---- the token ---- */

/* Compares in time that depends only on the token's length, so that the
 * answer's timing does not tell how much of a guess was right. */
static bool token_equal(const char *given, const char *want)
{
  size_t n = strlen(want), m = strlen(given);
  unsigned char diff = m != n;

  for (size_t i = 0; i < n; i++)
    diff |= (unsigned char)want[i] ^ (unsigned char)(i < m ? given[i] : 0);
  return diff == 0;
}

/* GET (and HEAD) of /healthz and of the dashboard's own files (public
 * code, no data) are open; a browser cannot send a bearer header when it
 * loads a page. */
static bool auth_exempt(const struct api_req *r)
{
  if (r->route == NULL || !safe_method(r))
    return false;
  if (r->route->get == api_get_healthz)
    return true;
  return r->route->get == api_get_asset &&
         api_asset_exists(r->nseg == 0 ? "" : r->seg[0]);
}

static bool authorized(struct api_req *r)
{
  const char *token = r->api->token;
  const char *h;

  if (token[0] == '\0' || auth_exempt(r))
    return true;
  h = header(r, MHD_HTTP_HEADER_AUTHORIZATION);
  if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
    return false;
  h += 7;
  while (*h == ' ')
    h++;
  return token_equal(h, token);
}

/* auth_token_file: the token from a file only root reads (mode without
 * group or other bits), so that it is in no command line (ps) and in no
 * configuration file others may read. Trailing whitespace is dropped; the
 * token itself is printable, without spaces. */
static int read_token_file(const char *path, char **out, struct tr_err *err)
{
  struct stat st;
  char *text = NULL;
  size_t len = 0;
  bool ok;

  if (stat(path, &st) == 0 && (st.st_mode & 0077) != 0)
    return tr_err_set(err, TR_EINVAL, "auth_token_file",
                      "%s may be read or written by others (mode %04o): "
                      "chmod 600 it",
                      path, (unsigned)(st.st_mode & 07777));
  if (tr_read_file(NULL, path, TOKEN_MAX, &text, &len, err) != 0)
    return TR_EINVAL;
  while (len > 0 && isspace((unsigned char)text[len - 1]))
    text[--len] = '\0';
  ok = len > 0;
  for (size_t i = 0; ok && i < len; i++)
    ok = isgraph((unsigned char)text[i]);
  if (!ok) {
    free(text);
    return tr_err_set(err, TR_EINVAL, "auth_token_file",
                      "%s: the token must be one word of printable characters",
                      path);
  }
  *out = text;
  return 0;
}

/* The start-up warnings about the token actually loaded (from either
 * setting): docs/ATOM.md, "What a request may pass": without one, anyone
 * who reaches the API runs ATOM as traced's user. */
static void warn_token(const struct api *api)
{
  size_t n = strlen(api->token);

  if (n == 0)
    fprintf(stderr,
            "traced: warning: no auth_token: anyone who can reach %s may "
            "queue captures, which run ATOM's scripts, server and bench "
            "as this daemon's user; set auth_token_file\n",
            api->cfg->listen);
  else if (n < TOKEN_MIN)
    fprintf(stderr,
            "traced: warning: the auth token is %zu bytes, under %d: it "
            "can be guessed; use a longer random one (openssl rand -hex "
            "32)\n",
            n, TOKEN_MIN);
}

int api_token_load(struct api *api, struct tr_err *err)
{
  const struct cfg *cfg = api->cfg;
  int rc;

  if (cfg->auth_token_file[0] != '\0')
    rc = read_token_file(cfg->auth_token_file, &api->token, err);
  else if ((api->token = strdup(cfg->auth_token)) == NULL)
    rc = tr_err_set(err, TR_ENOMEM, "", "no memory");
  else
    rc = 0;
  if (rc == 0)
    warn_token(api);
  return rc;
}

/* ---- repeated 401s ---- */

/* An address gets FAILS_FREE 401s at once within FAILS_WINDOW_NS of its
 * last; each further one is answered DELAY_FIRST_NS later, doubling up
 * to auth_retry_delay_ms. A guess of the token then costs a connection slot (at
 * most max_connections_per_client of them) for that long. Every loopback
 * address counts as one (all of 127.0.0.0/8 is any local user's), an IPv6
 * address by its /64. FAILS_SLOTS addresses are kept; a new one takes the
 * place of the one whose last 401 is oldest. */
#define FAILS_SLOTS     256
#define FAILS_FREE      8
#define FAILS_WINDOW_NS (60 * (int64_t)1000000000)
#define DELAY_FIRST_NS  ((int64_t)125000000)

struct api_fails {
  int64_t max_ns;       /* auth_retry_delay_ms */
  pthread_mutex_t lock; /* guards slot */
  struct {
    unsigned char key[9]; /* family, then 8 bytes of address */
    int64_t last_ns;      /* CLOCK_MONOTONIC of its last 401; 0: free */
    unsigned n;           /* 401s since its window began */
  } slot[FAILS_SLOTS];
};

struct api_fails *api_fails_new(int max_ms)
{
  struct api_fails *f = calloc(1, sizeof(*f));

  if (f == NULL)
    return NULL;
  f->max_ns = (int64_t)max_ms * 1000000;
  pthread_mutex_init(&f->lock, NULL);
  return f;
}

void api_fails_free(struct api_fails *f)
{
  if (f == NULL)
    return;
  pthread_mutex_destroy(&f->lock);
  free(f);
}

static int64_t mono_ns(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The client's address as a key: loopback as one, v4 (mapped too) whole,
 * v6 by its /64. */
static void client_key(struct api_req *r, unsigned char key[9])
{
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  const struct sockaddr *sa = ci != NULL ? ci->client_addr : NULL;
  const unsigned char *a = NULL;

  memset(key, 0, 9);
  if (sa != NULL && sa->sa_family == AF_INET) {
    a = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
  } else if (sa != NULL && sa->sa_family == AF_INET6) {
    const struct in6_addr *v6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;

    if (IN6_IS_ADDR_V4MAPPED(v6))
      a = v6->s6_addr + 12;
    else if (!IN6_IS_ADDR_LOOPBACK(v6)) {
      key[0] = AF_INET6;
      memcpy(key + 1, v6->s6_addr, 8);
      return;
    }
  }
  if (a != NULL && a[0] != 127) {
    key[0] = AF_INET;
    memcpy(key + 1, a, 4);
  } /* else loopback (or unknown): key all zero */
}

/* Counts a 401 for the request's address; how long its answer waits. */
static int64_t fail_delay(struct api_req *r)
{
  struct api_fails *f = r->api->fails;
  unsigned char key[9];
  int64_t now = mono_ns(), delay = 0;
  size_t i, pick = 0;

  if (f == NULL || f->max_ns == 0)
    return 0;
  client_key(r, key);
  pthread_mutex_lock(&f->lock);
  for (i = 0; i < FAILS_SLOTS; i++) {
    if (f->slot[i].last_ns != 0 && memcmp(f->slot[i].key, key, 9) == 0)
      break;
    if (f->slot[i].last_ns < f->slot[pick].last_ns)
      pick = i;
  }
  if (i == FAILS_SLOTS) {
    i = pick;
    memcpy(f->slot[i].key, key, 9);
    f->slot[i].n = 0;
  } else if (now - f->slot[i].last_ns > FAILS_WINDOW_NS) {
    f->slot[i].n = 0;
  }
  f->slot[i].last_ns = now;
  if (++f->slot[i].n > FAILS_FREE) {
    unsigned over = f->slot[i].n - FAILS_FREE - 1;

    delay = over < 16 ? DELAY_FIRST_NS << over : f->max_ns;
    delay = delay < f->max_ns ? delay : f->max_ns;
  }
  pthread_mutex_unlock(&f->lock);
  return delay;
}

/* ---- the entry points ---- */

/* The refusal: replied when ret is given, else only judged. */
static bool refuse(struct api_req *r, enum MHD_Result *ret, unsigned status,
                   const char *code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static bool refuse(struct api_req *r, enum MHD_Result *ret, unsigned status,
                   const char *code, const char *field, const char *fmt, ...)
{
  char msg[512];
  va_list ap;

  if (ret == NULL)
    return false;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  *ret = api_reply_error(r, status, code, field, "%s", msg);
  return false;
}

/* A 401 that fail_delay() holds: the connection is suspended now and the
 * answer made when conns.c resumes it (MHD calls the handler again). */
static bool held(struct api_req *r, enum MHD_Result *ret)
{
  int64_t delay;

  if (ret == NULL || r->held)
    return false;
  delay = fail_delay(r);
  if (delay == 0 || !api_conn_hold(r->api, r->conn, delay))
    return false;
  r->held = true;
  *ret = MHD_YES;
  return true;
}

bool api_guard(struct api_req *r, enum MHD_Result *ret)
{
  const char *host = header(r, MHD_HTTP_HEADER_HOST);
  const char *origin = header(r, "Origin");

  /* HTTP/1.0 may omit Host (MHD refuses an HTTP/1.1 request without
   * one); every browser sends it. */
  if (host != NULL && !host_allowed(r, host))
    return refuse(r, ret, 403, "forbidden", "Host",
                  "Host \"%.300s\" does not name this server: use its "
                  "address, or add the name to allowed_hosts",
                  host);
  if (origin != NULL && !origin_allowed(r, origin, host))
    return refuse(r, ret, 403, "forbidden", "Origin",
                  "cross-origin requests are refused (Origin \"%.300s\")",
                  origin);
  if (cross_site(r))
    return refuse(r, ret, 403, "forbidden", "Sec-Fetch-Site",
                  "cross-site requests are refused");
  if (authorized(r))
    return true;
  if (held(r, ret))
    return false;
  return refuse(r, ret, 401, "unauthorized", NULL,
                "this request needs the header "
                "'Authorization: Bearer <auth_token>'");
}

bool api_guard_body(struct api_req *r, enum MHD_Result *ret)
{
  const char *type = header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
  size_t n = type != NULL ? strcspn(type, "; \t") : 0;

  if (strcmp(r->method, MHD_HTTP_METHOD_POST) != 0 ||
      (n == 16 && strncasecmp(type, "application/json", 16) == 0))
    return true;
  return refuse(r, ret, 415, "unsupported_media_type", "Content-Type",
                "a POST body must be sent as "
                "'Content-Type: application/json', not \"%.300s\"",
                type != NULL ? type : "(none)");
}

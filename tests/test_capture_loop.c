/*
 * daemon/proc.c and daemon/atom_http.c on a real libuv loop: children in
 * their own process group (a background grandchild dies with the group),
 * their output in the log file, the environment additions and the
 * capture's mark, the working folder, the deadline; the curl-multi client
 * against a canned HTTP server on a loopback port (ATOM's success and 500
 * answers, a JSON body, a connect probe) and against a closed port. Callbacks
 * are counted, asserted after uv_run, and every handle is closed.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "daemon/atom_http.h"
#include "daemon/proc.h"

static uv_loop_t loop;
static char dir[64];

/* ---- processes ---- */

struct exit_seen {
  int calls;
  int64_t status;
  int signal;
  bool timed_out;
};

static void on_exit_seen(struct cap_proc *p, int64_t status, int sig,
                         bool timed_out, void *ud)
{
  struct exit_seen *e = ud;

  (void)p;
  e->calls++;
  e->status = status;
  e->signal = sig;
  e->timed_out = timed_out;
}

static struct cap_proc *spawn(const char *script, const char *const *env,
                              int deadline_s, struct exit_seen *seen,
                              const char *log)
{
  const char *argv[] = { "/bin/sh", "-c", script, NULL };
  struct cap_proc_opts o = { .argv = argv,
                             .env_add = env,
                             .log_path = log,
                             .cwd = dir,
                             .mark = "/t/42",
                             .deadline_ms = (uint64_t)deadline_s * 1000,
                             .grace_s = 1,
                             .on_exit = on_exit_seen,
                             .ud = seen };
  struct cap_proc *p = NULL;
  struct tr_err err = { 0 };

  CHECK_INT(cap_proc_spawn(&loop, &o, &p, &err), 0);
  return p;
}

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "r");
  char *buf = calloc(1, 4096);

  CHECK(f != NULL && buf != NULL);
  CHECK(fread(buf, 1, 4095, f) < 4095);
  fclose(f);
  return buf;
}

/* stdout and stderr land in the log (appended), env additions override
 * traced's own variables, the exit status comes back. */
static void proc_log_env_status(void)
{
  const char *env[] = { "CAP_TEST_A=new", "CAP_TEST_B=two", NULL };
  struct exit_seen seen = { 0 };
  char log[128];
  char *text;

  snprintf(log, sizeof(log), "%s/one.log", dir);
  setenv("CAP_TEST_A", "old", 1);
  setenv(CAP_PROC_MARK, "7", 1); /* a mark of traced's own is replaced */
  cap_proc_close(spawn("echo out $CAP_TEST_A; echo err $CAP_TEST_B >&2;"
                       " exit 3",
                       env, 0, &seen, log));
  /* Closed while running: no callback, but the child is reaped. */
  CHECK_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
  CHECK_INT(seen.calls, 0);
  struct cap_proc *p = spawn("echo out $CAP_TEST_A; echo err $CAP_TEST_B >&2;"
                             " echo mark $TRACED_CAPTURE; echo in $PWD; exit 3",
                             env, 0, &seen, log);
  CHECK_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
  CHECK_INT(seen.calls, 1);
  CHECK_INT(seen.status, 3);
  CHECK_INT(seen.signal, 0);
  CHECK(!cap_proc_running(p));
  cap_proc_close(p);
  CHECK_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
  text = slurp(log);
  CHECK(strstr(text, "out new\nerr two\nmark /t/42\nin ") != NULL);
  CHECK(strstr(text, dir) != NULL);
  free(text);
  unsetenv(CAP_PROC_MARK);
}

/* A kill ends the whole group: the leader and what it left in the
 * background (as ATOM's launcher leaves the server). */
static void proc_group_kill(void)
{
  struct exit_seen seen = { 0 };
  char log[128];
  struct cap_proc *p;
  pid_t pgid;

  snprintf(log, sizeof(log), "%s/two.log", dir);
  p = spawn("trap '' TERM; sleep 30 & echo started; wait", NULL, 0, &seen, log);
  pgid = cap_proc_pid(p);
  CHECK(pgid > 0);
  CHECK_INT(getpgid(pgid), pgid);
  usleep(200 * 1000);
  cap_proc_kill(p);
  CHECK_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
  /* The leader ignored SIGTERM: the grace period's SIGKILL ended it. */
  CHECK_INT(seen.calls, 1);
  CHECK_INT(seen.signal, SIGKILL);
  /* The background sleep, orphaned, is reaped by init: give it 2 s. */
  for (int i = 0; i < 200 && cap_proc_group_alive(p); i++)
    usleep(10 * 1000);
  CHECK(!cap_proc_group_alive(p));
  CHECK(kill(-pgid, 0) != 0 && errno == ESRCH);
  cap_proc_close(p);
  CHECK_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
}

/* The deadline kills the group and says so. */
static void proc_deadline(void)
{
  struct exit_seen seen = { 0 };
  char log[128];
  struct cap_proc *p;

  snprintf(log, sizeof(log), "%s/three.log", dir);
  p = spawn("sleep 30", NULL, 1, &seen, log);
  CHECK_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
  CHECK_INT(seen.calls, 1);
  CHECK(seen.timed_out);
  CHECK_INT(seen.signal, SIGTERM);
  cap_proc_close(p);
  CHECK_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
}

/* ---- HTTP ---- */

/* A server that answers every connection with one canned response. */
struct canned {
  uv_tcp_t server;
  const char *response;
  int port;
  int accepted;
};

struct conn {
  uv_tcp_t tcp;
  uv_write_t wr;
  struct canned *c;
  char buf[4096];
  size_t len;
};

static void on_conn_closed(uv_handle_t *h)
{
  free(h->data);
}

static void on_written(uv_write_t *req, int status)
{
  struct conn *k = req->data;

  (void)status;
  uv_close((uv_handle_t *)&k->tcp, on_conn_closed);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
  struct conn *k = h->data;

  (void)hint;
  *buf = uv_buf_init(k->buf + k->len, (unsigned)(sizeof(k->buf) - k->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
  struct conn *k = s->data;
  uv_buf_t out;

  (void)buf;
  if (n < 0) {
    uv_close((uv_handle_t *)s, on_conn_closed);
    return;
  }
  k->len += (size_t)n;
  if (memmem(k->buf, k->len, "\r\n\r\n", 4) == NULL)
    return;
  uv_read_stop(s);
  out = uv_buf_init((char *)k->c->response, (unsigned)strlen(k->c->response));
  k->wr.data = k;
  uv_write(&k->wr, s, &out, 1, on_written);
}

static void on_connection(uv_stream_t *server, int status)
{
  struct canned *c = server->data;
  struct conn *k = calloc(1, sizeof(*k));

  CHECK(status == 0 && k != NULL);
  k->c = c;
  uv_tcp_init(&loop, &k->tcp);
  k->tcp.data = k;
  CHECK_INT(uv_accept(server, (uv_stream_t *)&k->tcp), 0);
  c->accepted++;
  uv_read_start((uv_stream_t *)&k->tcp, on_alloc, on_read);
}

static void canned_start(struct canned *c, const char *response)
{
  struct sockaddr_in addr;
  struct sockaddr_storage bound;
  int len = sizeof(bound);

  c->response = response;
  uv_ip4_addr("127.0.0.1", 0, &addr);
  uv_tcp_init(&loop, &c->server);
  c->server.data = c;
  CHECK_INT(uv_tcp_bind(&c->server, (struct sockaddr *)&addr, 0), 0);
  CHECK_INT(uv_listen((uv_stream_t *)&c->server, 8, on_connection), 0);
  uv_tcp_getsockname(&c->server, (struct sockaddr *)&bound, &len);
  c->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
}

struct answer {
  int calls;
  bool ok, refused;
  long status;
  char msg[512];
  json_t *doc;
  struct canned *stop; /* closed once the answer came */
};

static void on_answer(void *ud, const struct cap_http_answer *ans)
{
  struct answer *a = ud;

  a->calls++;
  a->ok = ans->ok;
  a->refused = ans->refused;
  a->status = ans->status;
  a->doc = json_incref(ans->doc);
  snprintf(a->msg, sizeof(a->msg), "%s", ans->msg);
  if (a->stop != NULL)
    uv_close((uv_handle_t *)&a->stop->server, NULL);
}

static void on_http_closed(void *ud)
{
  (*(int *)ud)++;
}

/* /start_profile answered 500 with a detail: not ok, the detail in msg;
 * answered 200 "success": ok; GET /v1/models 200: ok. */
static void http_profile_and_models(void)
{
  static const char fail[] =
      "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json"
      "\r\nContent-Length: 46\r\nConnection: close\r\n\r\n"
      "{\"detail\":\"Failed to start profiling: no dir\"}";
  static const char good[] =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
      "Content-Length: 50\r\nConnection: close\r\n\r\n"
      "{\"status\":\"success\",\"message\":\"Profiling started\"}";
  struct canned c500 = { 0 }, c200 = { 0 };
  struct answer a = { 0 }, b = { 0 }, m = { 0 }, p = { 0 };
  struct cap_http *h = NULL;
  int closed = 0;

  CHECK_INT(strlen(fail) - (strstr(fail, "\r\n\r\n") + 4 - fail), 46);
  CHECK_INT(strlen(good) - (strstr(good, "\r\n\r\n") + 4 - good), 50);
  CHECK_INT(cap_http_new(&loop, &h, NULL), 0);
  canned_start(&c500, fail);
  canned_start(&c200, good);
  a.stop = &c500;
  CHECK_INT(cap_atom_profile(h, "127.0.0.1", c500.port, "start", 5000,
                             on_answer, &a, NULL),
            0);
  CHECK_INT(cap_atom_profile(h, "127.0.0.1", c200.port, "stop", 5000, on_answer,
                             &b, NULL),
            0);
  CHECK_INT(cap_atom_get(h, "127.0.0.1", c200.port, "/v1/models", 5000,
                         on_answer, &m, NULL),
            0);
  CHECK_INT(
      cap_atom_probe(h, "127.0.0.1", c200.port, 5000, on_answer, &p, NULL), 0);
  m.stop = &c200;
  while (a.calls + b.calls + m.calls + p.calls < 4)
    uv_run(&loop, UV_RUN_ONCE);
  CHECK_INT(a.calls + b.calls + m.calls + p.calls, 4);
  CHECK(!a.ok);
  CHECK_INT(a.status, 500);
  CHECK_STR(a.msg, "POST /start_profile answered 500: Failed to start "
                   "profiling: no dir");
  CHECK(b.ok);
  CHECK_INT(b.status, 200);
  CHECK_STR(json_string_value(json_object_get(b.doc, "message")),
            "Profiling started");
  CHECK(m.ok);
  CHECK(p.ok && !p.refused);
  CHECK_INT(p.status, 0);
  CHECK_INT(c200.accepted, 3);
  json_decref(a.doc);
  json_decref(b.doc);
  json_decref(m.doc);
  cap_http_close(h, on_http_closed, &closed);
  CHECK_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
  CHECK_INT(closed, 1);
}

/* Nothing listening: not ok, curl's reason; a cancelled request never
 * calls back. */
static void http_refused_and_cancel(void)
{
  struct canned idle = { 0 };
  struct answer a = { 0 }, never = { 0 }, probe = { 0 };
  struct cap_http *h = NULL;
  struct cap_http_req *req = NULL;
  int port, closed = 0;

  canned_start(&idle, "");
  port = idle.port;
  uv_close((uv_handle_t *)&idle.server, NULL);
  CHECK_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
  CHECK_INT(cap_http_new(&loop, &h, NULL), 0);
  CHECK_INT(cap_atom_get(h, "127.0.0.1", port, "/v1/models", 5000, on_answer,
                         &a, NULL),
            0);
  CHECK_INT(cap_atom_get(h, "127.0.0.1", port, "/v1/models", 5000, on_answer,
                         &never, &req),
            0);
  cap_http_cancel(req);
  CHECK_INT(cap_atom_probe(h, "127.0.0.1", port, 5000, on_answer, &probe, NULL),
            0);
  while (a.calls == 0 || probe.calls == 0)
    uv_run(&loop, UV_RUN_ONCE);
  CHECK(!a.ok && a.refused);
  CHECK_INT(a.status, 0);
  CHECK(strstr(a.msg, "GET /v1/models failed") != NULL);
  CHECK(!probe.ok && probe.refused);
  cap_http_close(h, on_http_closed, &closed);
  CHECK_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
  CHECK_INT(closed, 1);
  CHECK_INT(never.calls, 0);
}

int main(void)
{
  char cmd[128];

  signal(SIGPIPE, SIG_IGN);
  snprintf(dir, sizeof(dir), "/tmp/test_capture_loop.XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  CHECK_INT(uv_loop_init(&loop), 0);
  RUN(proc_log_env_status);
  RUN(proc_group_kill);
  RUN(proc_deadline);
  RUN(http_profile_and_models);
  RUN(http_refused_and_cancel);
  CHECK_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
  CHECK_INT(uv_loop_close(&loop), 0);
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  return 0;
}

/*
 * Who holds GPU memory and whom ATOM's scripts would kill, asked before
 * each of them runs (docs/ATOM.md, "Someone else's GPU job", "What ATOM's
 * scripts kill"). ATOM's scripts kill every process rocm-smi lists as
 * holding GPU memory once it does not free it (start_atom_server.sh:45-52
 * after 30 s, stop_atom_server.sh:74-80 after 60 s), and every process
 * whose command line matches their pkill patterns: run by a root daemon on
 * a shared node, that would kill a colleague's job. So traced asks first:
 *
 *   local holders   the processes with a descriptor on the KFD device
 *                   (kfd_path), and the PIDs rocm-smi lists that are
 *                   processes here (the scripts' `kill -9 PID` hits them):
 *                   each judged ATOM's or foreign (holders.c);
 *   outside         PIDs rocm-smi lists with no process here: inside a
 *                   container without --pid=host (ATOM CI's, .github/
 *                   actions/setup-gpu-container/action.yml:132) KFD reports
 *                   the host's PIDs. Named, never judged;
 *   pkill matches   the processes the start and stop scripts' patterns
 *                   match (atom/scripts.h), judged the same way.
 *
 * A foreign local holder or match fails the capture, naming it, unless
 * take_over_foreign_gpu = true. Memory held from outside does not, unless
 * it leaves a GPU of the launch less than it asks: with no local holder
 * left, a GPU whose free share is below --gpu-memory-utilization fails the
 * capture (ATOM counts other processes' memory inside that budget,
 * model_runner.py:1591-1611, so its KV cache would shrink or the load
 * fail). When the stop script exited 1 only because memory held from
 * outside stays in use (stop_atom_server.sh:82-86), the capture goes on
 * and says so. Without rocm-smi no GPU is asked (ATOM's scripts then stop
 * at their own rocm-smi line), the patterns still are.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/cap_int.h"

#define SMI_DEADLINE_S 60        /* rocm-smi, at most */
#define SMI_OUTPUT_MAX (1 << 20) /* bytes of its output read */
#define LISTED_MAX     1024      /* PIDs of rocm-smi's tables kept */
#define KFD_MAX        4096      /* local holders kept */
#define GPU_MAX        TR_ATOM_GPUS_MAX
#define GIB            (1024.0 * 1024.0 * 1024.0)

/* A PID of rocm-smi's tables: the KFD table (stop_atom_server.sh:77 reads
 * it) and the GPUs by PID (start_atom_server.sh:49). */
struct listed {
  pid_t pid;
  uint64_t vram; /* bytes ("VRAM USED") */
  uint64_t gpus; /* bit g: GPU g */
};

struct gpu_check {
  struct cap_work super;
  /* rocm-smi's answer */
  struct listed listed[LISTED_MAX];
  size_t nlisted;
  int pct[GPU_MAX]; /* VRAM% by GPU, -1: not shown */
  /* the judgement */
  json_t *rec; /* {holders, host_only, kill_matches, vram_pct} */
  int local;   /* local holders */
  char foreign[1024], killed[1024], outside[1024], here[768];
};

/* ---- rocm-smi's output ---- */

static struct listed *listed_of(struct gpu_check *g, long pid)
{
  for (size_t i = 0; i < g->nlisted; i++)
    if (g->listed[i].pid == (pid_t)pid)
      return &g->listed[i];
  if (g->nlisted >= LISTED_MAX || pid <= 0 || pid >= 1 << 22)
    return NULL;
  g->listed[g->nlisted] = (struct listed){ (pid_t)pid, 0, 0 };
  return &g->listed[g->nlisted++];
}

/* A row of the KFD table: "PID\tNAME\tGPUS\tVRAM\t...". */
static void kfd_row(struct gpu_check *g, const char *line)
{
  char *end;
  long pid = strtol(line, &end, 10);
  struct listed *l;
  const char *p = end;

  if (end == line || (*end != '\t' && *end != ' ') ||
      (l = listed_of(g, pid)) == NULL)
    return;
  for (int field = 1; field < 3 && p != NULL; field++)
    p = strchr(p + 1, '\t');
  if (p != NULL)
    l->vram = strtoull(p + 1, NULL, 10);
}

/* "PID n is using k DRM device(s):", its GPUs on the next line. */
static struct listed *pidgpus_row(struct gpu_check *g, const char *line)
{
  long pid, k;

  if (sscanf(line, "PID %ld is using %ld DRM device", &pid, &k) != 2)
    return NULL;
  return k > 0 ? listed_of(g, pid) : NULL;
}

static void gpu_list(struct listed *l, const char *line)
{
  for (const char *p = line; *p != '\0';) {
    char *end;
    long gpu = strtol(p, &end, 10);

    if (end == p)
      break;
    if (gpu >= 0 && gpu < 64)
      l->gpus |= 1ull << gpu;
    p = end;
  }
}

static void parse(struct gpu_check *g, char *text)
{
  char *save = NULL;
  bool table = false;
  struct listed *gpus_of = NULL;
  int gpu, pct;

  for (char *line = strtok_r(text, "\n", &save); line != NULL;
       line = strtok_r(NULL, "\n", &save)) {
    if (gpus_of != NULL)
      gpu_list(gpus_of, line);
    gpus_of = pidgpus_row(g, line);
    if (line[0] == '=')
      table = false;
    else if (strncmp(line, "PID\t", 4) == 0 || strncmp(line, "PID ", 4) == 0)
      table = table || gpus_of == NULL;
    else if (table)
      kfd_row(g, line);
    if (sscanf(line, "GPU[%d] : GPU Memory Allocated (VRAM%%): %d", &gpu,
               &pct) == 2 &&
        gpu >= 0 && gpu < GPU_MAX)
      g->pct[gpu] = pct;
  }
}

/* This run's output: the bytes of logs/<id>/gpu.log from where it ended
 * before the run (the capture's checks append to it). */
static char *run_output(struct cap_job *job)
{
  char path[4096], *text;
  FILE *f = fopen(cap_log_path(job, "gpu", path, sizeof(path)), "re");
  size_t n = 0;

  if (f == NULL)
    return NULL;
  if (fseeko(f, (off_t)job->gpu.from, SEEK_SET) == 0 &&
      (text = malloc(SMI_OUTPUT_MAX + 1)) != NULL) {
    n = fread(text, 1, SMI_OUTPUT_MAX, f);
    text[n] = '\0';
  } else {
    text = NULL;
  }
  fclose(f);
  return text;
}

/* ---- the judgement (pool) ---- */

static void say(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(char *buf, size_t size, const char *fmt, ...)
{
  size_t used = strlen(buf);
  va_list ap;

  if (used + 3 >= size)
    return;
  if (used > 0) {
    memcpy(buf + used, ", ", 3);
    used += 2;
  }
  va_start(ap, fmt);
  vsnprintf(buf + used, size - used, fmt, ap);
  va_end(ap);
}

/* One local holder: judged, recorded, described. */
static void judge(struct gpu_check *g, pid_t pid, bool kfd, bool listed)
{
  char *cmd = cap_proc_command(pid);
  const char *why = cmd != NULL ? cap_proc_atom_why(pid, cmd) : NULL;

  g->local++;
  json_array_append_new(json_object_get(g->rec, "holders"),
                        json_pack("{s:i,s:s?,s:b,s:s,s:b,s:b}", "pid", (int)pid,
                                  "command", cmd, "atom", why != NULL, "why",
                                  why ? why : "not ATOM's", "kfd", kfd,
                                  "listed", listed));
  say(g->here, sizeof(g->here), "PID %d (%.80s)", (int)pid, cmd ? cmd : "gone");
  if (why == NULL)
    say(g->foreign, sizeof(g->foreign), "PID %d (%.120s)", (int)pid,
        cmd ? cmd : "gone");
  free(cmd);
}

static bool in(const pid_t *pids, size_t n, pid_t pid)
{
  for (size_t i = 0; i < n; i++)
    if (pids[i] == pid)
      return true;
  return false;
}

static json_t *gpus_json(uint64_t bits)
{
  json_t *a = json_array();

  for (int i = 0; i < 64; i++)
    if (bits & (1ull << i))
      json_array_append_new(a, json_integer(i));
  return a;
}

/* "GPU 3", "GPUs 0+1", "no GPU" for the GPUs of bits, into buf. */
static const char *gpus_text(uint64_t bits, char *buf, size_t size)
{
  size_t used = (size_t)snprintf(buf, size, "%s",
                                 bits == 0                  ? "no GPU"
                                 : (bits & (bits - 1)) != 0 ? "GPUs "
                                                            : "GPU ");

  for (int i = 0; i < 64 && used + 4 < size; i++)
    if (bits & (1ull << i))
      used += (size_t)snprintf(buf + used, size - used, "%s%d",
                               (bits & ((1ull << i) - 1)) ? "+" : "", i);
  return buf;
}

/* The holders: local ones by their descriptor on the KFD device, then the
 * PIDs rocm-smi listed, here or not. */
static void judge_holders(struct gpu_check *g, const char *kfd_path)
{
  pid_t *kfd = malloc(KFD_MAX * sizeof(*kfd));
  size_t nkfd = kfd != NULL ? cap_kfd_holders(kfd_path, kfd, KFD_MAX) : 0;
  char gpus[64];

  for (size_t i = 0; i < nkfd; i++) {
    struct listed *l = NULL;

    for (size_t k = 0; k < g->nlisted && l == NULL; k++)
      l = g->listed[k].pid == kfd[i] ? &g->listed[k] : NULL;
    judge(g, kfd[i], true, l != NULL);
  }
  for (size_t k = 0; k < g->nlisted; k++) {
    const struct listed *l = &g->listed[k];

    if (kfd != NULL && in(kfd, nkfd, l->pid))
      continue;
    if (cap_proc_exists(l->pid)) {
      judge(g, l->pid, false, true);
      continue;
    }
    json_array_append_new(json_object_get(g->rec, "host_only"),
                          json_pack("{s:i,s:f,s:o}", "host_pid", (int)l->pid,
                                    "gib", (double)l->vram / GIB, "gpus",
                                    gpus_json(l->gpus)));
    say(g->outside, sizeof(g->outside), "host PID %d, %.1f GiB on %s",
        (int)l->pid, (double)l->vram / GIB, gpus_text(l->gpus, gpus, 64));
  }
  free(kfd);
}

static void run_judge(struct cap_work *w)
{
  struct gpu_check *g = (struct gpu_check *)w;
  struct cap_job *job = w->job;
  const struct cfg *c = w->r->cfg;
  struct tr_kill_patterns pats[2] = { 0 };
  const struct tr_kill_patterns *p[2] = { &pats[0], &pats[1] };
  const char *names[2] = { c->stop_script, c->start_script };
  char *text = job->gpu.asked ? run_output(job) : NULL;
  json_t *vram = json_array();

  for (int i = 0; i < GPU_MAX; i++)
    g->pct[i] = -1;
  if (text != NULL)
    parse(g, text);
  free(text);
  g->rec = json_pack("{s:[],s:[],s:[],s:s}", "holders", "host_only",
                     "kill_matches", "kfd_path", c->kfd_path);
  judge_holders(g, c->kfd_path);
  for (int i = 0; i < 2; i++)
    if (tr_kill_patterns_read(names[i], &pats[i], NULL) != 0)
      p[i] = NULL;
  for (int i = 0; i < 2; i++)
    names[i] = strrchr(names[i], '/') ? strrchr(names[i], '/') + 1 : names[i];
  cap_kill_matches(p, names, json_object_get(g->rec, "kill_matches"), g->killed,
                   sizeof(g->killed));
  tr_kill_patterns_free(&pats[0]);
  tr_kill_patterns_free(&pats[1]);
  for (int i = 0; i < GPU_MAX; i++)
    if (g->pct[i] >= 0)
      json_array_append_new(vram,
                            json_pack("{s:i,s:i}", "gpu", i, "pct", g->pct[i]));
  json_object_set_new(g->rec, "vram_pct", vram);
}

/* ---- the decision (loop) ---- */

/* With no local holder, all memory in use is held from outside: a GPU of
 * the launch whose free share is below what it asks. Returns true and
 * fails the job then. */
static bool short_of_memory(struct cap_job *job, struct gpu_check *g)
{
  const struct cap_plan *p = job->plan;
  int need = (int)(p->gpu_util * 100 + 0.5);

  for (int i = 0; g->local == 0 && i < p->ngpus; i++) {
    int gpu = p->gpus[i], used = gpu < GPU_MAX ? g->pct[gpu] : -1;

    if (used < 0 || 100 - used >= need)
      continue;
    cap_fail(job, END_FAILED, "gpu",
             "GPU memory held from outside this container leaves too little "
             "for the server: GPU %d has %d %% in use, %d %% free, and the "
             "launch asks %d %% of it (--gpu-memory-utilization %.2f; ATOM "
             "counts other processes' memory inside that budget, "
             "model_runner.py:1591-1611); held from outside this "
             "container: %s",
             gpu, used, 100 - used, need, p->gpu_util,
             g->outside[0] ? g->outside : "no PID rocm-smi lists");
    return true;
  }
  return false;
}

static bool memory_in_use(const struct gpu_check *g)
{
  for (int i = 0; i < GPU_MAX; i++)
    if (g->pct[i] > 0)
      return true;
  return false;
}

/* The stop script exited 1 (stop_atom_server.sh:82-86: GPU memory still
 * in use after its force kill): only memory held from outside explains
 * it. Returns true when the job failed. */
static bool stop_failed(struct cap_job *job, struct gpu_check *g)
{
  if (g->local > 0)
    cap_fail(job, END_FAILED, "stop",
             "the stop script exited 1: GPU memory is still held here: %s",
             g->here);
  else if (!memory_in_use(g))
    cap_fail(job, END_FAILED, "stop", "the stop script exited 1");
  return job->ending != END_NONE;
}

static void decide(struct cap_job *job, struct gpu_check *g)
{
  bool take = job->r->cfg->take_over_foreign_gpu;

  if (g->foreign[0] != '\0' && !take)
    cap_fail(job, END_FAILED, NULL,
             "GPU memory is held by processes that are not ATOM's: %s. "
             "ATOM's scripts would kill them, or in a container wait on "
             "the memory they hold (start_atom_server.sh, "
             "stop_atom_server.sh): end them, or set "
             "take_over_foreign_gpu = true",
             g->foreign);
  else if (g->killed[0] != '\0' && !take)
    cap_fail(job, END_FAILED, NULL,
             "ATOM's scripts would kill processes that are not ATOM's: %s. "
             "End them, or set take_over_foreign_gpu = true",
             g->killed);
  else if (job->gpu.stop_failed && stop_failed(job, g))
    ;
  else if (!short_of_memory(job, g))
    job->gpu.then(job);
}

static void on_judged(struct cap_work *w)
{
  struct gpu_check *g = (struct gpu_check *)w;
  struct cap_job *job = w->job;
  bool take = job->r->cfg->take_over_foreign_gpu;

  if (job->ending == END_NONE) {
    json_object_set_new(g->rec, "taken_over",
                        json_boolean(take && (g->foreign[0] || g->killed[0])));
    if (job->gpu.stop_failed && g->local == 0 && memory_in_use(g))
      json_object_set_new(
          g->rec, "stop_exit",
          json_string("the stop script exited 1 only because GPU memory "
                      "held from outside this container stays in use "
                      "(stop_atom_server.sh:82-86): not this container's "
                      "to free; the capture goes on"));
    if (g->local == 0 && g->outside[0] != '\0') {
      char text[sizeof(g->outside) + 48];

      snprintf(text, sizeof(text), "held from outside this container: %s",
               g->outside);
      json_object_set_new(g->rec, "outside", json_string(text));
    }
    cap_job_merge(job, json_pack("{s:{s:O}}", "extra", job->gpu.which, g->rec));
    decide(job, g);
  }
  json_decref(g->rec);
  free(g);
}

static void judge_now(struct cap_job *job)
{
  cap_job_queue_new(job, sizeof(struct gpu_check), run_judge, on_judged);
}

static void on_smi_exit(struct cap_proc *p, int64_t status, int sig,
                        bool timed_out, void *ud)
{
  struct cap_job *job = ud;

  (void)status;
  (void)sig;
  (void)timed_out;
  cap_proc_close(p);
  job->child = NULL;
  /* Whatever it exited with, its tables are what ATOM's scripts would
   * read (they ignore its status too). */
  if (job->ending == END_NONE)
    judge_now(job);
}

/* True when an executable rocm-smi is on traced's PATH, which the scripts
 * inherit. */
bool cap_rocm_smi_on_path(void)
{
  const char *path = getenv("PATH");
  char *copy = strdup(path ? path : ""), *save = NULL, file[4096];
  bool found = false;

  for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d && !found;
       d = strtok_r(NULL, ":", &save)) {
    snprintf(file, sizeof(file), "%s/rocm-smi", d);
    found = access(file, X_OK) == 0;
  }
  free(copy);
  return found;
}

void cap_gpu_check(struct cap_job *job, const char *which,
                   void (*then)(struct cap_job *))
{
  static char *const argv[] = { "rocm-smi", "--showpids", "--showpidgpus",
                                "--showmemuse", NULL };
  char path[4096];
  struct stat st;

  job->gpu.then = then;
  snprintf(job->gpu.which, sizeof(job->gpu.which), "%s", which);
  job->gpu.asked = cap_rocm_smi_on_path();
  if (!job->gpu.asked) {
    judge_now(job);
    return;
  }
  /* One stat of the capture's own log, on the loop: where this run's
   * output will start. */
  job->gpu.from = stat(cap_log_path(job, "gpu", path, sizeof(path)), &st) == 0
                      ? (uint64_t)st.st_size
                      : 0;
  cap_spawn(job, (char **)argv, NULL, "gpu", SMI_DEADLINE_S, on_smi_exit,
            &job->child);
}

int cap_gpu_check_budget_s(void)
{
  return SMI_DEADLINE_S + 10;
}

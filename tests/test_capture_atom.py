"""Captures against ATOM as it ships (docs/ATOM.md), on the strict simulator:

- the server answers nothing while rank 0 exports inside /stop_profile
  (20 s with profile_control bench, 65 s with daemon: longer than any
  liveness window traced ever had), and the capture still ends done with
  every rank indexed (each case is its own ctest entry: they run side by
  side);
- a failed export on rank 1 fails the capture in exporting, naming rank 1,
  within 15 s of ATOM's log line;
- presets from a copy of ATOM's own models.json (tests/data/atom) launch
  with the preset's TP and arguments ATOM's parser accepts intact (a JSON
  value with blanks and globs, --trust-remote-code, a variant), and end
  done; every model and variant of that copy launches to a ready server
  whose argv holds the preset's flags and values;
- a profiler that never started fails in benchmark; a missing rocm-smi
  says so; the ranks that export come from /server_info.
"""
import calendar
import json
import os
import re
import shlex
import sys
import time

from test_capture_lib import (SMALL, Rig, check, check_eq,
                              check_rank_figures, model_dir, rank_gz,
                              run_cases)
from tracedtest import SRC_DIR

MODELS_JSON = os.path.join(SRC_DIR, "tests", "data", "atom", "models.json")
# A preset without config.tp runs at ATOM's own default (arg_utils.py:112),
# as ATOM CI runs it (.github/scripts/catalog.py:91).
ATOM_DEFAULT_TP = 1


def expect_done(rig, cid, ranks, timeout=240):
    cap = rig.wait(cid, timeout=timeout)
    check_eq((cap["status"], cap["phase"], cap["error"]), ("done", "done",
                                                           None),
             "capture %d" % cid)
    check_eq(sorted(r["label"] for r in cap["ranks"]),
             sorted("rank_%d" % r for r in range(ranks)), "ranks")
    for r in range(ranks):
        check_rank_figures(rig.d, cid, r, rank_gz(cap, "rank_%d" % r))
    return cap


def server_argv(rig, n=-1):
    """The argv the (simulated) server process got, as ATOM's would."""
    return rig.calls("atom_sim_server")[n]["argv"]


def blocking_export(profile_control, seconds):
    """Rank 0's export holds /stop_profile, and with it the whole server,
    for `seconds` of ATOM's time: no answer to /v1/models or /health
    meanwhile. The clocks run ten times faster: what is measured is ATOM's
    seconds against traced's (both scaled alike)."""
    rig = Rig(conf={"profile_control": profile_control,
                    "export_max_polls": "200", "bench_timeout_s": "300"},
              sim_env={"ATOM_PROFILER_TIMEOUT": str(seconds + 60)},
              scale=10)
    with rig:
        cid = rig.capture(tp=2, conc=2,
                          env={"ATOM_SIM_FAULTS":
                               "slow_export_rank=0:%d" % seconds})
        cap = expect_done(rig, cid, 2, timeout=seconds + 180)
        if profile_control == "daemon":
            check_daemon_runs(rig, cap)
        else:
            check_eq(cap["bench"]["num_prompts"], 2, "bench prompts")


def check_daemon_runs(rig, cap):
    """A warm-up run of CONC*2 requests, /start_profile, the profiled run of
    CONC*PROMPT_MULTIPLIER prompts without warm-ups, /stop_profile."""
    clients = rig.calls("benchmark_serving")
    check_eq(len(clients), 2, "bench runs")
    warm, run = clients[0]["argv"], clients[1]["argv"]
    check("--profile" not in warm and "--profile" not in run, "--profile")
    check_eq(warm[-4:], ["--num-warmups", "0", "--seed", "1"],
             "warm-up run's warm-ups, and its own seed")
    check_eq(run[-2:], ["--num-warmups", "0"], "profiled run's warm-ups")
    check("--num-prompts=4" in warm, warm)   # CONC*2 = 4
    check("--num-prompts=2" in run, run)     # CONC*1 = 2
    with open(os.path.join(cap["log_dir"], "server.log")) as f:
        log = f.read()
    check(log.find("POST /start_profile") < log.find("POST /stop_profile"),
          "profile calls in order")
    check_eq(cap["bench"]["num_prompts"], 2, "result of the profiled run")


def blocking_export_bench():
    blocking_export("bench", 20)


def blocking_export_daemon():
    blocking_export("daemon", 65)


def seconds_after_line(line, stamp):
    """How long after the ATOM logger line (its default format stamps the
    local time of day: "[atom 09:38:58] ...", atom/utils/__init__.py) the
    RFC 3339 UTC stamp is, in whole seconds."""
    m = re.search(r"\[\w+ (\d\d):(\d\d):(\d\d)\]", line)
    check(m is not None, "no time in %r" % line)
    at = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
    t = time.localtime(calendar.timegm(time.strptime(stamp[:19],
                                                     "%Y-%m-%dT%H:%M:%S")))
    return (t.tm_hour * 3600 + t.tm_min * 60 + t.tm_sec - at) % 86400


def export_failure_and_presets():
    """A failed export on rank 1 while rank 0 still exports; then presets
    of models.json: GLM-5.2-FP8 (its JSON --online_quant_config), Kimi
    (trust_remote_code) and GLM's MTP3 variant, each with the preset's TP
    (4) and argv that ATOM's parser takes intact."""
    rig = Rig(conf={"models_json": MODELS_JSON, "export_poll_s": "1"})
    with rig:
        cid = rig.capture(tp=2, env={"ATOM_SIM_FAULTS":
                                     "export_fail=1;slow_export_rank=0:10"})
        cap = rig.wait(cid, timeout=120)
        check_eq((cap["status"], cap["phase"]), ("failed", "exporting"),
                 "export failure: %s" % cap["error"])
        msg = cap["error"]["message"]
        check("rank 1" in msg and "failed to export" in msg, msg)
        with open(os.path.join(cap["log_dir"], "server.log")) as f:
            line = [x for x in f if "Rank 1: failed to export" in x][0]
        took = seconds_after_line(line, cap["finished_at"])
        check(took < 15, "failed %d s after the log line" % took)
        presets(rig, rig.models)


def option(argv, flag):
    """The value of the last --flag (either spelling) in argv."""
    names = (flag, flag.replace("_", "-"), flag.replace("-", "_"))
    value = None
    for i, w in enumerate(argv):
        if w in names and i + 1 < len(argv):
            value = argv[i + 1]
        for n in names:
            if w.startswith(n + "="):
                value = w[len(n) + 1:]
    return value


def preset_config(display):
    with open(MODELS_JSON) as f:
        doc = json.load(f)
    return [m for m in doc["models"] if m["display"] == display][0]


def quoted_json(extra_args, flag):
    """The JSON value of flag in shell text (single-quoted in models.json)."""
    m = re.search(re.escape(flag) + r" '([^']*)'", extra_args)
    return json.loads(m.group(1))


def presets(rig, root):
    glm = rig.capture(model=model_dir(root, "GLM-5.2-FP8", template="x"),
                      tp=None)
    kimi = rig.capture(model=model_dir(root, "Kimi-K2.7-Code-MXFP4"), tp=None)
    mtp = rig.capture(model=os.path.join(root, "GLM-5.2-FP8"), tp=None,
                      variant="MTP3")
    code, bad = rig.d.post("/captures", {"model": os.path.join(
        root, "GLM-5.2-FP8"), "variant": "EAGLE9"})
    check_eq((code, bad["error"]["field"]), (400, "variant"), "variant")
    check("\"MTP3\"" in bad["error"]["message"], bad["error"])
    for cid in (glm, kimi, mtp):
        cap = expect_done(rig, cid, 4)
        check_eq((cap["launch"]["tp"], cap["launch"]["tp_source"]),
                 (4, "preset"), "tp of %d" % cid)
    g_argv, k_argv, m_argv = (server_argv(rig, i) for i in (-3, -2, -1))
    for argv in (g_argv, k_argv, m_argv):
        check_eq(option(argv, "-tp"), "4", "server's -tp")
    want = quoted_json(preset_config("GLM-5.2-FP8")["config"]["extra_args"],
                       "--online_quant_config")
    check_eq(json.loads(option(g_argv, "--online_quant_config")), want,
             "GLM's quant config as the server parsed it")
    check("--trust-remote-code" in k_argv, k_argv)
    want = quoted_json(preset_config("Kimi-K2.7-Code-MXFP4")["config"]
                       ["extra_args"], "--online_quant_config")
    check_eq(json.loads(option(k_argv, "--online_quant_config")), want,
             "Kimi's quant config")
    check_eq((option(m_argv, "--method"),
              option(m_argv, "--num-speculative-tokens")), ("mtp", "3"),
             "MTP3 flags")
    bench = rig.calls("benchmark_serving")[-1]["argv"]
    check("--use-chat-template" in bench, bench)


def flag_values(words):
    """(flag, value or None) of shell words as ATOM's parser reads them: a
    flag takes the next word unless that is a flag too."""
    out = []
    for i, w in enumerate(words):
        if w.startswith("-") and not re.match(r"-\d", w):
            nxt = words[i + 1] if i + 1 < len(words) else None
            takes = nxt is not None and not nxt.startswith("--")
            out.append((w, nxt if takes else None))
    return out


def preset_words(entry, variant):
    return shlex.split(entry.get("config", {}).get("extra_args", "")) + \
        shlex.split(variant.get("extra_args", ""))


def check_preset_argv(argv, entry, variant, what, root):
    """The server's argv holds the preset's TP and every flag of its
    config's and variant's extra_args with its value (JSON values compared
    parsed: traced passes them compact), a --draft-model hub id as the
    folder beside the model, and DeepSeek-V4's --level 0 (but where a
    piecewise CUDA-graph mode needs ATOM's level 3)."""
    tp = entry.get("config", {}).get("tp", ATOM_DEFAULT_TP)
    check_eq(option(argv, "-tp"), str(tp), what + ": -tp")
    words = preset_words(entry, variant)
    for flag, value in flag_values(words):
        if value is None:
            check(flag in argv, "%s: %s not in %s" % (what, flag, argv))
            continue
        got = option(argv, flag)
        if flag == "--draft-model":
            value = os.path.join(root, os.path.basename(value))
        if value.startswith(("{", "[")):
            check_eq(json.loads(got), json.loads(value), what + ": " + flag)
        else:
            check_eq(got, value, what + ": " + flag)
    if entry.get("config", {}).get("trust_remote_code"):
        check("--trust-remote-code" in argv, what + ": --trust-remote-code")
    v4 = os.path.basename(entry["path"]).startswith("DeepSeek-V4")
    piecewise = "PIECEWISE" in (dict(flag_values(words)).get(
        "--cudagraph-mode") or "")
    check_eq(option(argv, "--level"), "0" if v4 and not piecewise else None,
             what + ": --level")


def every_preset():
    """Every model and variant of ATOM's own models.json (tests/data/atom)
    launches with no tp in the request: the strict simulator's parser (ATOM's
    option set) takes its argv and the server becomes ready; then the
    capture is cancelled."""
    with open(MODELS_JSON) as f:
        doc = json.load(f)
    rig = Rig(conf={"models_json": MODELS_JSON})
    root = rig.models
    tried = 0
    with rig:
        for entry in doc["models"]:
            for variant in entry.get("variants", [{"label": ""}]):
                draft = dict(flag_values(preset_words(entry, variant)))
                for p in (entry["path"], variant.get("path"),
                          draft.get("--draft-model")):
                    if p:
                        model_dir(root, os.path.basename(p),
                                  template="{{ messages }}")
                what = "%s %r" % (entry["display"], variant["label"])
                extra = {"variant": variant["label"]} \
                    if variant["label"] else {}
                cid = rig.capture(model=os.path.join(
                    root, os.path.basename(entry["path"])), tp=None, **extra)
                rig.wait_phase(cid, "benchmark", timeout=90)
                check_preset_argv(server_argv(rig), entry, variant, what,
                                  root)
                code, _ = rig.d.delete("/captures/%d" % cid)
                check_eq(code, 202, what + ": DELETE")
                check_eq(rig.wait(cid)["status"], "cancelled", what)
                tried += 1
    check_eq(tried, 25, "models and variants tried")


def launch_faults():
    """A profiler that never started (no rank logs it; ATOM's bench says
    nothing and exits 0) and one whose start killed its worker; no rocm-smi
    on PATH; the ranks of -pcp 2 counted by /server_info."""
    rig = Rig()
    with rig:
        cid = rig.capture(tp=2, env={"ATOM_SIM_FAULTS": "missing_rank=0,1"})
        cap = rig.wait(cid)
        check_eq((cap["status"], cap["phase"]), ("failed", "benchmark"),
                 "profiler: %s" % cap["error"])
        check("profiler never started" in cap["error"]["message"],
              cap["error"])
        cid = rig.capture(env={"ATOM_SIM_FAULTS": "start_profile_500"})
        cap = rig.wait(cid)
        check_eq((cap["status"], cap["phase"]), ("failed", "benchmark"),
                 "profiler start: %s" % cap["error"])
        check("proc died" in cap["error"]["message"], cap["error"])
        cid = rig.capture(tp=2, server_args=["-pcp", "2"])
        cap = expect_done(rig, cid, 4)
        check_eq(cap["export_ranks"]["source"], "server_info", "source")
        check_eq(cap["export_ranks"]["expected"], 4, "expected ranks")
        # DP attention: one engine of TP 1 per GPU, folders dp<d>_tp0.
        cid = rig.capture(tp=2, server_args=["--enable-dp-attention"])
        cap = rig.wait(cid)
        check_eq((cap["status"], cap["export_ranks"]["expected"]),
                 ("done", 2), "DP attention: %s" % cap["error"])
        check_eq(sorted(r["label"] for r in cap["ranks"]),
                 ["dp0_tp0", "dp1_tp0"], "DP attention folders")
        check_eq(cap["export_ranks"]["server_info"]["dp_size"], 2, "dp_size")
        cid = rig.capture(env={"ATOM_SIM_FAULTS": "no_rocm_smi"})
        cap = rig.wait(cid)
        check_eq((cap["status"], cap["phase"]), ("failed", "launching"),
                 "rocm-smi: %s" % cap["error"])
        # The script's own last lines: it stopped at its first rocm-smi.
        check("before starting the server; its last lines: Pre-flight: "
              "cleaning up" in cap["error"]["message"], cap["error"])


if __name__ == "__main__":
    cases = {c.__name__: c for c in (blocking_export_bench,
                                     blocking_export_daemon,
                                     export_failure_and_presets,
                                     every_preset, launch_faults)}
    run_cases([cases[n] for n in sys.argv[1:]] or list(cases.values()))

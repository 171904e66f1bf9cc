"""What traced settles before ATOM runs, and what it must not mistake, on
the strict simulator (docs/ATOM.md, "What traced foresees"):

  v4_level       a DeepSeek-V4 checkpoint launches with --level 0, said in
                 the plan with its reason; with the request's --level 3
                 the server dies of the cluster_dims bug and the capture's
                 error names the fix;
  refused        a bench backend that cannot start the profiler, and a
                 preset's --draft-model hub id without its folder beside
                 the model, are 400s before anything runs; with the folder
                 the draft launches from it; a hub id passed on (hub ids
                 allowed) kills the offline server, the error quoting it;
  dead_exporter  a rank whose exporter went silent after writing its .json
                 is not progress: the export fails after export_max_polls
                 naming the rank and its .json, with /stop_profile
                 unanswered counting only within ATOM_PROFILER_TIMEOUT;
  python         `traced --check` and the start-up log say which `python`
                 ATOM's scripts run and whether it imports atom.

Usage: test_capture_foresee.py [CASE...]."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from test_capture_lib import Rig, check, check_eq, model_dir, run_cases
from tracedtest import (SIM_VENV_BIN, SRC_DIR, TRACED_BIN, sim_path,
                        wait_for)

MODELS_JSON = os.path.join(SRC_DIR, "tests", "data", "atom", "models.json")
V4_CONFIG = json.dumps({"architectures": ["DeepseekV4ForCausalLM"],
                        "model_type": "deepseek_v4"})


def option(argv, flag):
    values = [argv[i + 1] for i, w in enumerate(argv[:-1]) if w == flag]
    return values[-1] if values else None


def expect(cap, status, phase, *words):
    check_eq((cap["status"], cap["phase"]), (status, phase),
             "capture %d: %s" % (cap["id"], cap["error"]))
    for w in words:
        check(w in cap["error"]["message"],
              "%r not in %r" % (w, cap["error"]["message"]))


def v4_level():
    rig = Rig()
    model = model_dir(rig.models, "My-V4-Finetune",
                      **{"config.json": V4_CONFIG})
    with rig:
        cap = rig.wait(rig.capture(model=model, tp=2))
        check_eq((cap["status"], cap["error"]), ("done", None), "V4 capture")
        argv = rig.calls("atom_sim_server")[-1]["argv"]
        check_eq(option(argv, "--level"), "0", "the server's --level")
        check_eq(cap["level"]["value"], 0, "extra.level")
        check("config.json: DeepseekV4ForCausalLM" in cap["level"]["why"],
              cap["level"])
        check("--level" in cap["commands"]["start"], cap["commands"])
        cap = rig.wait(rig.capture(model=model, tp=2,
                                   server_args=["--level", "3"]))
        expect(cap, "failed", "launching", "cluster_dims", "--level 0")
        check_eq(cap["level"]["added"], False, "the request's level kept")
        # A model that is not V4 keeps ATOM's default.
        cap = rig.wait(rig.capture(tp=1))
        check_eq((cap["status"], cap["level"]["value"]), ("done", 3),
                 "plain model")
        check_eq(option(rig.calls("atom_sim_server")[-1]["argv"],
                        "--level"), None, "no --level passed")


def refused():
    rig = Rig(conf={"models_json": MODELS_JSON})
    kimi = model_dir(rig.models, "Kimi-K3", template="{{ m }}")
    with rig:
        code, body = rig.d.post("/captures", {
            "model": rig.model, "tp": 1, "conc": 2, "isl": 8, "osl": 4,
            "bench_args": ["--backend", "openai-chat"]})
        check_eq((code, body["error"]["field"]), (400, "bench_args"),
                 "openai-chat: %s" % body)
        check("backend_request_func.py:338" in body["error"]["message"],
              body)
        code, body = rig.d.post("/captures", {
            "model": kimi, "tp": 2, "conc": 2, "isl": 8, "osl": 4,
            "variant": "DSpark"})
        folder = os.path.join(rig.models, "Kimi-K3-DSpark")
        check_eq((code, body["error"]["field"]), (400, "variant"),
                 "draft: %s" % body)
        check("no folder %s" % folder in body["error"]["message"], body)
        check_eq(rig.calls("start_atom_server.sh"), [], "nothing launched")
        model_dir(rig.models, "Kimi-K3-DSpark")
        cap = rig.wait(rig.capture(model=kimi, tp=2, variant="DSpark"))
        check_eq((cap["status"], cap["error"]), ("done", None), "DSpark")
        argv = rig.calls("atom_sim_server")[-1]["argv"]
        check_eq(option(argv, "--draft-model"), folder, "--draft-model")
        check_eq(cap["preset"]["draft_model"]["preset"],
                 "Inferact/Kimi-K3-DSpark", "extra.preset.draft_model")
    # Hub ids allowed: passed on, and the offline server dies of it.
    rig = Rig(conf={"models_json": MODELS_JSON, "allow_hub_ids": "true"})
    minimax = model_dir(rig.models, "MiniMax-M3-MXFP8", template="{{ m }}")
    with rig:
        cap = rig.wait(rig.capture(model=minimax, tp=2, variant="EAGLE3"))
        expect(cap, "failed", "launching", "OSError: We couldn't connect to "
               "'https://huggingface.co'", "Inferact/MiniMax-M3-EAGLE3")


def dead_exporter():
    # Rank 1 goes silent after its .json; rank 0 exports: /stop_profile
    # answers, the bench exits, and only the silence is left.
    rig = Rig(conf={"export_max_polls": "4", "export_max_s": "600"})
    with rig:
        t0 = time.time()
        cap = rig.wait(rig.capture(tp=2, env={
            "ATOM_SIM_FAULTS": "export_hang=1"}), timeout=120)
        took = time.time() - t0
        expect(cap, "failed", "exporting", "no progress in 4 polls",
               "rank_1: its exporter left ")
        check(re.search(r"rank_1/\S+\.pt\.trace\.json \(\d+ bytes\)",
                        cap["error"]["message"]), cap["error"]["message"])
        check_eq(cap["progress"]["export_quiet_polls"], 4, "quiet polls")
        check(took < 60, "took %.0f s" % took)
        # Rank 0 silent: /stop_profile waits for it, which counts as
        # progress for ATOM_PROFILER_TIMEOUT (6 s), and no longer.
        t0 = time.time()
        cap = rig.wait(rig.capture(tp=2, env={
            "ATOM_SIM_FAULTS": "export_hang=0",
            "ATOM_PROFILER_TIMEOUT": "6"}), timeout=120)
        expect(cap, "failed", "exporting", "no progress in 4 polls",
               "rank_0: its exporter left ")
        polls = cap["progress"]["export_polls"]
        check(polls >= 4 + 5, "%d polls: the unanswered stop did not "
              "count" % polls)


def python():
    env = dict(os.environ, PATH=sim_path())
    args = ["--atom-scripts", os.path.join(SRC_DIR, "sim", "scripts")]
    r = subprocess.run([TRACED_BIN, "--check"] + args, env=env, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60)
    check_eq(r.returncode, 0, r.stdout)
    check("ATOM's scripts run python = %s, which imports atom (%s)" % (
        os.path.join(SIM_VENV_BIN, "python"),
        os.path.join(SRC_DIR, "sim", "pkg", "atom", "__init__.py"))
        in r.stdout, r.stdout)
    check("it kills by name (pkill): -f 'atom.entrypoints'" in r.stdout,
          r.stdout)
    # A python without ATOM first on PATH, as under a unit that misses
    # /opt/venv/bin.
    other = tempfile.mkdtemp(prefix="no-venv-")
    os.symlink(sys.executable, os.path.join(other, "python"))
    env["PATH"] = other + os.pathsep + env["PATH"]
    r = subprocess.run([TRACED_BIN, "--check"] + args, env=env, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60)
    check_eq(r.returncode, 1, r.stdout)
    check("python = %s/python, which does NOT import atom: "
          "ModuleNotFoundError: No module named 'atom'" % other in r.stdout,
          r.stdout)
    os.unlink(os.path.join(other, "python"))
    os.rmdir(other)
    # The daemon's start-up log says it too.
    with Rig() as rig:
        wait_for(lambda: "ATOM's scripts run python" in rig.d.log_text(),
                 30, "the start-up log's python line")
        check("python = %s/python, which imports atom" % SIM_VENV_BIN in
              rig.d.log_text(), rig.d.log_text())


if __name__ == "__main__":
    cases = {c.__name__: c for c in (v4_level, refused, dead_exporter,
                                     python)}
    run_cases([cases[n] for n in sys.argv[1:]] or list(cases.values()))

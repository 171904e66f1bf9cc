"""Captures end to end: traced drives the ATOM simulator's real scripts and
server (sim/), and every figure it stores for a rank equals the independent
reference (tests/ref_index.py) over the .gz the simulator exported. Also:
the argv and environment each script received (the simulator's own record),
queue order, presets and chat template, profile_control=daemon, the bench
result's time window, and an import beside the captures."""
import json
import os
import shutil
import tempfile
import time

from test_capture_lib import (SMALL, Rig, check, check_eq,
                              check_rank_figures, model_dir, rank_gz,
                              run_cases)


def make_presets(root):
    """A models.json (ATOM CI's format) with a preset for Chat-Model and a
    variant."""
    presets = os.path.join(root, "models.json")
    with open(presets, "w") as f:
        json.dump({"models": [
            {"display": "Other", "path": "org/Other", "env_vars": "AITER_NO=1"},
            {"display": "Chat-Model", "path": "org/Chat-Model", "config": {
                "tp": 1, "kv_cache_dtype": "bf16", "extra_args": "--level 0"},
             "env_vars": "AITER_PRESET=7\nHSA_NO_SCRATCH_RECLAIM=1",
             "variants": [{"label": "", "suffix": ""},
                          {"label": "MTP3", "suffix": "-mtp3",
                           "extra_args": "--method mtp "
                                         "--num-speculative-tokens 3",
                           "bench_args": "--use-chat-template"}]}]}, f)
    return presets


def make_import(root):
    """A three-rank kineto folder laid out as ATOM does."""
    folder = os.path.join(root, "imported")
    for r, src in enumerate(SMALL[:3]):
        os.makedirs(os.path.join(folder, "rank_%d" % r))
        shutil.copy(src, os.path.join(folder, "rank_%d" % r,
                                      "m_ts_20261129_000000_00%d.pt.trace."
                                      "json.gz" % r))
    return folder


def check_calls(rig, caps, more):
    """What the scripts received, from the simulator's record."""
    starts = rig.calls("start_atom_server.sh")
    benches = rig.calls("run_benchmark.sh")
    clients = rig.calls("benchmark_serving")
    check_eq(len(starts), len(caps), "start script calls")
    check_eq(len(benches), len(caps), "bench script calls")
    check_eq(len(clients), len(caps), "bench clients")
    for cap, start, bench, client in zip(caps, starts, benches, clients):
        # The client sent CONC*1 prompts and drove the profiler.
        check("--num-prompts=%d" % cap["params"]["conc"] in client["argv"]
              and "--profile" in client["argv"], client["argv"])
        p = cap["params"]
        check_eq(start["argv"][:5], [p["model"], str(cap["launch"]["tp"]),
                                     str(rig.port),
                                     "--torch-profiler-dir",
                                     cap["trace_dir"]], "start argv")
        check_eq(cap["trace_dir"], os.path.join(
            rig.d.conf["trace_root"], str(cap["id"])), "trace_dir")
        check_eq(start["env"].get("ATOM_PROFILER_MORE"),
                 "1" if cap["id"] == more else "0", "ATOM_PROFILER_MORE")
        # PROMPT_MULTIPLIER 1 and PROFILE 1, positions 6 and 7.
        check_eq(bench["argv"][:7], [p["model"], str(rig.port), "8", "4",
                                     str(p["conc"]), "1", "1"], "bench argv")
        check("ATOM_PROFILER_MORE" not in bench["env"],
              "ATOM_PROFILER_MORE reached the bench client")
        check_eq(cap["commands"]["bench"][-len(bench["argv"]):],
                 bench["argv"], "extra.commands.bench")


def check_preset(rig, cap):
    start = rig.calls("start_atom_server.sh")[0]
    bench = rig.calls("run_benchmark.sh")[0]
    # The preset's TP (the request has none); the request's --level 3 wins
    # over the preset's --level 0; the variant's flags are added; its
    # kv_cache_dtype goes to the script's KV_CACHE_DTYPE. The request's
    # HSA_ value wins.
    check_eq(start["argv"][1], "1", "the preset's TP")
    check_eq(start["argv"][5:], ["--method", "mtp", "--num-speculative-tokens",
                                 "3", "--level", "3"], "server args")
    check_eq(start["env"].get("AITER_PRESET"), "7", "preset env")
    check_eq(start["env"].get("KV_CACHE_DTYPE"), "bf16", "preset dtype")
    check_eq(start["env"].get("HSA_NO_SCRATCH_RECLAIM"), "0", "request env")
    check_eq(cap["preset"], {"applied": True, "file": rig.conf["models_json"],
                             "match": "org/Chat-Model", "variant": "MTP3",
                             "model": cap["params"]["model"],
                             "args": ["--method", "mtp",
                                      "--num-speculative-tokens", "3"],
                             "env": {"AITER_PRESET": "7",
                                     "KV_CACHE_DTYPE": "bf16"},
                             "bench_args": ["--use-chat-template"]},
             "extra.preset")
    check(cap["use_chat_template"] is True, "use_chat_template")
    check_eq(bench["argv"][-1], "--use-chat-template", "bench chat flag")


def check_import(rig, iid, folder):
    imp = rig.wait(iid)
    check_eq((imp["status"], imp["phase"]), ("done", "done"), "import")
    sizes = [os.path.getsize(rank_gz({"trace_dir": folder}, "rank_%d" % r))
             for r in range(3)]
    prog = imp["progress"]
    check_eq((prog["ranks_expected"], prog["ranks_indexed"]), (3, 3),
             "import ranks")
    check_eq((prog["bytes_total"], prog["bytes_indexed"]),
             (sum(sizes), sum(sizes)), "import bytes")
    check_eq(sorted(r["label"] for r in imp["ranks"]),
             ["rank_0", "rank_1", "rank_2"], "import labels")
    for r in range(3):
        check_rank_figures(rig.d, iid, r, rank_gz({"trace_dir": folder},
                                                  "rank_%d" % r))


def capture_tp_1_2_8_in_order():
    """TP 1, 2 and 8 posted back to back run one after the other and reach
    done with every rank's figures equal to the reference; an import posted
    after them runs beside and reaches done."""
    root = tempfile.mkdtemp(prefix="capture-test-")
    presets = make_presets(root)
    folder = make_import(root)
    rig = Rig(conf={"models_json": presets, "import_roots": root})
    model = model_dir(rig.models, "Chat-Model",
                      template="{% for m in messages %}{% endfor %}")
    try:
        with rig:
            # The preset /data/Chat-Model matches on the last component.
            ids = [rig.capture(model=model, tp=None, variant="MTP3",
                               server_args=["--level", "3"],
                               env={"HSA_NO_SCRATCH_RECLAIM": "0"}),
                   rig.capture(tp=2, more=True, conc=3),
                   rig.capture(tp=8)]
            code, imp = rig.d.post("/imports", {"path": folder})
            check_eq(code, 202, "POST /imports %s" % imp)
            caps = [rig.wait(i) for i in ids]
            for cap in caps:
                check_eq((cap["status"], cap["phase"], cap["error"]),
                         ("done", "done", None), "capture %d" % cap["id"])
            for a, b in zip(caps, caps[1:]):
                check(b["started_at"] >= a["finished_at"],
                      "capture %d started before %d finished" % (
                          b["id"], a["id"]))
            check_calls(rig, caps, more=ids[1])
            check_preset(rig, caps[0])
            for cap in caps:
                tp = cap["launch"]["tp"]
                check_eq(len(cap["ranks"]), tp, "ranks")
                check_eq(cap["progress"]["ranks_indexed"], tp, "indexed")
                check_eq(cap["bench"]["num_prompts"],
                         cap["params"]["conc"], "bench num_prompts")
                for r in range(tp):
                    check_rank_figures(rig.d, cap["id"], r,
                                       rank_gz(cap, "rank_%d" % r))
            check_import(rig, imp["id"], folder)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def capture_profile_daemon():
    """profile_control=daemon: traced POSTs /start_profile and
    /stop_profile around a bench with PROFILE 0; a bench result file that
    predates the bench is not kept; a profiler start that kills its worker
    (ATOM answers 500 only after its utility timeout) fails the capture in
    benchmark as soon as the worker's death is logged."""
    root = tempfile.mkdtemp(prefix="capture-test-")
    stale = os.path.join(root, "benchmark.json")
    with open(stale, "w") as f:
        json.dump({"completed": 999}, f)
    os.utime(stale, (time.time() - 5, time.time() - 5))
    rig = Rig(conf={"profile_control": "daemon", "bench_result": stale})
    try:
        with rig:
            cid = rig.capture(tp=2)
            cap = rig.wait(cid)
            check_eq((cap["status"], cap["phase"]), ("done", "done"), "cap")
            warmup, bench = rig.calls("run_benchmark.sh")[:2]
            check_eq((warmup["argv"][5:7], bench["argv"][5:7]),
                     (["2", "0"], ["1", "0"]), "PROMPT_MULTIPLIER, PROFILE")
            with open(os.path.join(cap["log_dir"], "server.log")) as f:
                log = f.read()
            check("POST /start_profile" in log and
                  "POST /stop_profile" in log, "profile calls: " + log[-800:])
            check_eq(cap["bench"], None, "stale bench result kept")
            check_eq(cap["bench_result"]["used"], False, "bench_result")
            for r in range(2):
                check_rank_figures(rig.d, cid, r, rank_gz(cap, "rank_%d" % r))

            cid = rig.capture(tp=2, env={"ATOM_SIM_FAULTS":
                                         "start_profile_500"})
            cap = rig.wait(cid)
            check_eq((cap["status"], cap["phase"]), ("failed", "benchmark"),
                     "start_profile 500")
            msg = cap["error"]["message"]
            check("proc died" in msg, msg)
            rig.wait_no_procs()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    run_cases([capture_tp_1_2_8_in_order, capture_profile_daemon])

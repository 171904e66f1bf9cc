"""What a capture request may make root do (atom/policy.c, docs/ATOM.md
"What a request may pass"): every word judged by ATOM's own option set,
addresses traced's alone, paths under model_roots after their links are
resolved, hub ids and --trust-remote-code only where allowed, env by an
allow-list with the deny list behind it; the repro: a listener on loopback
receives nothing from a capture with hostile bench_args. Real daemons,
HTTP over real sockets, the simulator's real scripts for the captures that
run. Usage: test_policy.py [CASE...]."""
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_capture_lib import Rig, model_dir, run_cases  # noqa: E402
from tracedtest import SRC_DIR, Daemon, check, check_eq  # noqa: E402

MODELS_JSON = os.path.join(SRC_DIR, "tests", "data", "atom", "models.json")


class Listener:
    """A TCP listener on loopback that records every connection made to
    it (a bench that was steered there would connect)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.hits = []
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                conn, addr = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(1)
            try:
                self.hits.append((addr, conn.recv(4096)))
            except OSError:
                self.hits.append((addr, b""))
            conn.close()

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


def post(d, model, **params):
    params["model"] = model
    return d.post("/captures", params)


def refused(d, model, field, words=None, **params):
    code, body = post(d, model, **params)
    check_eq(code, 400, "%s: %r" % (params, body))
    check_eq(body["error"]["field"], field, "field of %r: %r" % (params,
                                                                  body))
    for w in words or ():
        check(w in body["error"]["message"], "%r not in %r" % (
            w, body["error"]["message"]))
    return body["error"]["message"]


def accepted(d, model, **params):
    code, body = post(d, model, **params)
    check_eq(code, 202, "%s: %r" % (params, body))
    return body["id"]


def hostile_bench_args():
    """The repro: bench_args that would send the bench's requests to a
    listener of the attacker's are refused, and a capture that runs with
    allowed bench_args never reaches it."""
    lis = Listener()
    rig = Rig()
    try:
        with rig:
            target = "http://127.0.0.1:%d" % lis.port
            for words, field in (
                    (["--base-url", target], "bench_args[0]"),
                    (["--base_url=" + target], "bench_args[0]"),
                    (["--host", "127.0.0.1", "--port", str(lis.port)],
                     "bench_args[0]"),
                    (["--endpoint", "@127.0.0.1:%d/v1/completions"
                      % lis.port], "bench_args[1]"),
                    (["--base-u", target], "bench_args[0]"),
                    (["--seed", "1", "--port=%d" % lis.port],
                     "bench_args[2]")):
                refused(rig.d, rig.model, field, bench_args=words)
            cid = rig.capture(bench_args=["--endpoint", "/v1/completions",
                                          "--seed", "3"])
            cap = rig.wait(cid)
            check_eq(cap["status"], "done", "allowed capture: %s"
                     % cap["error"])
            time.sleep(0.5)
            check_eq(lis.hits, [], "connections to the listener")
    finally:
        lis.close()


def server_and_bench_words():
    """Words outside ATOM's option set, abbreviations, values of the wrong
    kind, options traced owns, addresses, paths outside model_roots, hub
    ids, --trust-remote-code."""
    root = tempfile.mkdtemp(prefix="policy-")
    models = os.path.join(root, "models")
    model = model_dir(models, "M")
    kimi = model_dir(models, "Kimi-K2.7-Code-MXFP4")
    minimax = model_dir(models, "MiniMax-M3-MXFP8", template="{{ m }}")
    tpl = os.path.join(models, "tpl.jinja")
    with open(tpl, "w") as f:
        f.write("{{ messages }}")
    os.symlink("/etc", os.path.join(models, "etc-link"))
    conf = {"model_roots": models, "models_json": MODELS_JSON,
            "atom_scripts": "/nonexistent"}
    try:
        with Daemon(conf=conf) as d:
            for words, field, why in (
                    (["--no-such-option"], "server_args[0]", "not an option"),
                    (["-h"], "server_args[0]", "not an option"),
                    (["--trust-rem"], "server_args[0]", "full name"),
                    (["8"], "server_args[0]", "without its option"),
                    (["--max-num-seqs", "x"], "server_args[1]", "integer"),
                    (["--max-num-seqs"], "server_args[0]", "needs a value"),
                    (["--method", "medusa"], "server_args[1]", "one of"),
                    (["--enforce-eager=1"], "server_args[0]", "no value"),
                    (["--host", "0.0.0.0"], "server_args[0]", "address"),
                    (["--port", "9"], "server_args[0]", "port"),
                    (["-tp", "2"], "server_args[0]", "\"tp\""),
                    (["--torch-profiler-dir", "/tmp"], "server_args[0]",
                     "trace folder"),
                    (["--kv-transfer-config", "{}"], "server_args[0]",
                     "one node"),
                    (["--chat-template", "/etc/shadow"], "server_args[1]",
                     "outside model_roots"),
                    (["--chat-template", os.path.join(models, "etc-link",
                                                      "shadow")],
                     "server_args[1]", "resolves to /etc/shadow"),
                    (["--draft-model", "/opt/draft"], "server_args[1]",
                     "outside model_roots"),
                    (["--draft-model", "Inferact/MiniMax-M3-EAGLE3"],
                     "server_args[1]", "allow_hub_ids"),
                    (["--request-log", "/var/log/x.jsonl"], "server_args[1]",
                     "outside model_roots"),
                    (["--online_quant_config", "{broken"], "server_args[1]",
                     "JSON"),
                    (["--trust-remote-code"], "server_args[0]",
                     "allow_trust_remote_code")):
                refused(d, model, field, [why], server_args=words)
            for words, field, why in (
                    (["--tokenizer", "/etc"], "bench_args[1]",
                     "outside model_roots"),
                    (["--dataset-path", "/etc/passwd"], "bench_args[1]",
                     "outside model_roots"),
                    (["--result-filename", "/tmp/x.json"], "bench_args[0]",
                     "bench_result"),
                    (["--num-prompts", "9"], "bench_args[0]",
                     "prompt_multiplier"),
                    (["--profile"], "bench_args[0]", "profile_control"),
                    (["--random_input_len", "5"], "bench_args[0]",
                     "not an option")):
                refused(d, model, field, [why], bench_args=words)
            for m, why in (("/etc", "outside model_roots"),
                           (os.path.join(models, "etc-link"),
                            "resolves to /etc"),
                           (models + "/../M", "without \".\" or \"..\""),
                           ("Qwen/Qwen3-0.6B", "allow_hub_ids")):
                refused(d, m, "model", [why])
            # The preset's --draft-model hub id without its folder beside
            # the model (atom/launch.c); a bench backend that cannot start
            # the profiler.
            refused(d, minimax, "variant", ["MiniMax-M3-EAGLE3"],
                    variant="EAGLE3")
            refused(d, model, "bench_args", ["openai-chat"],
                    bench_args=["--backend", "openai-chat"])
            os.makedirs(os.path.join(os.path.dirname(minimax),
                                     "MiniMax-M3-EAGLE3"))
            # Allowed: ATOM's options with good values, a template file
            # and a draft folder under model_roots, the preset's own
            # --trust-remote-code (Kimi) and draft (MiniMax's EAGLE3,
            # launched from the folder beside).
            accepted(d, model, server_args=[
                "--max-num-seqs=16", "--enable-tbo", "--load_dummy", "zero",
                "--chat-template", tpl, "--draft-model", model,
                "--method", "eagle3", "--hf-overrides", '{"a":1}',
                "--no-enable_prefix_caching", "--kv-cache-dtype", "bf16"],
                bench_args=["--seed", "4", "--request-rate", "inf",
                            "--metadata", "a=1",
                            "b=2", "--endpoint", "/v1/chat/completions",
                            "--backend", "sglang"])
            accepted(d, kimi, server_args=["--trust-remote-code"])
            accepted(d, minimax, variant="EAGLE3")
            check("no auth_token" in d.log_text(), "start-up warning")
        conf.update(allow_trust_remote_code="true", allow_hub_ids="true")
        with Daemon(conf=conf) as d:
            accepted(d, model, server_args=["--trust-remote-code",
                                            "--draft-model",
                                            "Inferact/MiniMax-M3-EAGLE3"])
            accepted(d, "Qwen/Qwen3-0.6B")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def env_policy():
    """env: the allow-list (exact names, documented prefixes), the deny
    list behind it, path values under model_roots, multi-node names,
    control characters."""
    root = tempfile.mkdtemp(prefix="policy-")
    models = os.path.join(root, "models")
    model = model_dir(models, "M")
    conf = {"model_roots": models, "atom_scripts": "/nonexistent"}
    try:
        with Daemon(conf=conf) as d:
            for name, value, why in (
                    ("TORCH_LOGS_OUT", "/tmp/torch.log", "outside model_roots"),
                    ("TORCH_TRACE", "/tmp/trace", "outside model_roots"),
                    ("PYTORCH_TUNABLEOP_FILENAME", "/root/t.csv",
                     "outside model_roots"),
                    ("AITER_CONFIG_GEMM_BF16", "/etc/x.csv",
                     "outside model_roots"),
                    ("NCCL_COMM_ID", "10.0.0.1:1234", "never"),
                    ("ATOM_DP_MASTER_IP", "10.0.0.1", "one node"),
                    ("ATOM_DP_SIZE", "2", "one node"),
                    ("ATOM_PROCESS_NAME_PREFIX", "X", "never"),
                    ("LD_PRELOAD", "/x.so", "never"),
                    ("FOO_BAR", "1", "env_allow"),
                    ("PATHX", "1", "env_allow"),
                    ("ATOM_USE_TRITON_MOE", "1\nRank 0: profiler started",
                     "control characters")):
                refused(d, model, "env." + name, [why], env={name: value})
            accepted(d, model, env={
                "TORCH_LOGS_OUT": os.path.join(models, "torch.log"),
                "AITER_CONFIG_GEMM_BF16": os.path.join(models, "g.csv"),
                "MAX_NUM_SEQS": "32", "GPU_MAX_HW_QUEUES": "5",
                "ATOM_USE_TRITON_MOE": "1", "NCCL_DEBUG": "INFO"})
        conf["env_allow"] = "ATOM_USE_TRITON_MOE NCCL_*"
        with Daemon(conf=conf) as d:
            accepted(d, model, env={"ATOM_USE_TRITON_MOE": "1",
                                    "NCCL_DEBUG": "INFO"})
            refused(d, model, "env.ATOM_LOG_MORE", ["env_allow"],
                    env={"ATOM_LOG_MORE": "1"})
    finally:
        shutil.rmtree(root, ignore_errors=True)


def link_moved_after_accept():
    """A model link that pointed under model_roots when the request was
    accepted and outside when the capture starts: the plan judges it again
    and the capture fails before anything runs."""
    rig = Rig()
    with rig:
        link = os.path.join(rig.models, "Moving")
        os.symlink(rig.model, link)
        first = rig.capture(conc=4, osl=16)
        second = rig.capture(model=link)
        os.unlink(link)
        os.symlink("/etc", link)
        check_eq(rig.wait(first)["status"], "done", "first capture")
        cap = rig.wait(second)
        check_eq((cap["status"], cap["phase"]), ("failed", "stopping"),
                 "moved link: %s" % cap["error"])
        check("outside model_roots" in cap["error"]["message"], cap["error"])
        check_eq(len(rig.calls("stop_atom_server.sh")), 1,
                 "scripts run for the moved link")


if __name__ == "__main__":
    cases = {c.__name__: c for c in (hostile_bench_args,
                                     server_and_bench_words, env_policy,
                                     link_moved_after_accept)}
    run_cases([cases[n] for n in sys.argv[1:]] or list(cases.values()))

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
                     "server_args[1]", "outside model_roots"),
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
                            "outside model_roots"),
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


def shell_words():
    """Every server and bench word, and the env values the start script
    turns into server words, is refused when it holds what bash splits or
    expands in ATOM's unquoted $EXTRA_ARGS: a pattern that globs to a link
    out of model_roots never reaches the server; JSON values keep their
    arrays (their strings are escaped)."""
    root = tempfile.mkdtemp(prefix="policy-")
    models = os.path.join(root, "models")
    model = model_dir(models, "M")
    os.makedirs(os.path.join(models, "u"))
    os.symlink("/etc/shadow", os.path.join(models, "u", "t"))
    conf = {"model_roots": models, "atom_scripts": "/nonexistent"}
    try:
        with Daemon(conf=conf) as d:
            for words, field, why in (
                    (["--chat-template", models + "/u/[t]"],
                     "server_args[1]", "glob character"),
                    (["--request-log", models + "/u/?"], "server_args[1]",
                     "glob character"),
                    (["--request-log", models + "/.?/.?/x"],
                     "server_args[1]", "glob character"),
                    (["--chat-template=" + models + "/u/*"],
                     "server_args[0]", "glob character"),
                    (["--chat-template", models + "/u/t\\"],
                     "server_args[1]", "backslash")):
                refused(d, model, field, [why, "unquoted"],
                        server_args=words)
            for words, field in (
                    (["--tokenizer", models + "/[M]"], "bench_args[1]"),
                    (["--metadata", "a=1", "b=*"], "bench_args[2]"),
                    (["--dataset-path", models + "/?"], "bench_args[1]"),
                    (["--percentile-metrics", "ttft,[it]l"],
                     "bench_args[1]")):
                refused(d, model, field, ["glob character"],
                        bench_args=words)
            for name, value, why in (
                    ("KV_CACHE_DTYPE", "fp8*", "glob character"),
                    ("MAX_NUM_SEQS", "3?", "glob character"),
                    ("GPU_MEM_UTIL", "0.9 --trust-remote-code", "a blank"),
                    ("MAX_NUM_SEQS", "many", "an integer"),
                    ("KV_CACHE_DTYPE", "int3", "one of")):
                refused(d, model, "env." + name, [why], env={name: value})
            accepted(d, model, server_args=[
                "--online_quant_config",
                '{"exclude_layer": ["lm_head", "*.mlp.gate"]}',
                "--hf-overrides", '[1,2]'],
                env={"KV_CACHE_DTYPE": "bf16", "GPU_MEM_UTIL": "0.85",
                     "MAX_NUM_SEQS": "64"})
    finally:
        shutil.rmtree(root, ignore_errors=True)


def model_folder_trust():
    """A model or tokenizer folder (or a file in it, or a folder above it)
    that a user other than root may write is refused naming the path and
    its mode: ATOM's bench loads the tokenizer with --trust-remote-code on
    every run. An auto_map is refused unless remote code is allowed; a
    tokenizer_config.json that is a link is a 400, like any refusal."""
    root = tempfile.mkdtemp(prefix="policy-")
    models = os.path.join(root, "models")
    theirs = 65534  # nobody
    model = model_dir(models, "M")
    open_dir = model_dir(models, "Open")
    os.chmod(open_dir, 0o777)
    planted = model_dir(models, "Planted", **{"encoding/encoding_x.py": "1"})
    os.chown(os.path.join(planted, "encoding", "encoding_x.py"), theirs, 0)
    tok = model_dir(models, "Tok")
    os.chmod(os.path.join(tok, "tokenizer_config.json"), 0o666)
    shared = os.path.join(models, "shared")
    below = model_dir(shared, "Below")
    os.chmod(shared, 0o777)
    mapped = model_dir(models, "Mapped", **{"tokenizer_config.json": json.dumps(
        {"auto_map": {"AutoTokenizer": ["tok.T", None]}})})
    cmapped = model_dir(models, "Kimi-K2.7-Code-MXFP4", **{
        "config.json": json.dumps({"auto_map": {"AutoConfig": "c.C"}})})
    linked = os.path.join(models, "Linked")
    os.makedirs(linked)
    os.symlink(os.path.join(model, "tokenizer_config.json"),
               os.path.join(linked, "tokenizer_config.json"))
    conf = {"model_roots": models, "models_json": MODELS_JSON,
            "atom_scripts": "/nonexistent"}
    try:
        with Daemon(conf=conf) as d:
            for m, field, words in (
                    (open_dir, "model", [open_dir, "mode 0777"]),
                    (planted, "model", ["encoding_x.py", "uid 65534"]),
                    (tok, "model", ["tokenizer_config.json", "mode 0666"]),
                    (below, "model", [shared, "a folder above it"]),
                    (mapped, "model", ["auto_map", "allow_trust_remote_code"]),
                    (linked, "model", ["tokenizer_config.json"])):
                refused(d, m, field, words)
            refused(d, model, "bench_args[1]", [open_dir, "mode 0777"],
                    bench_args=["--tokenizer", open_dir])
            refused(d, model, "bench_args[1]", ["auto_map"],
                    bench_args=["--tokenizer", mapped])
            refused(d, model, "server_args[1]", ["mode 0666"],
                    server_args=["--draft-model", tok])
            accepted(d, cmapped)  # the preset sets trust_remote_code
        conf["allow_trust_remote_code"] = "true"
        with Daemon(conf=conf) as d:
            accepted(d, mapped, bench_args=["--tokenizer", mapped])
            refused(d, open_dir, "model", ["mode 0777"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def env_code():
    """Env that re-enables unpickling or loads code, and the shell's own
    variables, are refused whatever env_allow says (even "*")."""
    root = tempfile.mkdtemp(prefix="policy-")
    models = os.path.join(root, "models")
    model = model_dir(models, "M")
    conf = {"model_roots": models, "atom_scripts": "/nonexistent"}
    try:
        for allow in (None, "*"):
            if allow:
                conf["env_allow"] = allow
            with Daemon(conf=conf) as d:
                for name in ("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD",
                             "TORCH_DEVICE_BACKEND_AUTOLOAD",
                             "TORCH_USE_RTLD_GLOBAL",
                             "TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE",
                             "HF_HUB_TRUST_REMOTE_CODE", "BASH_ENV",
                             "BASHOPTS", "SHELLOPTS", "ENV", "PS4", "IFS",
                             "HOME", "PATH", "CDPATH", "TMPDIR",
                             "GLOBIGNORE"):
                    refused(d, model, "env." + name, ["never"],
                            env={name: "1"})
                accepted(d, model, env={"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1"})
    finally:
        shutil.rmtree(root, ignore_errors=True)


def no_link_oracle():
    """A path refused for where its links lead answers one fixed message:
    never the target traced resolved as root inside a folder only root
    may read."""
    root = tempfile.mkdtemp(prefix="policy-")
    models = os.path.join(root, "models")
    model = model_dir(models, "M")
    secret = os.path.join(root, "secret-0700")
    os.makedirs(os.path.join(secret, "hidden-name"))
    os.chmod(secret, 0o700)
    os.symlink(os.path.join(secret, "hidden-name"),
               os.path.join(models, "peek"))
    conf = {"model_roots": models, "atom_scripts": "/nonexistent"}
    try:
        with Daemon(conf=conf) as d:
            msgs = [refused(d, model, "server_args[1]", ["outside model_roots"],
                            server_args=["--chat-template",
                                         models + "/peek/x.jinja"]),
                    refused(d, models + "/peek", "model",
                            ["outside model_roots"]),
                    refused(d, model, "env.TORCH_LOGS_OUT",
                            ["outside model_roots"],
                            env={"TORCH_LOGS_OUT": models + "/peek/log"})]
            for msg in msgs:
                check("hidden-name" not in msg and secret not in msg,
                      "the link's target is echoed: %s" % msg)
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
                                     link_moved_after_accept, shell_words,
                                     model_folder_trust, env_code,
                                     no_link_oracle)}
    run_cases([cases[n] for n in sys.argv[1:]] or list(cases.values()))

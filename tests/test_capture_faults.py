"""Every fault switch of the ATOM simulator (sim/README.md) ends the capture
with the right status, phase and a message naming the cause (exit code,
marker, rank); the stop script runs after a failure and no process is left.
The captures run one after the other on one traced; each gets its fault
through the request's env (ATOM_SIM_FAULTS reaches the server)."""
import os
import re
import socket

from test_capture_lib import (Rig, check, check_eq, check_rank_figures,
                              rank_gz, run_cases)
from tracedtest import SIM_VENV_BIN


def faulty(rig, fault, **params):
    return rig.capture(env={"ATOM_SIM_FAULTS": fault}, **params)


def expect(cap, status, phase, *words):
    check_eq((cap["status"], cap["phase"]), (status, phase),
             "capture %d: %s" % (cap["id"], cap["error"]))
    if status != "done":
        check_eq(cap["error"]["phase"], phase, "error.phase")
    for w in words:
        check(w in cap["error"]["message"],
              "%r not in %r" % (w, cap["error"]["message"]))


def stop_ran_after(rig, cap, timeout=10):
    """The stop script is called after the capture failed (traced stores
    the failure first, then stops the server)."""
    check(rig.stop_calls_after(cap["finished_at"], timeout),
          "no stop script after capture %d" % cap["id"])


def faults_before_the_bench():
    """die_on_start, never_ready (the launcher's fall-through exit 0 is
    ignored), a fatal marker while loading, and a marker left in the log by
    the previous run that must not fail the next capture."""
    rig = Rig(conf={"ready_timeout_s": "6"}, sim_env={"SIM_LAUNCH_CAP_S": "2"})
    with rig:
        ids = [faulty(rig, "die_on_start"), faulty(rig, "never_ready"),
               faulty(rig, "fatal_marker=Memory access fault by GPU node-2"),
               rig.capture(tp=1)]
        cap = rig.wait(ids[0])
        expect(cap, "failed", "launching", "start script exited 1",
               "the server log says: RuntimeError: Engine core "
               "initialization failed")
        check("Traceback (most recent call last)" in
              cap["error"]["log_tail"], cap["error"]["log_tail"])
        cap = rig.wait(ids[1])
        expect(cap, "failed", "waiting_ready", "log silent for 6 s")
        stop_ran_after(rig, cap)
        with open(os.path.join(cap["log_dir"], "launcher.log")) as f:
            check("Server is ready" not in f.read(), "launcher said ready")
        cap = rig.wait(ids[2])
        expect(cap, "failed", "waiting_ready", "Memory access fault",
               "fatal marker")
        # The next run's launch truncates the log with the marker in it;
        # write one more marker line before it to be sure it is old.
        with open(rig.conf["server_log"], "a") as f:
            f.write("previous run: proc died\n")
        cap = rig.wait(ids[3])
        expect(cap, "done", "done")


def server_log(cap):
    with open(os.path.join(cap["log_dir"], "server.log")) as f:
        return f.read()


def early_deaths():
    """A server that dies while loading: the capture's error quotes what
    decided it (a traceback's exception, else the first error line, else
    the log's last line), and logs/<id>/server.log keeps the launch's whole
    log, header first, after the next launch truncated ATOM's."""
    rig = Rig()
    blocker = socket.socket()
    with rig:
        # An engine argument ATOM refuses: ValueError, traceback, exit 1.
        first = rig.wait(rig.capture(server_args=["--method", "eagle3"]))
        expect(first, "failed", "launching", "the server died while loading",
               "the server log says: ValueError: --draft-model is required "
               "when --method eagle3.")
        # Its port taken (bound, not listening: the start script's curl is
        # refused): uvicorn's error line, no traceback.
        blocker.bind(("127.0.0.1", rig.port))
        cap = rig.wait(rig.capture())
        blocker.close()
        expect(cap, "failed", "launching", "the server log says: ERROR:",
               "address already in use")
        log = server_log(first)
        check(log.startswith("====") and "ATOM Server Launcher" in log and
              "ValueError: --draft-model is required" in log, log[-2000:])
        check("address already in use" in server_log(cap),
              server_log(cap)[-2000:])
    # ATOM's module not importable by the scripts' `python`: its last line.
    path = os.pathsep.join(d for d in rig.env["PATH"].split(os.pathsep)
                           if d != SIM_VENV_BIN)
    rig = Rig(sim_env={"PATH": path, "SIM_PYTHON": "python3"})
    with rig:
        cap = rig.wait(rig.capture())
        expect(cap, "failed", "launching", "the server log says: ",
               "No module named 'atom'")
        check("No module named 'atom'" in server_log(cap), server_log(cap))


def faults_in_the_bench():
    """The server dies during the bench: ATOM's client exits 0 all the same
    (its failed requests only shorten "completed"), and traced must see the
    dead server; with a strict client the bench's exit code says it; a
    fatal marker appears during the bench (the requests then hang: traced's
    log scan ends it); a bench that fails by itself is quoted."""
    rig = Rig(conf={"export_max_polls": "3"})
    with rig:
        ids = [faulty(rig, "die_during_bench=2", conc=4),
               faulty(rig, "fatal_marker_during_bench")]
        cap = rig.wait(ids[0])
        expect(cap, "failed", "benchmark", "the server died during the bench")
        cap = rig.wait(ids[1])
        expect(cap, "failed", "benchmark", "Memory access fault")
        stop_ran_after(rig, cap)
        rig.wait_no_procs()
        with open(rig.path("faults"), "w") as f:
            f.write("strict_bench\n")
        cap = rig.wait(faulty(rig, "die_during_bench=2"))
        # The strict client's exit and the dead server race: whichever
        # traced sees first names the failure (under ASan the server's
        # death often comes first); either way in the benchmark phase.
        msg = cap["error"]["message"]
        expect(cap, "failed", "benchmark",
               "bench script exited" if "bench script exited" in msg
               else "the server died during the bench")
        # A bench that fails by itself, the server alive: the strict client
        # exits 1 on a request the server answered 500; the error quotes
        # the line of its log that says why, not only its exit status.
        # conc 4: requests 1-8 are the warm-ups, 9-12 the profiled ones,
        # whose bench exits before traced waits on the export or while it
        # does (its last step: the profiler stopped).
        cap = rig.wait(faulty(rig, "fail_request=10", conc=4))
        expect(cap, "failed", cap["phase"] if cap["phase"] in (
            "benchmark", "exporting") else "benchmark",
            "the bench script exited 1: ERROR: 1 of 4 requests failed; "
            "first: Internal Server Error")
        check("requests failed" in cap["error"]["log_tail"],
              cap["error"]["log_tail"])


def faults_in_the_export():
    """A worker that dies after writing its .json fails the export at once
    (ATOM logs the death; the .json stays); a missing rank fails it naming
    the rank after the polls; a slow export still ends done; a truncated .gz
    fails its rank at indexing with the byte offset while the other ranks
    are kept and queryable."""
    rig = Rig(conf={"export_max_polls": "4"})
    with rig:
        ids = [faulty(rig, "worker_death=1", tp=2),
               faulty(rig, "missing_rank=2", tp=4),
               faulty(rig, "slow_export=2.5", tp=2),
               faulty(rig, "truncated_gz=1", tp=3)]
        cap = rig.wait(ids[0])
        expect(cap, "failed", "exporting", "the server died during the export",
               "proc died unexpectedly")
        check(cap["progress"]["export_polls"] <= 2, cap["progress"])
        cap = rig.wait(ids[1])
        expect(cap, "failed", "exporting", "rank 2: no rank_2 folder")
        check_eq(cap["progress"]["ranks_exported"], 3, "ranks_exported")
        cap = rig.wait(ids[2])
        expect(cap, "done", "done")
        check(cap["progress"]["export_polls"] >= 2, cap["progress"])
        cap = rig.wait(ids[3])
        expect(cap, "failed", "indexing", "rank 1 (rank_1)",
               "1 of 3 ranks could not be indexed")
        by_rank = {r["rank"]: r for r in cap["ranks"]}
        check_eq(by_rank[1]["status"], "failed", "rank 1 status")
        check(re.search(r"(byte|offset) \d+", by_rank[1]["error"]),
              by_rank[1]["error"])
        for r in (0, 2):
            check_eq(by_rank[r]["status"], "done", "rank %d" % r)
            check_rank_figures(rig.d, cap["id"], r,
                               rank_gz(cap, "rank_%d" % r))


if __name__ == "__main__":
    run_cases([faults_before_the_bench, early_deaths, faults_in_the_bench,
               faults_in_the_export])

"""Cancel in each phase (queued, launching, benchmark, exporting): status
cancelled with the phase; the stop script ran and no process of the
simulator is left; while ranks export, only once their exports ended
(the stop script would kill them mid-write). kill -9 of traced
mid-capture and a restart: the capture is
interrupted with its phase, or indexed to done when its trace folder is
complete; nothing stays running. SIGTERM stops traced cleanly."""
import os

from test_capture_lib import (Rig, check, check_eq, check_rank_figures,
                              epoch, rank_gz, run_cases)
from tracedtest import wait_for


def wait_call(rig, script, n, timeout=30):
    """Until the simulator has recorded n calls of script."""
    wait_for(lambda: len(rig.calls(script)) >= n, timeout,
             "call %d of %s" % (n, script))


def cancel(rig, cid, phase, script=None, n=0, check_env=False):
    """DELETE a running capture in phase, once the simulator has seen call
    n of script (a server or bench process to be ended); checks the
    outcome: the server was stopped."""
    rig.wait_phase(cid, phase)
    if script is not None:
        wait_call(rig, script, n)
    if check_env:
        # traced sized libuv's pool (index_jobs 2 + 2) before its first
        # use; its children inherit the variable.
        pid = rig.calls(script)[n - 1]["pid"]
        with open("/proc/%d/environ" % pid, "rb") as f:
            check(b"UV_THREADPOOL_SIZE=4" in f.read().split(b"\0"),
                  "UV_THREADPOOL_SIZE not set for traced's children")
    code, _ = rig.d.delete("/captures/%d" % cid)
    check_eq(code, 202, "DELETE running capture")
    cap = rig.wait(cid)
    check_eq((cap["status"], cap["phase"], cap["error"]["phase"]),
             ("cancelled", phase, phase), "capture %d" % cid)
    check("cancelled by request" in cap["error"]["message"], cap["error"])
    check(rig.stop_calls_after(cap["finished_at"], timeout=30),
          "no stop script after the cancel of %d: %s" % (
              cid, rig.calls("stop_atom_server.sh")))
    rig.wait_no_procs(timeout=30)
    return cap


def exports_ended_before(cap, stop):
    """Every rank of cap exported whole (one .gz, no .json left), and the
    last export line of the server log came before the stop script."""
    for r in range(2):
        names = os.listdir(os.path.join(cap["trace_dir"], "rank_%d" % r))
        check(len(names) == 1 and names[0].endswith(".gz"),
              "rank %d cut mid-write: %s" % (r, names))
    with open(os.path.join(cap["log_dir"], "server.log")) as f:
        log = f.read()
    check_eq(log.count(": trace exported to "), 2, "export lines")
    check(epoch(stop["time"]) >= epoch(cap["finished_at"]) - 1,
          "stop before the cancel")


def cancel_in_each_phase():
    # The launcher waits 30 s for a server that never gets ready; a bench
    # with osl 100 streams 100 tokens 50 ms apart per request.
    rig = Rig(sim_env={"SIM_LAUNCH_CAP_S": "30", "SIM_MAX_TOKENS": "100",
                       "SIM_TOKEN_S": "0.05"})
    with rig:
        a = rig.capture(env={"ATOM_SIM_FAULTS": "never_ready"})
        b = rig.capture()
        rig.wait_phase(a, "launching")
        code, cap = rig.d.delete("/captures/%d" % b)
        check_eq((code, cap["status"], cap["phase"]),
                 (200, "cancelled", "queued"), "queued cancel")
        cancel(rig, a, "launching", "atom_sim_server", 1,
               check_env=True)
        c = rig.capture(osl=100)
        cancel(rig, c, "benchmark", "benchmark_serving", 1)
        # Cancelled while two ranks export for 6 s more: the server is
        # stopped once they are done, not cut mid-write.
        d = rig.capture(tp=2, env={"ATOM_SIM_FAULTS": "slow_export=6"})
        cap = cancel(rig, d, "exporting")
        exports_ended_before(cap, rig.calls("stop_atom_server.sh")[-1])
        # The queued one never ran: three launches, for a, c and d.
        check_eq([s["argv"][4] for s in rig.calls("start_atom_server.sh")],
                 [os.path.join(rig.d.conf["trace_root"], str(i))
                  for i in (a, c, d)], "launches")
        check_eq(rig.get(b)["started_at"], None, "queued one started")


def wait_exported(folder, tp, timeout=30):
    """Until every rank_<r> holds one .gz and no .json."""
    def exported():
        names = [sorted(os.listdir(os.path.join(folder, "rank_%d" % r)))
                 if os.path.isdir(os.path.join(folder, "rank_%d" % r))
                 else [] for r in range(tp)]
        return all(len(n) == 1 and n[0].endswith(".gz") for n in names)
    wait_for(exported, timeout, "the export of %s" % folder, every=0.1)


def kill9_and_restart():
    rig = Rig()
    with rig:
        # Killed while waiting for a server that never gets ready.
        e = rig.capture(env={"ATOM_SIM_FAULTS": "never_ready"})
        rig.wait_phase(e, "waiting_ready")
        rig.kill9()
        check(rig.sim_procs(), "nothing of the capture was running")
        rig.restart()
        cap = rig.get(e)
        check_eq((cap["status"], cap["phase"], cap["error"]["phase"]),
                 ("interrupted", "waiting_ready", "waiting_ready"), "e")
        check("traced stopped during waiting_ready" in
              cap["error"]["message"], cap["error"])
        # What the crashed traced left running is ended by the restart, not
        # left to hold the GPUs until the next capture.
        rig.wait_no_procs(timeout=2)
        # Killed while the export runs; it completes while traced is down:
        # the restart indexes it.
        f = rig.capture(tp=2, env={"ATOM_SIM_FAULTS": "slow_export=1.5"})
        cap = rig.wait_phase(f, "exporting")
        rig.kill9()
        wait_exported(cap["trace_dir"], 2)
        rig.restart()
        cap = rig.wait(f)
        check_eq((cap["status"], cap["phase"]), ("done", "done"), "f")
        check_eq(len(cap["ranks"]), 2, "ranks of f")
        for r in range(2):
            check_rank_figures(rig.d, f, r, rank_gz(cap, "rank_%d" % r))
        # SIGTERM during a launch: traced exits 0, the capture is
        # interrupted at once, and stays so after a restart.
        g = rig.capture(env={"ATOM_SIM_FAULTS": "never_ready"})
        rig.wait_phase(g, "launching")
        check_eq(rig.d.stop(), 0, "traced exit status on SIGTERM")
        rig.restart()
        cap = rig.get(g)
        check_eq((cap["status"], cap["phase"]),
                 ("interrupted", "launching"), "g")
        code, running = rig.d.get("/captures?status=running")
        check_eq(len(running.get("captures", running)), 0, "running")


if __name__ == "__main__":
    run_cases([cancel_in_each_phase, kill9_and_restart])

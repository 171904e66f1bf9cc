"""ATOM in its own container (docs/ATOM.md, "Someone else's GPU job", "What
ATOM's scripts kill"), on the strict simulator:

  container      container mode (SIM_CONTAINER=1): rocm-smi lists the
                 host's PIDs, which no process here has, and the server
                 holds the KFD stand-in (kfd_path) open. With a job of
                 another container holding memory on a GPU the launch does
                 not use, three captures in a row end done: the server left
                 up by one capture is a local holder, ATOM's, for the next;
                 the host-only holder is named, never judged; the stop
                 script's exit 1 (that memory stays) is said, not fatal. A
                 foreign process here holding the KFD device is refused,
                 named, before ATOM's scripts run (memory held from outside
                 that leaves a GPU of the launch less than it asks:
                 test_capture_fresh.py foreign).
  kill_patterns  a process that is not ATOM's and that the stop script's
                 pkill patterns match (lm_eval) is refused, named with its
                 pattern, the script and its line, before the scripts run;
                 taken over, the scripts kill it and the capture ends done.
                 Matching processes that only pass by (each alive 50 ms,
                 one after the other for the whole capture) are not
                 judged: the capture ends done. Runs alone (RUN_SERIAL): ATOM's patterns match across the
                 machine, and every capture test judges what they match.

Usage: test_capture_container.py [CASE...]."""
import os
import re
import signal
import subprocess
import sys
import threading

from test_capture_lib import Rig, check, check_eq, run_cases
from tracedtest import wait_for


def host_pid(n):
    """A PID no process here has (the host's, seen from a container)."""
    while os.path.exists("/proc/%d" % n):
        n += 1
    return n


def expect_done(rig, cid):
    cap = rig.wait(cid, timeout=240)
    check_eq((cap["status"], cap["error"]), ("done", None),
             "capture %d" % cid)
    return cap


def expect_failed(rig, cid, phase, *words):
    cap = rig.wait(cid, timeout=240)
    check_eq((cap["status"], cap["phase"]), ("failed", phase),
             "capture %d: %s" % (cid, cap["error"]))
    for w in words:
        check(w in cap["error"]["message"],
              "%r not in %r" % (w, cap["error"]["message"]))
    return cap


def container_rig():
    rig = Rig(sim_env={"SIM_CONTAINER": "1", "SIM_POLL_S": "0.05",
                       "SIM_LAUNCH_CAP_S": "4"})
    kfd = rig.path("kfd")
    open(kfd, "w").close()
    rig.env["SIM_KFD"] = kfd
    rig.conf.update(kfd_path=kfd, stop_timeout_s="120",
                    launch_timeout_s="120")
    return rig, kfd


def container():
    rig, kfd = container_rig()
    other = host_pid(1234567)
    job = None
    with rig:
        with open(rig.path("faults"), "w") as f:
            f.write("host_gpu_pid=%d:7:5\n" % other)
        named = ("held from outside this container: host PID %d, 9.6 GiB on "
                 "GPU 7" % other)
        caps = [expect_done(rig, rig.capture(tp=2)) for _ in range(3)]
        for n, cap in enumerate(caps):
            before = cap["gpu-before-start"]
            check_eq(before.get("outside"), named, "capture %d" % n)
            check_eq(before["holders"], [], "local holders after the stop")
            check("stop_exit" in before, "stop script's exit 1: %s" % before)
            check(other in [h["host_pid"] for h in before["host_only"]],
                  before)
        # The server the previous capture left up holds the KFD device:
        # a local holder, ATOM's; its host PIDs are not judged.
        holders = caps[2]["gpu-before-stop"]["holders"]
        check(holders and all(h["atom"] and h["kfd"] for h in holders),
              holders)
        check("outside" not in caps[2]["gpu-before-stop"],
              "named outside while this container's server ran")
        # A job here that is not ATOM's, holding the KFD device.
        stops = len(rig.calls("stop_atom_server.sh"))
        job = subprocess.Popen(["sleep", "300"], stdin=open(kfd))
        cap = expect_failed(rig, rig.capture(tp=2), "stopping",
                            "PID %d (sleep 300)" % job.pid,
                            "take_over_foreign_gpu")
        check_eq(len(rig.calls("stop_atom_server.sh")), stops,
                 "ATOM's stop script ran")
        check(job.poll() is None, "the foreign job was killed")
        job.kill()
        job.wait()


def plant(rig, argv0):
    """A process that is not ATOM's, named argv0, in this home's
    environment (the simulator's pkill reaches only its home)."""
    env = dict(os.environ, **rig.env)
    return subprocess.Popen(["bash", "-c", 'exec -a "$0" sleep 300', argv0],
                            env=env)


def passers_by(stop):
    """Until stop is set, one process after another that the stop
    script's lm_eval pattern matches, each alive for 50 ms (outside any
    simulator home: no script kills them)."""
    while not stop.is_set():
        subprocess.run(["bash", "-c", 'exec -a "$0" sleep 0.05',
                        "lm_eval --passing-by"], check=False)


def kill_patterns():
    rig = Rig()
    job = None
    try:
        with rig:
            cid = rig.capture(tp=1)
            expect_done(rig, cid)
            job = plant(rig, "lm_eval --tasks gsm8k")
            wait_for(lambda: b"lm_eval" in open(
                "/proc/%d/cmdline" % job.pid, "rb").read(), 10, "plant")
            stops = len(rig.calls("stop_atom_server.sh"))
            cap = expect_failed(rig, rig.capture(tp=1), "stopping",
                                "ATOM's scripts would kill processes that "
                                "are not ATOM's: PID %d (lm_eval --tasks "
                                "gsm8k 300)" % job.pid,
                                "pkill -f 'lm_eval' (stop_atom_server.sh:")
            check(re.search(r"stop_atom_server\.sh:\d+\)",
                            cap["error"]["message"]), cap["error"])
            check(job.poll() is None, "the scripts killed it")
            check_eq(len(rig.calls("stop_atom_server.sh")), stops,
                     "the stop script ran")
            matches = cap["gpu-before-stop"]["kill_matches"]
            mine = [m for m in matches if m["pid"] == job.pid]
            check_eq([(m["atom"], m["pattern"]) for m in mine],
                     [(False, "lm_eval")], "the match recorded")
            # The server the first capture left up: matched, ATOM's.
            check(any(m["atom"] and m["pattern"] == "atom.entrypoints"
                      for m in matches), matches)
            job.kill()
            job.wait()
            stop = threading.Event()
            walker = threading.Thread(target=passers_by, args=(stop,))
            walker.start()
            try:
                cap = expect_done(rig, rig.capture(tp=1))
            finally:
                stop.set()
                walker.join()
            check(not any(not m["atom"] for m in
                          cap["gpu-before-stop"]["kill_matches"]),
                  cap["gpu-before-stop"])
        rig2 = Rig(conf={"take_over_foreign_gpu": "true"})
        with rig2:
            job = plant(rig2, "lm_eval --tasks gsm8k")
            cap = expect_done(rig2, rig2.capture(tp=1))
            check_eq(cap["gpu-before-stop"]["taken_over"], True,
                     "taken over")
            wait_for(lambda: job.poll() is not None, 10,
                     "ATOM's stop script killing lm_eval")
    finally:
        if job is not None and job.poll() is None:
            job.send_signal(signal.SIGKILL)
            job.wait()


if __name__ == "__main__":
    cases = {c.__name__: c for c in (container, kill_patterns)}
    run_cases([cases[n] for n in sys.argv[1:]] or list(cases.values()))

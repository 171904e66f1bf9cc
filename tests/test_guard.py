"""Who may ask, judged before anything else (api/guard.c, docs/SECURITY.md),
against a real daemon over real sockets, as another user of the machine
would try it. Run as security_<case> beside tests/test_security.py.

Usage: test_guard.py CASE, CASE one of
  bodies    512 connections without the token, from 8 loopback addresses,
            each sending 1 MiB of a 3 MiB body: the body of a request
            refused on its headers is never kept, so the daemon's peak
            memory stays within max_connections x 64 KiB of its start (it
            grew by 600 MB when bodies were taken before the token was
            judged); once their clients close, their slots are free
            within SLOTS_BACK_S (libmicrohttpd's epoll left them to the
            10 s request deadline: at load 8 a new client waited 7 to 47 s
            and more); a refused client that sends its whole body reads
            its 401, a wrong Content-Type its 415, and one with the token
            is served.
  guesses   wrong tokens from one address: the first 8 answered at once,
            the next later and later (up to auth_retry_delay_ms), while the
            same address with the token and /healthz answer at once, also
            with every MHD worker's request held.
"""
import concurrent.futures
import json
import os
import resource
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_security import PER_CLIENT, raw  # noqa: E402
from tracedtest import Daemon, check, check_eq  # noqa: E402


# ---- bodies before the token ----

BODY_CONNS = 512        # max_connections' default
BODY_DECLARED = 3 << 20
BODY_SENT = 1 << 20
TOKEN = "bodies-token-0123456789abcdef"
# Within this of their clients' close the refused connections' slots are
# free again: under request_timeout_s's default (10 s), which would free
# them whatever the daemon read, with room for a loaded machine (the
# daemon reads and drops the bodies meanwhile: 0.01 s quiet, 0.01 to
# 0.08 s at load 8).
SLOTS_BACK_S = 6


def vm_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def body_attack(port, path, ctype, net):
    """BODY_CONNS sockets, PER_CLIENT from each of 127.0.<net>.2..., each
    sending its headers and BODY_SENT of a BODY_DECLARED body."""
    head = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: %s\r\n"
            "Content-Length: %d\r\n\r\n" % (path, port, ctype,
                                              BODY_DECLARED)).encode()
    chunk = b" " * (64 << 10)
    socks = []
    for i in range(BODY_CONNS):
        s = socket.socket()
        s.settimeout(10)
        s.bind(("127.0.%d.%d" % (net, 2 + i // PER_CLIENT), 0))
        s.connect(("127.0.0.1", port))
        s.sendall(head)
        socks.append(s)
    for _ in range(BODY_SENT // len(chunk)):
        for s in socks:
            s.sendall(chunk)
    return socks


def case_bodies():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < min(hard, 4096):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    with Daemon(conf={"auth_token": TOKEN,
                      "atom_scripts": "/nonexistent"}) as d:
        pid = d.proc.pid
        start = vm_kb(pid, "VmRSS")
        for net, path, ctype in ((0, "/captures", "application/json"),
                                 (1, "/imports", "text/plain")):
            t0 = time.time()
            socks = body_attack(d.port, path, ctype, net)
            sent = time.time() - t0
            time.sleep(1)
            rss = vm_kb(pid, "VmRSS")
            for s in socks:
                s.close()
            closed = time.time()
            print("bodies: %d x %d MiB to %s in %.1f s: daemon VmRSS %.1f "
                  "MB -> %.1f MB, peak %.1f MB" % (
                      BODY_CONNS, BODY_SENT >> 20, path, sent, start / 1024,
                      rss / 1024, vm_kb(pid, "VmHWM") / 1024))
        peak = vm_kb(pid, "VmHWM")
        check(peak - start < BODY_CONNS * 64 + 8 * 1024,
              "peak %d kB from %d kB: refused bodies were kept" % (peak,
                                                                  start))
        # The refused bodies' connections, closed by their clients, free
        # their slots as the daemon reads their ends, not at the request
        # deadline (request_timeout_s, 10 s): a connection the daemon
        # stopped reading (libmicrohttpd's epoll lost it, api/server.c)
        # held its slot until then, and with every slot held a new one
        # waited in the listen queue past a client's 30 s.
        while True:
            try:
                if raw(d, "GET", "/healthz", source="127.0.0.200")[0] == 200:
                    break
            except OSError:
                time.sleep(0.2)
            check(time.time() - closed < 60, "no slot within 60 s")
        took = time.time() - closed
        print("bodies: a new connection served %.2f s after the clients "
              "closed" % took)
        check(took < SLOTS_BACK_S, "the slots came back after %.1f s" % took)
        body = json.dumps({"model": "/m", "tp": 1}).encode() + b" " * 200000
        code, _, out = raw(d, "POST", "/captures", body,
                           {"Content-Type": "application/json"})
        check_eq((code, json.loads(out)["error"]["code"]),
                 (401, "unauthorized"), "a whole body without the token")
        code, _, out = raw(d, "POST", "/captures", body,
                           {"Content-Type": "text/plain",
                            "Authorization": "Bearer " + TOKEN})
        check_eq(code, 415, "a text/plain body with the token: %r" % out)
        code, _, out = raw(d, "GET", "/captures", None,
                           {"Authorization": "Bearer " + TOKEN})
        check_eq(code, 200, "with the token: %r" % out[:200])


# ---- token guesses ----

def timed(d, headers, source="127.0.0.1", path="/captures"):
    t0 = time.time()
    code = raw(d, "GET", path, None, headers, source=source)[0]
    return code, time.time() - t0


def case_guesses():
    wrong = {"Authorization": "Bearer not-the-token"}
    right = {"Authorization": "Bearer " + TOKEN}
    with Daemon(conf={"auth_token": TOKEN,
                      "atom_scripts": "/nonexistent"}) as d:
        took = []
        for _ in range(12):
            code, dt = timed(d, wrong)
            check_eq(code, 401, "a wrong token")
            took.append(dt)
        print("guesses: 401s took %s s" % " ".join("%.2f" % t for t in took))
        check(max(took[:8]) < 0.5, "the first 8 answered at once: %r" % took)
        # The 9th waits 125 ms, each later one twice the one before
        # (api/guard.c). Load only adds to a wait, so each is a floor.
        for k in range(8, 12):
            floor = 0.125 * 2 ** (k - 8) * 0.95
            check(took[k] >= floor, "401 #%d answered after %.3f s, not "
                  "%.3f s or later: %r" % (k + 1, took[k], floor, took))
        # Every MHD worker busy with a held 401 (from 127.0.0.3: loopback
        # counts as one address): the token and /healthz answer at once.
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            held = [pool.submit(timed, d, wrong, "127.0.0.3")
                    for _ in range(8)]
            time.sleep(0.3)
            code, dt = timed(d, right)
            check_eq(code, 200, "with the token")
            check(dt < 0.5, "the token waited %.2f s" % dt)
            code, dt = timed(d, {}, "127.0.0.4", "/healthz")
            check(code == 200 and dt < 0.5, "/healthz waited %.2f s" % dt)
            slow = [f.result() for f in held]
        check(all(c == 401 and t >= 1.5 for c, t in slow),
              "held guesses: %r" % slow)
        check_eq(d.stop(), 0, "a stop with 401s held")


CASES = {"bodies": case_bodies, "guesses": case_guesses}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit("usage: test_guard.py {%s}" % "|".join(CASES))
    CASES[sys.argv[1]]()
    print("ok")

"""Headless Chromium for the dashboard's tests (tests/test_web*.py) and
its screens (scripts/screens.py): Debian's chromium with a fresh profile,
no network of its own (no component updates, no sync, no QUIC), driven
over the DevTools protocol on a pipe. Standard library only."""
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

# Every headless run: no sandbox (root in a container), no GPU, nothing
# fetched by the browser itself.
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"]


# True once the dashboard has drawn its view: #app holds more than a
# heading and nothing in it is still loading.
DRAWN = """(() => {
  const app = document.getElementById('app');
  return !!app && app.textContent.length > 200 &&
    !app.textContent.includes('loading\\u2026');
})()"""
# Charts draw after their data: the last answers land within this.
SETTLE = "new Promise(r => setTimeout(() => r(true), 700))"


def find_chromium():
    return next((p for p in ("/usr/bin/chromium", shutil.which("chromium"))
                 if p and os.access(p, os.X_OK)), None)


def _check(cond, msg):
    if not cond:
        raise AssertionError(msg)


class Browser:
    """Headless chromium driven over the DevTools protocol on a pipe
    (--remote-debugging-pipe: fd 3 in, fd 4 out, each message JSON ending
    in a NUL), standard library only."""

    def __init__(self, chromium):
        import fcntl
        to_child, self._w = os.pipe()
        self._r, from_child = os.pipe()
        # Copies above 3 and 4, so that the child's dup2 cannot clobber.
        hi = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100)
              for fd in (to_child, from_child)]
        os.close(to_child)
        os.close(from_child)
        self.profile = tempfile.mkdtemp(prefix="traced-web-chromium-")
        self.proc = subprocess.Popen(
            [chromium] + HEADLESS + ["--user-data-dir=" + self.profile,
                                     "--remote-debugging-pipe",
                                     "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=lambda: (os.dup2(hi[0], 3), os.dup2(hi[1], 4)))
        for fd in hi:
            os.close(fd)
        self._buf, self._id = b"", 0

    def call(self, method, session=None, **params):
        """The result of method (an error raises)."""
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self._buf:
                chunk = os.read(self._r, 1 << 16)
                _check(chunk, "chromium closed its DevTools pipe")
                self._buf += chunk
            line, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(line)
            if reply.get("id") == self._id:
                _check("error" not in reply, "%s: %r" % (method, reply))
                return reply["result"]

    def page(self, url):
        """A session on a new page showing url."""
        target = self.call("Target.createTarget", url=url)["targetId"]
        return self.call("Target.attachToTarget", targetId=target,
                         flatten=True)["sessionId"]

    def eval(self, session, expr, gesture=False):
        """expr's value in the page (as a click's when gesture)."""
        r = self.call("Runtime.evaluate", session, expression=expr,
                      returnByValue=True, awaitPromise=True,
                      userGesture=gesture)
        _check("exceptionDetails" not in r, "%s: %r" % (expr, r))
        return r["result"].get("value")

    def wait_for(self, session, expr, seconds=60):
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                value = self.eval(session, expr)
            except AssertionError:  # no document yet
                value = None
            if value:
                return value
            time.sleep(0.2)
        _check(False, "never true: " + expr)

    def show(self, session, url, seconds=60):
        """session's page showing the dashboard at url, drawn (the page
        before it left first, so that its content cannot pass)."""
        self.call("Page.navigate", session, url="about:blank")
        self.wait_for(session, "!document.getElementById('app')", 10)
        self.call("Page.navigate", session, url=url)
        self.wait_for(session, DRAWN, seconds)
        self.wait_for(session, SETTLE, 10)
        self.wait_for(session, DRAWN, seconds)

    def viewport(self, session, width, height):
        """The page laid out as a window of width x height CSS pixels."""
        self.call("Emulation.setDeviceMetricsOverride", session, width=width,
                  height=height, deviceScaleFactor=1, mobile=False)

    def screenshot(self, session, path, clip=None):
        """A PNG of the viewport, or of clip {x, y, width, height} (page
        coordinates, beyond the viewport too), written to path."""
        params = {"format": "png"}
        if clip:
            params.update(clip=dict(clip, scale=1),
                          captureBeyondViewport=True)
        data = self.call("Page.captureScreenshot", session, **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def mouse(self, session, x, y):
        """The pointer moved to (x, y) of the viewport."""
        self.call("Input.dispatchMouseEvent", session, type="mouseMoved",
                  x=x, y=y)

    def close(self):
        self.proc.kill()
        self.proc.wait()
        os.close(self._w)
        os.close(self._r)
        shutil.rmtree(self.profile, ignore_errors=True)

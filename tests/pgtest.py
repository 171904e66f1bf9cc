"""A throwaway PostgreSQL cluster for the fleet's tests: Debian's server
binaries (initdb, pg_ctl) run as the `postgres` user (as root) on a private
port, in a temporary folder, with a Unix socket there; TCP on 127.0.0.1
with SCRAM passwords, so that roles and wrong passwords are real. Standard
library only. Tests that need one exit SKIPPED (77) where the server is
not installed (.ci/run installs it: CI runs them all)."""
import glob
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from tracedtest import SKIPPED, free_port

SUPER = "postgres"


def server_bin():
    """The folder of Debian's initdb and pg_ctl (the newest version), or
    None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(found[-1]) if found else None


def need_server():
    """The server's bin folder, or exit SKIPPED saying why."""
    bindir = server_bin()
    if bindir is None:
        print("skipped: no PostgreSQL server here (/usr/lib/postgresql/*/bin"
              "/initdb): apt-get install postgresql (scripts/deps.sh does)")
        sys.exit(SKIPPED)
    return bindir


def _as_owner(cmd):
    """cmd run as the `postgres` user when we are root (initdb refuses
    root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", SUPER, "--"] + cmd
    return cmd


def _chown(path):
    if os.geteuid() == 0:
        pw = pwd.getpwnam(SUPER)
        os.chown(path, pw.pw_uid, pw.pw_gid)


class Cluster:
    """initdb'd and started in a temporary folder; stop() removes it."""

    def __init__(self, top=None, port=None, data=None):
        self.bindir = need_server()
        self.top = top or tempfile.mkdtemp(prefix="traced-pg-")
        os.chmod(self.top, 0o755)
        _chown(self.top)
        self.data = data or os.path.join(self.top, "data")
        self.sock = os.path.join(self.top, "sock")
        self.port = port or free_port()
        self.log = os.path.join(self.top, "postgres-%d.log" % self.port)
        self.running = False
        os.makedirs(self.sock, exist_ok=True)
        _chown(self.sock)

    def bin(self, name):
        return os.path.join(self.bindir, name)

    def run(self, cmd, check=True, **kw):
        p = subprocess.run(_as_owner(cmd), capture_output=True, text=True,
                           **kw)
        if check and p.returncode != 0:
            raise RuntimeError("%s: %s%s" % (" ".join(cmd), p.stdout,
                                             p.stderr))
        return p

    def init(self):
        os.makedirs(self.data, exist_ok=True)
        _chown(self.data)
        os.chmod(self.data, 0o700)
        self.run([self.bin("initdb"), "-D", self.data, "-U", SUPER,
                  "--auth-local=trust", "--auth-host=scram-sha-256",
                  "-E", "UTF8", "--locale=C.UTF-8"])
        return self

    def start(self, extra=()):
        opts = ["-p", str(self.port), "-k", self.sock,
                "-c", "listen_addresses=127.0.0.1",
                "-c", "fsync=off", "-c", "shared_buffers=16MB",
                "-c", "max_connections=60"] + list(extra)
        self.run([self.bin("pg_ctl"), "start", "-w", "-t", "60",
                  "-D", self.data, "-l", self.log, "-o", " ".join(opts)])
        self.running = True
        return self

    def stop(self, mode="fast"):
        if self.running:
            self.run([self.bin("pg_ctl"), "stop", "-w", "-t", "60",
                      "-D", self.data, "-m", mode], check=False)
        self.running = False

    def kill9(self):
        """The postmaster killed with SIGKILL (its children follow)."""
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            pid = int(f.readline())
        os.kill(pid, signal.SIGKILL)
        deadline = time.time() + 30
        while time.time() < deadline:
            alive = subprocess.run(["pgrep", "-f", "-u", SUPER,
                                    "postgres: .*%d" % self.port],
                                   capture_output=True).returncode == 0
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                if not alive:
                    break
            time.sleep(0.1)
        self.running = False

    def remove(self):
        self.stop()
        shutil.rmtree(self.top, ignore_errors=True)

    def dsn(self, db="fleet", user=SUPER, tcp=False, passfile=None):
        """A libpq conninfo: the Unix socket (trust, for the test's own
        super-user) or TCP (SCRAM: the roles' passwords)."""
        host = "127.0.0.1" if tcp else self.sock
        out = "host=%s port=%d dbname=%s user=%s" % (host, self.port, db,
                                                     user)
        if passfile:
            out += " passfile=%s" % passfile
        return out

    def psql(self, sql, db="fleet", user=SUPER, check=True):
        """Rows of sql (tab-separated, unaligned) as lists of strings."""
        p = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-F", "\t",
                            "-v", "ON_ERROR_STOP=1", "-d",
                            self.dsn(db, user), "-c", sql],
                           capture_output=True, text=True)
        if check and p.returncode != 0:
            raise RuntimeError("psql %s: %s" % (sql[:200], p.stderr))
        if not check:
            return p
        return [line.split("\t") for line in p.stdout.splitlines() if line]

    def value(self, sql, db="fleet"):
        rows = self.psql(sql, db)
        return rows[0][0] if rows else None

    def standby(self, port=None):
        """A streaming standby of this cluster (pg_basebackup -R), started
        on a port of its own."""
        sb = Cluster(top=self.top, port=port or free_port(),
                     data=os.path.join(self.top, "standby"))
        sb.sock = self.sock
        self.run(["pg_basebackup", "-D", sb.data, "-R", "-X", "stream",
                  "--checkpoint=fast",
                  "-h", self.sock, "-p", str(self.port), "-U", SUPER])
        os.chmod(sb.data, 0o700)
        return sb.start()


def fleet_cluster():
    """A started cluster with an empty database `fleet`."""
    c = Cluster().init().start()
    c.psql("CREATE DATABASE fleet", db="postgres")
    return c


def passfile(folder, cluster, user, password, db="fleet"):
    """A libpq password file (mode 0600) holding user's password."""
    path = os.path.join(folder, "pgpass-%s" % user)
    with open(path, "w") as f:
        # Any port: the cluster's standby too.
        f.write("127.0.0.1:*:%s:%s:%s\n" % (db, user, password))
    os.chmod(path, 0o600)
    return path

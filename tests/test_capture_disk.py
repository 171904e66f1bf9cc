"""A full disk under the database in the middle of a capture (issue 12):
the capture's state write is refused, retried, and the capture fails in
memory (its GPU slot is not held by a disk); once space is back its final
state is written (failed, never left running), /healthz says ok again and
imports work. Needs root and a tmpfs: exits 77 (skipped) elsewhere."""
import os
import shutil

from test_capture_lib import SMALL, Rig, check, check_eq, run_cases
from tracedtest import fill, post_until_refused, small_disk, wait_for



def full_disk_mid_capture(mnt, root):
    folder = os.path.join(root, "imp")
    os.makedirs(folder)
    shutil.copy(SMALL[0], os.path.join(folder, "t.pt.trace.json.gz"))
    # 2 prompts streaming 40 tokens 0.1 s apart, after 4 warm-ups: the
    # bench runs about 12 s, time to fill the disk before its next write.
    rig = Rig(conf={"db": os.path.join(mnt, "traced.db"),
                    "import_roots": root},
              sim_env={"SIM_MAX_TOKENS": "40", "SIM_TOKEN_S": "0.1"})
    with rig:
        cid = rig.capture(tp=2, osl=40)
        rig.wait_phase(cid, "benchmark")
        filler = fill(mnt)
        code, body, queued = post_until_refused(rig.d, models=rig.models)
        check_eq(code, 507, "a write on the full disk: %r" % (body,))
        check_eq(rig.d.get("/healthz")[1]["status"], "degraded", "healthz")
        # The capture's next write (its move to exporting) is refused; it
        # fails in memory and says so on traced's log.
        wait_for(lambda: "store refuses writes" in rig.d.log_text(), 90,
                 "the capture failed in memory")
        check_eq(rig.get(cid)["status"], "running", "the store lags")
        os.unlink(filler)
        cap = wait_for(lambda: (lambda c: c if c["status"] != "running"
                                else None)(rig.get(cid)), 30,
                       "the final state written")
        check_eq(cap["status"], "failed", "status once space is back")
        check("store refuses writes" in cap["error"]["message"], cap["error"])
        check(cap["finished_at"] is not None, "finished_at")
        for q in queued:
            code, body = rig.d.delete("/captures/%d" % q)
            check(code == 200 and body["status"] == "cancelled",
                  "cancel queued %d: %s %r" % (q, code, body))
        check_eq(rig.d.get("/healthz")[1], {"status": "ok"}, "healthz back")
        code, imp = rig.d.post("/imports", {"path": folder})
        check_eq(code, 202, "import once space is back: %r" % (imp,))
        imp = rig.wait(imp["id"])
        check_eq((imp["status"], imp["phase"]), ("done", "done"), "import")


def main():
    with small_disk() as mnt:
        top = os.path.dirname(mnt)

        def full_disk_mid_capture_case():
            full_disk_mid_capture(mnt, top)

        run_cases([full_disk_mid_capture_case])


if __name__ == "__main__":
    main()

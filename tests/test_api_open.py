"""Open results (issue 10 item 3), against a real daemon over real sockets.

Usage: test_api_open.py CASE, CASE one of
  csv    every route of api/openapi.yaml that declares the format parameter
         answers ?format=csv with RFC 4180 text holding the JSON answer's
         rows, row for row, in order: a header naming the members in the
         order first met, each cell the documented rendering of the JSON
         value (nested values as their JSON text), CRLF records; asked
         with no parameters and with the file's examples, for one rank and
         all ranks, of an import of real traces; every route whose JSON
         answer has rows declares format; a bad format is 400 naming it;
         kept answers keep their type.
"""
import csv
import io
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracedtest import check, check_eq  # noqa: E402
from test_api import (OPENAPI, RANKS_A, RANKS_B, check_error, deref,  # noqa
                      example_query, import_daemon, import_done, lay_out, raw,
                      walk_paths)

CSV_TYPE = "text/csv; charset=utf-8; header=present"


# ---- CSV ----

def columns(rows):
    """Every member of any row, in the order first met."""
    out = []
    for row in rows:
        for k in row:
            if k not in out:
                out.append(k)
    return out


def same_cell(cell, value):
    """True when cell is the documented rendering of the JSON value."""
    if value is None:
        return cell == ""
    if isinstance(value, bool):
        return cell == ("true" if value else "false")
    if isinstance(value, str):
        return cell == value
    if isinstance(value, int):
        return cell == str(value)
    # reals, arrays, objects: their JSON text, read back
    return json.loads(cell) == value


def check_records(body, what):
    """body is CRLF-terminated records (a bare LF only inside quotes)."""
    text = body.decode("utf-8")
    check(text == "" or text.endswith("\r\n"), what + ": no final CRLF")
    quoted = False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif ch == "\n" and not quoted:
            check(i > 0 and text[i - 1] == "\r", "%s: bare LF at %d" % (
                what, i))
    check(not quoted, what + ": unbalanced quotes")
    return text


def check_csv(d, url, what):
    """GET url as JSON and as CSV: the CSV holds the JSON rows."""
    sep = "&" if "?" in url else "?"
    code, hdrs, jbody = raw(d, "GET", url + sep + "format=json")
    check_eq(code, 200, "%s json: %r" % (what, jbody[:300]))
    code2, _, plain = raw(d, "GET", url)
    check_eq((code2, plain), (200, jbody), what + ": format=json is the "
             "default")
    rows = json.loads(jbody)["rows"]
    code, hdrs, cbody = raw(d, "GET", url + sep + "format=csv")
    check_eq(code, 200, "%s csv: %r" % (what, cbody[:300]))
    check_eq(hdrs.get("content-type"), CSV_TYPE, what + ": type")
    text = check_records(cbody, what)
    records = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    if not rows:
        check_eq(records, [], what + ": no rows, empty body")
        return 0
    cols = columns(rows)
    check_eq(records[0], cols, what + ": header")
    check_eq(len(records) - 1, len(rows), what + ": rows")
    for i, (rec, row) in enumerate(zip(records[1:], rows)):
        check_eq(len(rec), len(cols), "%s: row %d width" % (what, i))
        for name, cell in zip(cols, rec):
            check(same_cell(cell, row.get(name)),
                  "%s: row %d %s: %r is not %r" % (what, i, name, cell,
                                                   row.get(name)))
    # Kept answers (done captures) keep their type and bytes.
    code, hdrs, again = raw(d, "GET", url + sep + "format=csv")
    check_eq((code, hdrs.get("content-type"), again), (200, CSV_TYPE, cbody),
             what + ": kept CSV")
    return len(rows)


def has_rows(spec, op):
    """The route's JSON answer is a table (an object with rows)."""
    content = op["responses"]["200"]["content"]
    schema = deref(spec, content.get("application/json", {}).get(
        "schema", {}))
    return "rows" in schema.get("properties", {})


def declares_format(spec, op):
    return any(deref(spec, p)["name"] == "format"
               for p in op.get("parameters", []))


def csv_urls(spec, tmpl, op, common, url, ids):
    """The queries to compare: none (all ranks), the examples (format
    dropped), and the examples without rank."""
    qs = [q for q in example_query(spec, op, common)
          if not q.startswith("format=")]
    if tmpl == "/diff":
        qs = ["a=%d" % ids[0], "b=%d" % ids[1]] + [
            q for q in qs if q[:2] not in ("a=", "b=")]
        variants = [qs, [q for q in qs if not q.startswith("rank=")],
                    qs[:2] + ["by=category"]]
    else:
        variants = [[], qs, [q for q in qs if not q.startswith("rank=")]]
    for q in variants:
        yield url + ("?" + "&".join(q) if q else "")


def case_csv():
    spec = json.load(open(OPENAPI))
    root, d = import_daemon()
    with d:
        a = import_done(d, lay_out(root, "a", RANKS_A))["id"]
        b = import_done(d, lay_out(root, "b", RANKS_B))["id"]
        walked, rows = set(), 0
        for tmpl, op, common, url in walk_paths(spec, (a, b), None):
            if has_rows(spec, op):
                check(declares_format(spec, op),
                      tmpl + ": a table route without format")
            if not declares_format(spec, op):
                continue
            content = op["responses"]["200"]["content"]
            check("text/csv" in content, tmpl + ": text/csv not declared")
            for full in csv_urls(spec, tmpl, op, common, url, (a, b)):
                rows += check_csv(d, full, "GET " + full)
            check_error(d.get(url + "?format=xml"), 400, "format",
                        tmpl + " format=xml")
            walked.add(tmpl)
        check(len(walked) >= 15, "table routes walked: %r" % sorted(walked))
        check(rows > 1000, "rows compared: %d" % rows)
        print("csv: %d routes, %d rows compared" % (len(walked), rows))
    shutil.rmtree(root)


CASES = {"csv": case_csv}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit("usage: test_api_open.py {%s}" % "|".join(CASES))
    CASES[sys.argv[1]]()
    print("ok")

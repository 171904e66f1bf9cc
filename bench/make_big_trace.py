#!/usr/bin/env python3
"""Builds a big kineto trace for bench_index.sh by repeating a real one.

The events of the source trace (kept byte for byte as kineto wrote them)
are written again and again, each copy shifted in time by the source's
span and with its ids (correlation, External id, flow id) moved past the
previous copy's, until the JSON text reaches --min-bytes. The output is
gzip level 6 (gzip(1) in a pipe, so that compression runs on its own
core). A sidecar OUT.facts.json holds the expected event count.

Usage: make_big_trace.py --source TRACE.json.gz --min-bytes N --out OUT
"""
import argparse
import gzip
import json
import re
import subprocess
import sys

# The numbers that must stay distinct or ordered across copies: the time
# stamp (microseconds, 3 decimals or integer) and the ids that link events.
SHIFTED = re.compile(
    rb'"(ts|correlation|External id|id)": *(-?[0-9]+)(\.[0-9]+)?')


def split_events(text):
    """Returns (head, [event bytes...], tail) of a kineto document."""
    s = text.decode('utf-8')
    start = s.index('[', s.find('"traceEvents"')) + 1
    dec = json.JSONDecoder()
    events, pos = [], start
    while True:
        while s[pos] in ' \t\r\n,':
            pos += 1
        if s[pos] == ']':
            break
        _, end = dec.raw_decode(s, pos)
        events.append(s[pos:end].encode('utf-8'))
        pos = end
    return s[:start].encode('utf-8'), events, s[pos:].encode('utf-8')


def template(ev):
    """The event as literal pieces and (kind, value, decimals) slots: ts in
    integer ns, ids as integers (a fraction, if any, stays literal)."""
    parts, last = [], 0
    for m in SHIFTED.finditer(ev):
        parts.append(ev[last:m.start(2)])
        if m.group(1) == b'ts':
            frac = (m.group(3) or b'.')[1:]
            us = int(m.group(2))
            ns = abs(us) * 1000 + int((frac + b'000')[:3])
            parts.append((b'ts', -ns if m.group(2).startswith(b'-') else ns,
                          len(frac)))
            last = m.end()
        else:
            parts.append((b'id', int(m.group(2)), 0))
            last = m.end(2)
    parts.append(ev[last:])
    return parts


def render(parts, dt_ns, did):
    out = []
    for p in parts:
        if isinstance(p, bytes):
            out.append(p)
        elif p[0] == b'ts':
            v = p[1] + dt_ns
            sign, a = (b'-', -v) if v < 0 else (b'', v)
            if p[2] == 0:
                out.append(b'%s%d' % (sign, a // 1000))
            else:
                out.append(b'%s%d.%03d' % (sign, a // 1000, a % 1000))
        else:
            out.append(b'%d' % (p[1] + did))
    return b''.join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True)
    ap.add_argument('--min-bytes', type=int, required=True)
    ap.add_argument('--out', required=True)
    a = ap.parse_args()

    with gzip.open(a.source, 'rb') as f:
        text = f.read()
    head, events, tail = split_events(text)
    temps = [template(e) for e in events]
    ts = [p[1] for t in temps for p in t if not isinstance(p, bytes)
          and p[0] == b'ts']
    ids = [p[1] for t in temps for p in t if not isinstance(p, bytes)
           and p[0] == b'id']
    span_ns = max(ts) - min(ts) + 1000
    id_step = max(ids) + 1 if ids else 0
    per_copy = sum(len(e) for e in events) + 2 * len(events)
    copies = max(1, -(-a.min_bytes // per_copy))

    total = 0
    with open(a.out, 'wb') as out:
        gz = subprocess.Popen(['gzip', '-6', '-c'], stdin=subprocess.PIPE,
                              stdout=out)
        gz.stdin.write(head)
        total += len(head)
        first = True
        for c in range(copies):
            chunk = []
            for t in temps:
                chunk.append(b'\n' if first else b',\n')
                first = False
                chunk.append(render(t, c * span_ns, c * id_step))
            data = b''.join(chunk)
            gz.stdin.write(data)
            total += len(data)
        gz.stdin.write(b'\n' + tail)
        total += len(tail) + 1
        gz.stdin.close()
        if gz.wait() != 0:
            sys.exit('gzip failed')
    facts = {'events': len(events) * copies, 'copies': copies,
             'json_bytes': total}
    with open(a.out + '.facts.json', 'w') as f:
        json.dump(facts, f)
    print(json.dumps(facts))


if __name__ == '__main__':
    main()

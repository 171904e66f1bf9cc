#!/usr/bin/env python3
"""Runs Holistic Trace Analysis' critical path on a trace, for comparison.

Not traced's code and not a copy of HTA's: a driver of HTA's public API
(TraceAnalysis.critical_path_analysis) that prints, per window, the path's
length and the device records whose own span (start to end) is on it, as
JSON. tests/test_cpath_hta.py runs it with an interpreter that has
pandas and networkx (Debian's python3-pandas, python3-networkx) and HTA's
source (--hta-src: the folder that holds the hta package).

Usage: hta_cpath.py --hta-src DIR --trace FILE
                    [--annotation NAME --instances I,J,...]
                    [--zero-launch-edges] [--no-ns-rounding]
Without --annotation: one window over the whole trace (annotation "").
Times are absolute microseconds as HTA holds them (its ts + min_ts).
"""
import argparse
import json
import logging
import os
import shutil
import sys
import tempfile


def records_on_path(g, df, min_ts, edge_type):
    """The device records whose start -> end edge is on the path."""
    out = []
    for e in g.critical_path_edges_set:
        if e.type != edge_type:
            continue
        a, b = g.node_list[e.begin], g.node_list[e.end]
        if a.ev_idx != b.ev_idx or not a.is_start or b.is_start:
            continue
        row = df.loc[a.ev_idx]
        if row['stream'] < 0:
            continue
        name = g.symbol_table.get_sym_table()[row['name']]
        out.append([name, int(row['stream']), float(row['ts'] + min_ts),
                    float(row['ts'] + row['dur'] + min_ts)])
    return sorted(out, key=lambda r: (r[2], r[1], r[0]))


def run(args):
    sys.path.insert(0, args.hta_src)
    if args.zero_launch_edges:
        os.environ['CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE'] = '1'
    if args.no_ns_rounding:
        os.environ['HTA_DISABLE_NS_ROUNDING'] = '1'
    logging.disable(logging.WARNING)
    from hta.analyzers.critical_path_analysis import CPEdgeType
    from hta.trace_analysis import TraceAnalysis

    tmp = tempfile.mkdtemp(prefix='hta_cpath_')
    try:
        dst = os.path.join(tmp, 'rank0.json.gz'
                           if args.trace.endswith('.gz') else 'rank0.json')
        os.symlink(os.path.abspath(args.trace), dst)
        ta = TraceAnalysis(trace_dir=tmp)
        min_ts = ta.t.min_ts
        windows = ([(args.annotation, int(i))
                    for i in args.instances.split(',')]
                   if args.annotation is not None else [('', None)])
        out = []
        for ann, inst in windows:
            row = {'annotation': ann, 'instance': inst, 'ok': False}
            try:
                res = ta.critical_path_analysis(rank=0, annotation=ann,
                                                instance_id=inst)
            except Exception as e:  # HTA fails on a window it cannot find
                row['error'] = '%s: %s' % (type(e).__name__, e)
                out.append(row)
                continue
            if res is not None and res[1]:
                g = res[0]
                row['ok'] = True
                row['length'] = float(sum(
                    e.weight for e in g.critical_path_edges_set))
                row['records'] = records_on_path(
                    g, g.trace_df, min_ts, CPEdgeType.OPERATOR_KERNEL)
                bd = g.get_critical_path_breakdown()
                row['bound_by'] = {str(k): float(v) for k, v in
                                   bd.groupby('bound_by').duration.sum()
                                   .items()}
            out.append(row)
        json.dump({'min_ts': float(min_ts), 'windows': out}, sys.stdout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--hta-src', required=True)
    p.add_argument('--trace', required=True)
    p.add_argument('--annotation')
    p.add_argument('--instances', default='0')
    p.add_argument('--zero-launch-edges', action='store_true')
    p.add_argument('--no-ns-rounding', action='store_true')
    run(p.parse_args())


if __name__ == '__main__':
    main()

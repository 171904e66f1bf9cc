#!/usr/bin/env python3
"""TraceLens's own graph-mode inference report, for bench_decode.sh: the
capture folder merged into the run trace's replays
(merge_capture_trace_into_graph), then its ops summary by parent module
(generate_perf_report_pytorch with group_by_parent_module), as TraceLens's
own tests make it (tests/test_inference_perf_report.py). TraceLens is not
part of traced: this only calls a checkout of it.

Usage: tracelens_report.py TRACELENS_DIR RUN_TRACE CAPTURE_FOLDER OUT_DIR
(OUT_DIR gets ops_summary.csv and TraceLens's other tables)."""
import logging
import os
import sys
import warnings


def main():
    tl_dir, run, caps, out = sys.argv[1:5]
    sys.path.insert(0, tl_dir)
    # Its notes (no orjson; events without kernel time) say nothing here.
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    sys.stdout = open(os.devnull, "w")
    from TraceLens.Reporting.generate_perf_report_pytorch_inference import (
        classify_graph_capture_trace, generate_perf_report_pytorch)
    from TraceLens.Trace2Tree.trace_capture_merge_experimental import \
        merge_capture_trace_into_graph
    classify_graph_capture_trace(caps)
    tree = merge_capture_trace_into_graph(
        caps, os.path.join(caps, "execution_details.json"), run)
    generate_perf_report_pytorch(
        profile_json_path=run, augmented_tree=tree, output_xlsx_path=None,
        output_csvs_dir=out, enable_pseudo_ops=True,
        group_by_parent_module=True, group_by_num_kernels=True,
        collective_analysis=False, include_call_stack=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The op performance models alone (index/perf/, docs/PERF.md) against
TraceLens's own per-op reports: every row of every per-op sheet of
../shared/traces/perf_pairs goes through traced's model of its op, from
the arguments of the row's first instance (Input Dims, Input type, Input
Strides, Concrete Inputs as the report kept them; the inference attention
ops get a vLLM iteration annotation carrying the row's own sq/sk
aggregates). Each must give TraceLens's parameters, its GFLOPS_first and
its Data Moved (MB)_first within 0.1%, or be on docs/PERF.md's list of
rows traced counts otherwise, with a reason that names a model (the
whole-trace test, test_perf_tracelens.py, checks the rest).

Kernel times and counts are the whole-trace test's; the models' own
subjects are work and parameters. A row whose op has no traced model
must be listed too."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tracedtest  # noqa: E402
import tracelens_perf as tlp  # noqa: E402

EVAL = os.environ.get("PERF_EVAL") or os.path.join(
    os.path.dirname(tracedtest.TRACED_BIN), "tests", "perf_eval")


def annotation(p):
    """A vLLM detailed iteration annotation with the row's aggregates."""
    g = [p.get(k, 0) for k in ("c_sq", "c_sk", "c_sqsq", "c_sqsk",
                                "g_sq", "g_sk", "g_sqsq", "g_sqsk")]
    return ("execute_0_context_0(sq%dsk%dsqsq%dsqsk%d)"
            "_generation_0(sq%dsk%dsqsq%dsqsk%d)" % tuple(int(x) for x in g))


def event(r):
    args = {}
    for key, member in (("dims", "Input Dims"), ("types", "Input type"),
                        ("strides", "Input Strides"),
                        ("concrete", "Concrete Inputs")):
        if r[key] is not None:
            args[member] = r[key]
    ev = {"name": r["name"], "args": args}
    if "g_sqsk" in r["params"]:
        ev["annot"] = annotation(r["params"])
    return ev


def differs(r, a):
    """Why traced's model answer a differs from TraceLens's row r, or
    None."""
    if not a.get("model"):
        return "no model"
    if not tlp.same_params(r["params"], a["params"]):
        return "params %s" % json.dumps(a["params"], sort_keys=True)
    if not tlp.close(r["gflops"], a["gflops"], tlp.TOL_WORK):
        return "gflops %r vs %r" % (a["gflops"], r["gflops"])
    mb = None if a["bytes"] is None else a["bytes"] / (1 << 20)
    if not tlp.close(r["data_moved_mb"], mb, tlp.TOL_WORK):
        return "data_moved_mb %r vs %r" % (mb, r["data_moved_mb"])
    return None


# Where aten's conv ops keep stride, padding, dilation, transposed and
# output padding among their Concrete Inputs.
CONV_AT = {"aten::convolution": (3, 4, 5, 6, 7),
           "aten::convolution_backward": (4, 5, 6, 7, 8)}
BIG, MIN = 2**63 - 1, -2**63
ANNOT = ("execute_0_context_0(sq1sk1sqsq1sqsk1)"
         "_generation_0(sq1sk1sqsq1sqsk1)")


def op(name, dims, types=None, concrete=None, strides=None, annot=None):
    """An event of op name with the arguments given."""
    args = {"Input Dims": dims}
    for member, v in (("Input type", types), ("Concrete Inputs", concrete),
                      ("Input Strides", strides)):
        if v is not None:
            args[member] = v
    ev = {"name": name, "args": args}
    if annot:
        ev["annot"] = annot
    return ev


# Ops whose numbers leave int64_t (or divide by 0) in a model's integer
# arithmetic, each with the answer it must get: 0, no answer (the model
# refuses the shape), or None, not checked (only the UB is tested).
FORGED_OPS = (
    # flops_bwd: H_Q // H_KV - 1 with H_Q INT64_MIN (then in double)
    (op("flash_attn::_flash_attn_backward",
        [[1, 1, 1, 1], [1, 1, MIN, 1], [1, 1, 1, 1], [1, 1, 1, 1]],
        ["c10::BFloat16"] * 4, [""] * 11,
        [[], [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]]), None),
    # varlen: cu_seqlens' length - 1 with a length INT64_MIN
    (op("flash_attn::_flash_attn_varlen_forward",
        [[1, 1, 1], [1, 1, 1], [1, 1, 1], [MIN], [2]],
        ["c10::BFloat16"] * 3, ["", "", "", "", "", "1", "1", "0.0", "",
                                "False"],
        [[1, 1, 1], [1, 1, 1], [1, 1, 1], [1], [1]]), 0),
    # EvoformerAttention: B = batch * N_seq
    (op("EvoformerAttention", [[BIG, 2, 1, 1, 1]] * 3,
        ["c10::BFloat16"] * 3), 0),
    # gdn: H_V * d_v, and its quotients
    (op("vllm::gdn_attention_core", [[1, 1], [1, BIG], [1], [1, 1, BIG]],
        ["c10::BFloat16"] * 4, annot=ANNOT), 0),
    (op("vllm::gdn_attention_core", [[1, MIN], [1, 2], [1], [1, 1, 1]],
        ["c10::BFloat16"] * 4, annot=ANNOT), 0),
    # replication_pad: a dimension plus its padding
    (op("aten::replication_pad1d", [[1, 1, BIG]], ["float"],
        ["", "[1, 1]"]), 0),
    # sgl rope: the query and key heads, head // head_size each
    (op("sgl_kernel::rotary_embedding", [[1], [1, BIG], [1, BIG], [], []],
        ["", "c10::BFloat16", "c10::BFloat16"], ["", "", "", "1"]), 0),
    (op("sgl_kernel::rotary_embedding", [[1], [1, MIN], [1, 1], [], []],
        ["", "c10::BFloat16", "c10::BFloat16"], ["", "", "", "-1"]), 0),
    # the fp4 GEMMs: K from a packed dimension, and its MXFP4 scales
    (op("aiter::gemm_a4w4", [[1, BIG], [1, BIG]],
        ["float4_e2m1fn_x2"] * 2), 0),
    (op("aiter::gemm_a4w4", [[1, 2**62 - 1], [1, 2**62 - 1], [1], [1]],
        ["fp4"] * 2 + ["float8_e8m0fnu"] * 2), 0),
    (op("aiter::gemm_afp4wfp4_", [[1, BIG], [1, 1]], ["a", "b"]), 0),
    (op("primus_turbo::hipblaslt_gemm_fp4", [[1, BIG], [], [1, 1]],
        ["a", "b", "c"], ["", "", "", "", "", "False", "False", "False"]),
     0),
    # blockscale: -(-K // scale's K) with K INT64_MIN
    (op("aiter::gemm_a8w8_blockscale_ck", [[1, MIN], [1, MIN], [1, -1],
                                           [1, 1]],
        ["c10::Float8_e4m3fnuz"] * 2 + ["float"] * 2), 0),
    # rmsnorm_quant: channels past int64_t's cast
    (op("aiter::rmsnorm_quant", [[], [2, 4], [], [BIG]],
        ["", "c10::BFloat16", "", "c10::BFloat16"], ["", "", "", "", "",
                                                     "0"],
        [[], [4, 1], [], [1]]), 0),
    # MoE: hidden // N, times the intermediate size, and 2 inter
    (op("aiter::fmoe_g1u1", [[1, 1], [], [1, 1, -1], [1, MIN, 1]],
        ["c10::BFloat16", "", "c10::BFloat16"], [""] * 8 + ["1"]), 0),
    (op("aiter::fmoe_g1u1", [[1, 1], [], [1, 1, 1], [1, BIG, 2]],
        ["c10::BFloat16", "", "c10::BFloat16"], [""] * 8 + ["1"]), 0),
    (op("aiter::ck_moe_stage2", [[1, 1, 1], [1, 1, -1], [1, MIN, 1]],
        ["c10::BFloat16"] * 3), 0),
    (op("aiter::moe_cktile2stages_gemm1_ck", [[1, 1], [1, 1, 1],
                                             [1, 1, BIG]],
        ["c10::BFloat16"] * 3), None),
)


def forged_convs(rows):
    """Conv rows' ops with numbers past int64_t's arithmetic: no answer
    where the output shape leaves int64_t (a padding of INT64_MAX; a
    transposed op with an output padding of INT64_MAX). A dilation of
    INT64_MIN overflows only where the kernel is wider than 1: its answer
    is not checked."""
    for r in rows:
        if r["name"] not in CONV_AT or r["concrete"] is None:
            continue
        _, pad, dil, trans, opad = CONV_AT[r["name"]]
        for forge in ({pad: "[%d, %d]" % (BIG, BIG)},
                      {dil: "[%d, 1]" % MIN},
                      {trans: "True", opad: "[%d, 0]" % BIG}):
            ev = event(r)
            ev["args"]["Concrete Inputs"] = [
                forge.get(i, v) for i, v in enumerate(r["concrete"])]
            yield ev, None if dil in forge else 0


def forged(rows):
    """Forged ops (the conv rows' and FORGED_OPS): under UBSan no
    undefined behaviour (perf_eval would abort), and no answer where a
    shape leaves int64_t."""
    evs, want = zip(*(list(forged_convs(rows)) + list(FORGED_OPS)))
    out = subprocess.run([EVAL], input="".join(json.dumps(e) + "\n"
                                                for e in evs),
                         capture_output=True, text=True, check=True)
    got = [json.loads(line)["model"] for line in out.stdout.splitlines()]
    got = [None if w is None else g for g, w in zip(got, want)]
    assert len(evs) > len(FORGED_OPS) and got == list(want), (
        "forged ops answered: %r" % [
            (e["name"], g) for e, g, w in zip(evs, got, want) if g != w])
    print("%d forged ops: no answer" % len(evs))


def main():
    listed = tlp.documented()
    all_rows = [r for p in tlp.pairs() for r in tlp.rows(p)]
    text = "".join(json.dumps(event(r)) + "\n" for r in all_rows)
    out = subprocess.run([EVAL], input=text, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(out) == len(all_rows), (len(out), len(all_rows))
    bad, ok, on_list = [], 0, 0
    for r, line in zip(all_rows, out):
        why = differs(r, json.loads(line))
        key = tlp.row_key(r)
        if why is None:
            ok += 1
        elif key in listed:
            on_list += 1
        else:
            bad.append("%s %s %s %s: %s" % (key + (why,)))
    print("%d rows: %d as TraceLens, %d on docs/PERF.md's list"
          % (len(all_rows), ok, on_list))
    for b in bad:
        print("DIFFERS", b)
    assert not bad, "%d rows differ and are not listed" % len(bad)
    assert ok > 0.8 * len(all_rows), "most rows must match"
    forged(all_rows)


if __name__ == "__main__":
    main()

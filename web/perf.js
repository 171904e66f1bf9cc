/*
 * traced dashboard, the Perf tab (docs/PERF.md, docs/ANALYSIS.md "Memory",
 * docs/DECODE.md "Sources"): what a trace taken with ATOM_PROFILER_MORE=1
 * says. The op groups on a roofline (log-log: FLOPs per byte against
 * TFLOPS/s, the GPU's bandwidth and compute roofs, one point per group
 * sized by its kernel time, its row on hover) and the time lost to the
 * roof, largest first; each device's memory over time under the step
 * band, its peak and what was live there; the kernel time by the model's
 * source lines. Uses app.js and charts.js; capture.js lists PERF_TABS.
 */
'use strict';

/* Each op category (TraceLens's sheets) by the kernel category of the
 * palette (charts.js) its kernels fall in: one colour per name. */
const OP_CAT_KIND = {GEMM: 'gemm', SDPA_fwd: 'attention',
  SDPA_bwd: 'attention', InferenceAttention_fwd: 'attention',
  CONV_fwd: 'custom', CONV_bwd: 'custom', UnaryElementwise: 'elementwise',
  BinaryElementwise: 'elementwise', Reduce_fwd: 'softmax_topk',
  Normalization: 'normalization', RMSNorm_fwd: 'normalization',
  RoPE_fwd: 'routing', MoE_fused_fwd: 'moe', MoE_unfused_fwd: 'moe'};
const opColor = c => colorOf(OP_CAT_KIND[c] || 'other');
const PERF_LIMIT = 1000;

/* A rate with three significant digits: "312", "4.71", "0.0213". */
function rate(v) {
  if (v == null) return '\u2013';
  return v >= 100 ? v.toFixed(0) : v >= 1 ? v.toPrecision(3)
    : v.toPrecision(3).replace(/0+$/, '');
}

/* A group's parameters, short: its shapes and dtypes as the model named
 * them (the whole JSON in the tooltip). */
function paramsCell(v) {
  let text = v;
  try {
    const p = JSON.parse(v);
    text = Object.keys(p).map(k => k + '=' + JSON.stringify(p[k]))
      .join(' ');
  } catch (e) { /* as it is */ }
  return el('span', {class: 'name params', title: v}, text);
}

/* The peak of compute spec ("matrix_bf16") on roof, or null. */
function peakOf(roof, spec) {
  if (!roof || !spec) return null;
  const [unit, prec] = spec.split('_');
  if (unit === 'matrix') return roof.matrix[prec] || null;
  return prec === 'fp64' ? roof.vec_fp64 : roof.vec_fp32;
}

/* ---- the roofline ---- */

const log10 = Math.log10;

/* Decades [lo, hi] covering values vs, at least two apart. */
function decades(vs, minLo) {
  const ok = vs.filter(v => v > 0);
  let lo = Math.floor(log10(Math.min(...ok)));
  let hi = Math.ceil(log10(Math.max(...ok)));
  if (minLo != null) lo = Math.max(lo, minLo);
  if (hi - lo < 2) { lo -= 1; hi += 1; }
  return [lo, hi];
}

/* rows: ops/perf rows; roof: the rank's gpu_roof (null: none). */
function roofline(rows, roof) {
  const W = 1000, H = 430, L = 70, B = 40, T = 24, R = 10;
  const pts = rows.filter(r => r.flops_per_byte > 0 && r.tflops_s_mean > 0);
  const specs = [...new Set(rows.map(r => r.compute_spec).filter(s =>
    peakOf(roof, s)))].sort((a, b) => peakOf(roof, b) - peakOf(roof, a));
  const peaks = specs.map(s => peakOf(roof, s));
  const [xl, xh] = decades(pts.map(r => r.flops_per_byte).concat(roof
    ? peaks.map(p => p / roof.tb_s) : []));
  const [yl, yh] = decades(pts.map(r => r.tflops_s_mean).concat(peaks), -6);
  const x = v => L + (log10(v) - xl) / (xh - xl) * (W - L - R);
  const y = v => T + (yh - log10(v)) / (yh - yl) * (H - T - B);
  const shapes = [];
  for (let d = xl; d <= xh; d++) {
    shapes.push(svg('line', {x1: x(10 ** d), x2: x(10 ** d), y1: T,
      y2: H - B, class: 'grid'}),
    svg('text', {x: x(10 ** d), y: H - B + 16, class: 'tick',
      'text-anchor': 'middle'}, '1e' + d));
  }
  for (let d = yl; d <= yh; d++) {
    shapes.push(svg('line', {x1: L, x2: W - R, y1: y(10 ** d),
      y2: y(10 ** d), class: 'grid'}),
    svg('text', {x: L - 6, y: y(10 ** d) + 4, class: 'tick',
      'text-anchor': 'end'}, '1e' + d));
  }
  shapes.push(svg('text', {x: (L + W) / 2, y: H - 4, class: 'axis-title',
    'text-anchor': 'middle'}, 'arithmetic intensity (FLOPs / byte)'),
  svg('text', {x: 14, y: (T + H - B) / 2, class: 'axis-title',
    'text-anchor': 'middle', transform: 'rotate(-90 14 ' +
      (T + H - B) / 2 + ')'}, 'TFLOPS/s'));
  if (roof) {
    /* One roof per peak: the specs that share it named together. */
    const byPeak = new Map();
    for (const sp of specs) {
      const p = peakOf(roof, sp);
      byPeak.set(p, (byPeak.get(p) || []).concat(sp.replace('_', ' ')));
    }
    [...byPeak].forEach(([p, names], i) => {
      const ridge = p / roof.tb_s, x0 = 10 ** xl, x1 = 10 ** xh;
      const c = seriesColor(i);
      shapes.push(svg('polyline', {points: [[x0, x0 * roof.tb_s],
        [ridge, p], [x1, p]].map(([a, b]) => x(a) + ',' +
        y(Math.max(b, 10 ** yl))).join(' '), class: 'roof', stroke: c},
      svg('title', null, names.join(', ') + ': ' + p + ' TFLOPS/s, ' +
        roof.tb_s + ' TB/s, ridge at ' + rate(ridge) + ' FLOPs/byte')),
      svg('text', {x: W - R - 4, y: y(p) - 4, class: 'roof-label',
        'text-anchor': 'end', fill: c}, names.join(', ') + ': ' + p +
        ' TFLOPS/s'));
    });
  }
  const most = Math.max(...pts.map(r => r.kernel_us_sum), 1);
  for (const r of pts) {
    const tip = r.op + ' (' + r.category + ')\n' + r.params + '\n' +
      num(r.count) + ' instances, ' + fmtNs(r.kernel_us_sum * 1e3) +
      ' kernel time\n' + rate(r.tflops_s_mean) + ' TFLOPS/s, ' +
      rate(r.tb_s_mean) + ' TB/s at ' + rate(r.flops_per_byte) +
      ' FLOPs/byte' + (r.pct_of_attainable != null ? '\n' +
        r.pct_of_attainable.toFixed(1) + '% of the attainable ' +
        rate(r.attainable_tflops) + ' TFLOPS/s (' + r.bound + ' bound), ' +
        fmtNs(r.lost_us * 1e3) + ' lost to the roof' : '');
    shapes.push(svg('circle', {cx: x(r.flops_per_byte),
      cy: y(r.tflops_s_mean), r: 3 + 17 * Math.sqrt(r.kernel_us_sum / most),
      fill: opColor(r.category), class: 'group', 'data-op': r.op},
    svg('title', null, tip)));
  }
  const lost = rows.reduce((a, r) => a + (r.lost_us || 0), 0);
  const time = rows.reduce((a, r) => a + r.kernel_us_sum, 0);
  const cats = [...new Set(pts.map(r => r.category))].sort();
  const desc = rows.length + ' op groups, ' + pts.length + ' drawn (with ' +
    'time and FLOPs), ' + fmtNs(time * 1e3) + ' of kernel time, ' +
    fmtNs(lost * 1e3) + ' lost to the roof' + (roof ? '. Roof ' +
    roof.name + ': ' + roof.tb_s + ' TB/s; ' + specs.map(s => s + ' ' +
    peakOf(roof, s) + ' TFLOPS/s').join(', ') : '. No roof: the GPU is ' +
    'not in the table and gpu_roof is unset') + '. Largest: ' +
    pts.slice().sort((a, b) => b.kernel_us_sum - a.kernel_us_sum)
      .slice(0, 3).map(r => r.op + ' ' + rate(r.tflops_s_mean) +
        ' TFLOPS/s at ' + rate(r.flops_per_byte) + ' FLOPs/byte').join('; ') +
    '.';
  const fig = figure('roofline', W, H, 'Roofline: the op groups against ' +
    (roof ? roof.name : 'no roof'), desc, [roof ? roof.name : 'no roof',
    roof && roof.source ? ' (' + roof.source + ')' : '',
    ': a point per op group, its area its kernel time; hover for its row'],
  shapes);
  /* Log-log: the picture keeps its proportions, its points round. */
  fig.querySelector('svg').setAttribute('preserveAspectRatio',
    'xMidYMid meet');
  return el('div', {class: 'roofline-chart'}, hover(fig),
    legend(cats.map(c => [c, opColor(c)])));
}

function lostTable(rows) {
  return table([T('op', 'op', nameCell), S('category', 'category'),
    T('parameters', 'params', paramsCell), C('count', 'count'),
    T('kernel time', 'kernel_us_sum', v => nsCell(Math.round(v * 1e3)),
      'num'),
    T('TFLOPS/s', 'tflops_s_mean', rate, 'num'),
    T('TB/s', 'tb_s_mean', rate, 'num'),
    T('FLOPs/byte', 'flops_per_byte', rate, 'num'),
    T('% of attainable', 'pct_of_attainable', v => v == null ? '\u2013'
      : v.toFixed(1) + '%', 'num'),
    S('bound', 'bound'),
    T('lost to the roof', 'lost_us', v => v == null ? '\u2013'
      : nsCell(Math.round(v * 1e3)), 'num')], rows);
}

/* ---- memory ---- */

/* One rank's memory over time: per device the largest Total Allocated of
 * each bucket as a line (the least below it shaded), the largest Total
 * Reserved dashed, the step band of the utilisation timeline above. */
function memoryChart(rank, rows, steps, span) {
  const W = 1000, BAND = 14, H = 160, top = BAND + 6, B = 18;
  const devs = [...new Set(rows.map(r => r.device))];
  const most = Math.max(1, ...rows.map(r => Math.max(r.allocated_max_bytes,
    r.reserved_max_bytes)));
  const end = Math.max(span, ...rows.map(r => r.end_ns), 1);
  const x = t => t / end * W;
  const y = v => top + H - v / most * H;
  const kinds = [...new Set(steps.map(r => r.step).filter(Boolean))].sort();
  const shapes = [];
  for (const r of steps) {
    if (!r.step) continue;
    shapes.push(svg('rect', {x: x(r.start_ns), y: 0, height: BAND,
      width: Math.max(0.3, x(r.end_ns - r.start_ns)),
      fill: kindColor(r.step)}, svg('title', null, 'step ' + r.step)));
  }
  devs.forEach((d, i) => {
    const rs = rows.filter(r => r.device === d);
    const c = seriesColor(i);
    const pts = rs.map(r => [x((r.start_ns + r.end_ns) / 2), r]);
    shapes.push(svg('polygon', {points: pts.map(([px, r]) => px + ',' +
      y(r.allocated_max_bytes)).concat(pts.slice().reverse().map(([px, r]) =>
      px + ',' + y(r.allocated_min_bytes))).join(' '), fill: c,
    class: 'mem-band'}),
    svg('polyline', {points: pts.map(([px, r]) => px + ',' +
      y(r.allocated_max_bytes)).join(' '), stroke: c, class: 'mem-alloc'}),
    svg('polyline', {points: pts.map(([px, r]) => px + ',' +
      y(r.reserved_max_bytes)).join(' '), stroke: c, class: 'mem-res'}));
  });
  shapes.push(svg('text', {x: 2, y: top + 14, class: 'tick'},
    fmtBytes(most)));
  const desc = 'Rank ' + rank + ', ' + devs.length + ' devices over ' +
    exactNs(end) + ' in ' + rows.length + ' buckets: ' + devs.map(d => {
    const rs = rows.filter(r => r.device === d);
    return d + ' allocated up to ' + Math.max(...rs.map(r =>
      r.allocated_max_bytes)) + ' bytes, reserved up to ' +
      Math.max(...rs.map(r => r.reserved_max_bytes)) + ' bytes';
  }).join('; ') + '. Steps: ' + (kinds.join(', ') || 'none') + '.';
  const fig = figure('memory', W, top + H + B, 'Memory over time, rank ' +
    rank, desc, ['rank ', String(rank), ': allocated (line, the bucket\'s ',
    'least shaded below it) and reserved (dashed) under the step band'],
  shapes);
  return el('div', {class: 'memory-chart'},
    hover(withAxis(fig, timeAxis(0, end, 'time from the start')),
      timeReader(0, end, W, t => devs.map(d => {
        const r = rows.find(x => x.device === d && t >= x.start_ns &&
          t < x.end_ns);
        return d + ': ' + (r ? fmtBytes(r.allocated_max_bytes) +
          ' allocated, ' + fmtBytes(r.reserved_max_bytes) + ' reserved'
          : 'no event');
      }))),
    legend(devs.map((d, i) => [d, seriesColor(i)])
      .concat(kinds.map(k => ['step ' + k, kindColor(k)]))));
}

function memoryTables(dev, ops) {
  return [table([S('device', 'device'), B('peak allocated',
    'peak_allocated_bytes'), N('at', 'peak_ns'), S('step then', 'peak_step'),
  B('peak reserved', 'peak_reserved_bytes'), C('allocations', 'allocs'),
  C('frees', 'frees'), B('allocated', 'alloc_bytes'),
  B('never freed', 'never_freed_bytes'),
  C('never freed (count)', 'never_freed_count')], dev),
  el('h4', null, 'Live at the peak, by the op that allocated'),
  el('p', {class: 'muted'}, 'The allocations live when each device ',
    'reached its peak, by the innermost CPU op and module above the ',
    '[memory] event; never freed: still live at the trace\'s end.'),
  table([S('device', 'device'), T('op', 'op', v => v == null
    ? el('span', {class: 'muted'}, '(none)') : nameCell(v)),
  T('module', 'module', v => v == null ? el('span', {class: 'muted'},
    '(none)') : nameCell(v)),
  B('live at the peak', 'peak_live_bytes'),
  C('allocations then', 'peak_live_count'), C('allocations', 'allocs'),
  B('allocated', 'alloc_bytes'), B('never freed', 'never_freed_bytes')],
  ops)];
}

/* ---- the tab ---- */

async function perfTab(c, st, ranks) {
  const numbered = ranks.filter(r => r.rank != null);
  const rank = st.rank !== '' ? Number(st.rank)
    : numbered.length ? numbered[0].rank : null;
  const info = ranks.find(r => r.rank === rank) || ranks[0] || {};
  const q = {rank: st.rank, limit: PERF_LIMIT, q: st.q};
  const one = rank == null ? null : {rank};
  const [perf, dev, tl, steps, ops, src] = await Promise.all([
    get(url('/captures/{id}/ops/perf', {id: c.id}, q)),
    get(url('/captures/{id}/memory', {id: c.id}, {rank: st.rank})),
    one ? get(url('/captures/{id}/memory/timeline', {id: c.id},
      Object.assign({buckets: 256}, one))) : {rows: []},
    one ? get(url('/captures/{id}/timeline', {id: c.id},
      Object.assign({buckets: 256}, one))) : {rows: []},
    get(url('/captures/{id}/memory/ops', {id: c.id}, {rank: st.rank,
      limit: 30})),
    get(url('/captures/{id}/sources', {id: c.id}, {rank: st.rank,
      kind: st.kind, q: st.q, limit: 50}))]);
  const csv = (path, query, name) => el('p', {class: 'small'}, fileLink(
    url(path, {id: c.id}, Object.assign({}, query, {format: 'csv'})),
    'these rows as CSV', name + '-' + c.id + '.csv'));
  const lost = perf.rows.filter(r => r.lost_us != null).slice(0, 25);
  const kinds = [...new Set(src.rows.map(r => r.step).filter(Boolean))];
  return [
    el('p', {class: 'muted'}, 'A trace taken with ATOM_PROFILER_MORE=1 ',
      '(record_shapes, with_stack, profile_memory): each op\'s FLOPs and ',
      'bytes from its recorded shapes, as TraceLens counts them, against ',
      'the GPU\'s datasheet roof; memory over time; kernel time by the ',
      'model\'s source lines.'),
    el('h4', null, 'Op groups against the roof'),
    perf.rows.length ? [roofline(perf.rows, info.gpu_roof),
      el('h4', null, 'Time lost to the roof'),
      el('p', {class: 'muted'}, 'Kernel time beyond what the roof allows ',
        'at each group\'s intensity: where to look first.'),
      lostTable(lost.length ? lost : perf.rows.slice(0, 25)),
      csv('/captures/{id}/ops/perf', q, 'ops-perf')]
      : el('p', {class: 'muted'}, 'No op groups: the trace has no ',
        'recorded shapes (record_shapes) of an op traced has a model of.'),
    el('h4', null, 'Memory'),
    dev.rows.length ? [rank != null && tl.rows.length
      ? memoryChart(rank, tl.rows, steps.rows, info.span_ns || 0) : null,
    memoryTables(dev.rows, ops.rows),
    csv('/captures/{id}/memory', {rank: st.rank}, 'memory')]
      : el('p', {class: 'muted'}, 'No [memory] events: the trace was ',
        'taken without profile_memory.'),
    el('h4', null, 'Kernel time by source line'),
    kinds.length ? el('p', {class: 'muted'}, 'step kinds: ',
      kinds.join(', ')) : null,
    src.rows.some(r => r.source) ? [table([S('step', 'step'),
      T('source', 'source', v => v == null ? el('span', {class: 'muted'},
        '(no frame of the model\'s code)') : nameCell(v)),
      T('module', 'module', v => v == null ? '\u2013' : nameCell(v)),
      C('kernels', 'kernels'), N('total', 'total_ns'),
      N('per step', 'per_step_ns'),
      T('share of the step', 'share', shareCell, 'num')], src.rows),
    csv('/captures/{id}/sources', {rank: st.rank, kind: st.kind},
      'sources')]
      : el('p', {class: 'muted'}, 'No source lines: the trace was taken ',
        'without with_stack, or no frame of it is the model\'s code.')];
}

const PERF_TABS = [{id: 'perf', label: 'Perf', render: perfTab, q: true}];

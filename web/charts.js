/*
 * traced dashboard, the pictures: plain SVG made with the DOM (no library,
 * no build step). Every picture is a <figure> whose <svg role="img"> has a
 * <title> and a <desc> saying the figures it draws in words and exact
 * numbers (what a screen reader reads, and what tests/test_web.py checks),
 * and a visible <figcaption>. viewBox and width 100% keep them readable on
 * a narrow screen; legends wrap. Uses el(), add(), fmtNs() of app.js.
 */
'use strict';

const SVGNS = 'http://www.w3.org/2000/svg';
/* Colours by category: the same as style.css's .cat-* classes. */
const CAT_COLOR = {gemm: '#2563c9', attention: '#7c3aed', moe: '#db2777',
  communication: '#0e7490', custom: '#ea580c', routing: '#ca8a04',
  copy: '#65a30d', memset: '#84cc16', elementwise: '#64748b',
  normalization: '#0891b2', softmax_topk: '#c026d3', sync: '#dc2626',
  other: '#a8a29e'};
const CAUSE_COLOR = {host_late: '#dc2626', sync: '#ea580c',
  collective: '#0e7490', graph_replay: '#7c3aed', between_steps: '#a8a29e',
  other: '#64748b'};
const CAUSES = Object.keys(CAUSE_COLOR);
const KIND_COLORS = ['#2563c9', '#db2777', '#65a30d', '#ca8a04', '#7c3aed',
  '#0891b2', '#ea580c', '#64748b'];

function svg(tag, attrs, ...kids) {
  const n = document.createElementNS(SVGNS, tag);
  for (const k of Object.keys(attrs || {})) {
    if (attrs[k] !== null && attrs[k] !== undefined) n.setAttribute(k, attrs[k]);
  }
  return add(n, kids);
}

const gi = new Intl.NumberFormat('en-US');
/* Exact nanoseconds, for the text alternatives: "1,234,567 ns". */
function exactNs(v) { return gi.format(v) + ' ns'; }

function pct1(a, b) { return b ? (100 * a / b).toFixed(1) + '%' : '0%'; }

let figures = 0;

/* A <figure> around an SVG of width w and height h (viewBox units): title
 * and desc are its text alternative, caption the visible line. */
function figure(cls, w, h, title, desc, caption, ...shapes) {
  const id = 'fig' + (++figures);
  return el('figure', {class: 'chart ' + cls},
    svg('svg', {viewBox: '0 0 ' + w + ' ' + h, role: 'img',
      'aria-labelledby': id + 't ' + id + 'd', preserveAspectRatio: 'none',
      width: '100%', class: cls},
    svg('title', {id: id + 't'}, title), svg('desc', {id: id + 'd'}, desc),
    shapes),
    el('figcaption', null, caption));
}

function legend(entries) {
  return el('div', {class: 'legend'}, entries.map(([name, color]) =>
    el('span', null, el('i', {style: 'background:' + color}), name)));
}

function kindColor(kinds, kind) {
  return KIND_COLORS[kinds.indexOf(kind) % KIND_COLORS.length];
}

/* ---- the utilisation timeline ---- */

/* rows: one rank's /timeline rows; phases: its /phases rows. A stacked
 * area by category (busy share of each bucket), the phases and the step
 * kinds as bands above; idle shows as the white left above the stack. */
function timelineChart(rank, rows, phases) {
  const W = 1000, BAND = 14, H = 120, top = 2 * BAND + 4;
  const end = rows.length ? rows[rows.length - 1].end_ns : 1;
  const x = t => t / end * W;
  const cats = Object.keys(CAT_COLOR).filter(c =>
    rows.some(r => r.by_category[c]));
  const kinds = [...new Set(rows.map(r => r.step).filter(Boolean))].sort();
  const shapes = [];
  let busy = 0;
  const byCat = {};
  for (const r of rows) {
    const w = r.end_ns - r.start_ns;
    let y = top + H;
    busy += r.busy_ns;
    for (const c of cats) {
      const ns = r.by_category[c] || 0;
      if (!ns) continue;
      byCat[c] = (byCat[c] || 0) + ns;
      const hh = w ? ns / w * H : 0;
      y -= hh;
      shapes.push(svg('rect', {x: x(r.start_ns), y, width: x(w) + 0.3,
        height: hh, fill: CAT_COLOR[c]}));
    }
    if (r.step) {
      shapes.push(svg('rect', {x: x(r.start_ns), y: BAND + 2, width: x(w),
        height: BAND - 2, fill: kindColor(kinds, r.step)}));
    }
  }
  for (const p of phases) {
    shapes.push(svg('rect', {x: x(p.start_ns), y: 0,
      width: Math.max(1, x(p.end_ns - p.start_ns)), height: BAND - 2,
      class: 'band ' + p.cause},
    svg('title', null, 'phase ' + p.index + ' (' + p.cause + ')')));
  }
  const span = end;
  const desc = 'Rank ' + rank + ': GPU busy ' + exactNs(busy) + ' of ' +
    exactNs(span) + ' (' + pct1(busy, span) + ') in ' + rows.length +
    ' buckets. By category: ' + (cats.map(c => c + ' ' + exactNs(byCat[c]))
    .join(', ') || 'none') + '. Phases: ' + phases.length + '. Steps: ' +
    (kinds.join(', ') || 'none') + '.';
  return el('div', {class: 'timeline-chart'},
    figure('timeline', W, top + H, 'Utilisation timeline, rank ' + rank,
      desc, ['rank ', String(rank), ': busy ', fmtNs(busy), ' of ',
        fmtNs(span), ' (', pct1(busy, span), '); top band phases, ',
        'second band step kinds'], shapes),
    legend(cats.map(c => [c, CAT_COLOR[c]]).concat(
      [['phase from the start', 'var(--accent)'], ['after an idle gap',
        'var(--good)'], ['at a shape change', 'var(--warn)']],
      kinds.map(k => ['step ' + k, kindColor(kinds, k)]))));
}

/* ---- step-time histograms ---- */

/* bins: one kind's /steps/histogram rows; step: its /steps row. */
function stepHistogram(kind, bins, step) {
  const W = 600, H = 140, pad = 14;
  const lo = bins.length ? bins[0].lo_ns : 0;
  const hi = bins.length ? bins[bins.length - 1].hi_ns : 1;
  const most = Math.max(1, ...bins.map(b => b.count));
  const x = t => (t - lo) / Math.max(1, hi - lo) * W;
  const shapes = bins.map(b => svg('rect', {x: x(b.lo_ns),
    y: H - b.count / most * (H - pad), width: Math.max(1, x(b.hi_ns) -
      x(b.lo_ns) - 1), height: b.count / most * (H - pad), class: 'bin'},
  svg('title', null, exactNs(b.lo_ns) + ' to ' + exactNs(b.hi_ns) + ': ' +
    b.count)));
  for (const [name, v] of [['p50', step.p50_ns], ['p99', step.p99_ns]]) {
    if (v == null) continue;
    shapes.push(svg('line', {x1: x(v), x2: x(v), y1: 0, y2: H,
      class: 'mark ' + name}, svg('title', null, name + ' ' + exactNs(v))));
  }
  const total = bins.reduce((a, b) => a + b.count, 0);
  const desc = kind + ': ' + total + ' steps in ' + bins.length +
    ' bins from ' + exactNs(lo) + ' to ' + exactNs(hi) + '; p50 ' +
    exactNs(step.p50_ns) + ', p99 ' + exactNs(step.p99_ns) + '. Bins: ' +
    bins.map(b => exactNs(b.lo_ns) + ': ' + b.count).join('; ') + '.';
  return figure('histogram', W, H, 'Step times of ' + kind, desc,
    [kind, ': ', String(total), ' steps, ', el('span', {class: 'p50'},
      'p50 ', fmtNs(step.p50_ns)), ', ', el('span', {class: 'p99'}, 'p99 ',
      fmtNs(step.p99_ns))], shapes);
}

/* ---- idle time by cause, one bar per rank ---- */

/* byRank: [[rank, idle_ns, rows of /idle?rank=]]. Each rank's bar is its
 * own picture (its text alternative says that rank's causes); the bars
 * share one scale, the longest idle time. */
function idleBars(byRank) {
  const W = 1000, H = 20;
  const most = Math.max(1, ...byRank.map(([, idle]) => idle));
  const bars = byRank.map(([rank, idle, rows]) => {
    const mine = CAUSES.map(c => rows.find(r => r.cause === c))
      .filter(Boolean);
    let x = 0;
    const shapes = mine.map(r => {
      const w = r.idle_ns / most * W;
      const shape = svg('rect', {x, y: 0, width: w, height: H,
        fill: CAUSE_COLOR[r.cause]}, svg('title', null, r.cause + ': ' +
        exactNs(r.idle_ns)));
      x += w;
      return shape;
    });
    const desc = 'rank ' + rank + ' idle ' + exactNs(idle) + ': ' +
      mine.map(r => r.cause + ' ' + exactNs(r.idle_ns) + ' (' +
        pct1(r.idle_ns, idle) + ')').join(', ') + '.';
    return el('div', {class: 'idle-row'}, el('span', {class: 'lane-name'},
      'rank ' + rank), figure('idle', W, H, 'Idle time of rank ' + rank,
      desc, [fmtNs(idle), ' idle'], shapes));
  });
  return el('div', {class: 'idle-bars'}, bars, el('p', {class: 'muted'},
    'One bar per rank, one scale (the longest: ', fmtNs(most), ').'),
  legend(CAUSES.map(c => [c.replace('_', ' '), CAUSE_COLOR[c]])));
}

/* ---- the critical path (docs/CRITICAL_PATH.md) ---- */

/* What bounds a stretch of the path: the first five make its length, sync
 * and idle are its zero-weight waits. */
const BOUND_COLOR = {cpu: '#ca8a04', gpu: '#2563c9', comm: '#0e7490',
  launch: '#db2777', gap: '#a8a29e', sync: '#ea580c', idle: '#e2e8f0'};
const BOUNDS = Object.keys(BOUND_COLOR);
const LENGTH_BOUNDS = BOUNDS.slice(0, 5);

function boundLegend() {
  return legend(BOUNDS.map(b => [b, BOUND_COLOR[b]]));
}

/* rows: /critical_path/summary. One stacked bar per step kind: the share
 * of its paths' length bound by CPU, kernels, collectives, launch delay
 * and kernel-to-kernel gaps. */
function pathBreakdown(rows) {
  const W = 1000, H = 20;
  const bars = rows.filter(r => r.length_ns > 0).map(r => {
    let x = 0;
    const shapes = LENGTH_BOUNDS.filter(b => r[b + '_ns'] > 0).map(b => {
      const w = r[b + '_ns'] / r.length_ns * W;
      const shape = svg('rect', {x, y: 0, width: w, height: H,
        fill: BOUND_COLOR[b]}, svg('title', null, b + ': ' +
        exactNs(r[b + '_ns'])));
      x += w;
      return shape;
    });
    const desc = r.step + ': critical path ' + exactNs(r.length_ns) +
      ' over ' + r.analyzed + ' steps: ' + LENGTH_BOUNDS.map(b => b + ' ' +
      exactNs(r[b + '_ns']) + ' (' + pct1(r[b + '_ns'], r.length_ns) +
      ')').join(', ') + '; waiting in sync ' + exactNs(r.sync_ns) + '.';
    return el('div', {class: 'idle-row'}, el('span', {class: 'lane-name'},
      r.step), figure('idle', W, H, 'Critical path of ' + r.step +
      ' steps by what bounds it', desc, [fmtNs(r.length_ns), ' over ',
      num(r.analyzed), ' steps'], shapes));
  });
  return el('div', {class: 'idle-bars'}, bars, legend(LENGTH_BOUNDS.map(b =>
    [b, BOUND_COLOR[b]])));
}

/* One picked step's path (its /critical_path rows) over its lanes: a row
 * per host thread and device stream on one time scale, each stretch
 * coloured by what bounds it. */
function pathLanes(title, segs) {
  const W = 1000, H = 14;
  const t0 = Math.min(...segs.map(s => s.from_ns));
  const span = Math.max(1, Math.max(...segs.map(s => s.to_ns)) - t0);
  const lanes = [...new Set(segs.map(s => s.where))].sort();
  return el('div', {class: 'path'}, el('h5', null, title, ' \u00b7 ',
    fmtNs(span)), lanes.map(lane => {
    const mine = segs.filter(s => s.where === lane);
    const shapes = mine.map(s => svg('rect', {x: (s.from_ns - t0) / span * W,
      y: 0, width: Math.max(0.5, (s.to_ns - s.from_ns) / span * W),
      height: H, fill: BOUND_COLOR[s.bound]}, svg('title', null, s.what +
      ' (' + s.bound + ') ' + exactNs(s.to_ns - s.from_ns))));
    const desc = title + ', ' + lane + ': ' + mine.map(s => s.what + ' ' +
      s.bound + ' ' + exactNs(s.to_ns - s.from_ns)).join('; ') + '.';
    return el('div', {class: 'idle-row'}, el('span', {class: 'lane-name',
      title: lane}, lane), figure('idle', W, H, title + ' on ' + lane,
      desc, [String(mine.length), ' stretches'], shapes));
  }));
}

/* ---- signed bars of a diff ---- */

/* A bar for a delta of v ns on the scale of the largest |delta| most:
 * right (red) when B is slower, left (green) when faster. It sits in the
 * delta column, beside its figure: the row is its text. */
function deltaBar(v, most) {
  const w = most ? Math.abs(v) / most * 50 : 0;
  return svg('svg', {viewBox: '0 0 100 10', preserveAspectRatio: 'none',
    class: 'delta', 'aria-hidden': 'true'},
  svg('line', {x1: 50, x2: 50, y1: 0, y2: 10, class: 'axis'}),
  w ? svg('rect', {x: v < 0 ? 50 - w : 50, y: 1, width: w, height: 8,
    class: v > 0 ? 'worse' : 'better'}) : null);
}

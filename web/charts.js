/*
 * traced dashboard, the pictures: plain SVG made with the DOM (no library,
 * no build step). Uses el(), add(), put(), fmtNs(), num() of app.js.
 *
 * For a new tab (a file of its own, loaded after this one in index.html):
 * its {id, label, render(c, st, ranks)} in a list that capture.js's
 * allTabs() joins, its id in scripts/screens.py's TABS and its screen in
 * docs/screens/tab-<id>.png, linked from README.md (test_web_pages
 * screens checks the three). What to use from here:
 *
 * - Colours: colorOf(name) for anything named (a kernel category, an idle
 *   cause, what bounds a critical path): PALETTE below is the one table of
 *   them, so a name has one colour on every page. seriesColor(i) for the
 *   i-th of an ordered series with no name of its own (decode's modules,
 *   a trend's families); bandColor(i) for bands laid over a picture (step
 *   kinds, phases): greys, which no name uses; kindColor(kind) a step
 *   kind's grey. catCell(category) is a
 *   table cell with its colour dot.
 * - figure(cls, w, h, title, desc, caption, ...shapes): a <figure> whose
 *   <svg role="img" viewBox="0 0 w h"> holds the shapes, with a <title>
 *   and a <desc> saying its figures in words and exact numbers (what a
 *   screen reader reads, and what tests/test_web.py checks) and a visible
 *   <figcaption>. It scales to the width (legends wrap).
 * - withAxis(fig, timeAxis(lo, hi, label)): a time axis under it (ticks
 *   in one unit, the unit in its label; every picture over time has one,
 *   tests/test_web_pages.py checks); pctAxis() for shares, paddedAxis()
 *   for a picture with margins, laneAxis() under lanes (a name column,
 *   then the picture); timeTicksY() for times up the left side, ticksY()
 *   for other values.
 * - hover(fig, read): a readout that follows the pointer: read(x, shape)
 *   gets the pointer's x in viewBox units and the shape under it, and
 *   answers the lines to show (the default: the shape's <title>);
 *   timeReader(lo, hi, w) starts each readout with the time at the pointer.
 * - legend([[name, colour]]).
 */
'use strict';

const SVGNS = 'http://www.w3.org/2000/svg';

/* ---- colours: one table ---- */

/* Tableau 20 (Tableau 10's hues, each with its light companion), one
 * colour per name. The thirteen kernel categories come first (the order
 * of the category filter); an idle cause or a bound that means a category
 * is one name with it (ALIAS). A colour not here is not a name's. */
const PALETTE = {
  gemm: '#4e79a7', attention: '#f28e2b', moe: '#b07aa1',
  communication: '#499894', custom: '#9d7660', routing: '#d4a6c8',
  copy: '#59a14f', memset: '#8cd17d', elementwise: '#f1ce63',
  normalization: '#d37295', softmax_topk: '#ffbe7d', sync: '#e15759',
  other: '#bab0ac',
  /* Idle causes and critical-path bounds (docs/ANALYSIS.md,
   * docs/CRITICAL_PATH.md) that are not categories. */
  host: '#b6992d', graph_replay: '#86bcb6', between_steps: '#d7b5a6',
  gpu: '#a0cbe8', launch: '#ff9d9a', gap: '#79706e', idle: '#fabfd2'};
/* Names of other vocabularies that mean one of the table's. */
const ALIAS = {collective: 'communication', comm: 'communication',
  host_late: 'host', cpu: 'host'};
const CATEGORIES = Object.keys(PALETTE).slice(0, 13);
/* The series colours: the palette's, strong hues first. */
const SERIES = ['gemm', 'attention', 'communication', 'moe', 'copy', 'sync',
  'elementwise', 'custom', 'normalization', 'gpu', 'softmax_topk', 'memset',
  'routing', 'graph_replay', 'launch', 'gap', 'host', 'between_steps',
  'idle', 'other'].map(n => PALETTE[n]);
/* Bands over a picture (steps, phases): greys no name of PALETTE uses. */
const BANDS = ['#3a3a3a', '#8f8f8f', '#5f5f5f', '#c9c9c9'];
const IDLE_CAUSES = ['host_late', 'sync', 'collective', 'graph_replay',
  'between_steps', 'other'];

function colorOf(name) {
  return PALETTE[ALIAS[name] || name] || PALETTE.other;
}

function seriesColor(i) { return SERIES[i % SERIES.length]; }

function bandColor(i) { return BANDS[i % BANDS.length]; }

/* A step kind's band: prefill and decode their own grey on every page,
 * any other kind one of the two left, by its name. */
function kindColor(kind) {
  const i = ['prefill', 'decode'].indexOf(kind);
  return bandColor(i >= 0 ? i : 2 + [...String(kind)].reduce((a, ch) =>
    a + ch.charCodeAt(0), 0) % 2);
}

function dot(color) {
  return el('i', {class: 'dot', style: 'background:' + color});
}

/* A category in a table: its colour, then its name. */
function catCell(v) {
  return v == null ? '\u2013' : el('span', {class: 'cat'}, dot(colorOf(v)),
    v);
}

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

/* ---- axes ---- */

const UNITS = [[1, 'ns'], [1e3, '\u00b5s'], [1e6, 'ms'], [1e9, 's']];

/* The unit ns up to most read best in: the largest that most is at
 * least one of (8.4 to 9.4 ms, not 8,400 to 9,400 us). */
function unitOf(most) {
  return UNITS.reduce((u, x) => Math.abs(most) >= x[0] ? x : u, UNITS[0]);
}

/* About n round steps (1, 2 or 5 times a power of ten) over [lo, hi]. */
function ticksOf(lo, hi, n) {
  const raw = Math.max(hi - lo, 1e-9) / n;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(m => m * p).find(s => s >= raw);
  const out = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-6;
    t += step) out.push(Number(t.toPrecision(12)));
  return out;
}

/* An axis over [lo, hi] below a picture as wide as it: ticks placed by
 * their share of the width, labelled in scale's unit [factor, name]. */
function axisOf(lo, hi, label, scale) {
  const [f, unit] = scale;
  const ticks = ticksOf(lo / f, hi / f, 6);
  const at = t => (t * f - lo) / Math.max(hi - lo, 1e-9) * 100;
  return el('div', {class: 'axis', 'data-lo': lo, 'data-hi': hi,
    'data-unit': unit},
  ticks.map(t => el('span', {class: 'tick', style: 'left:' + at(t) + '%'},
    gi.format(t))),
  el('span', {class: 'axis-label'}, label + ' (' + unit + ')'));
}

/* A time axis over [lo, hi] ns. */
function timeAxis(lo, hi, label) {
  return axisOf(lo, hi, label, unitOf(Math.max(Math.abs(lo),
    Math.abs(hi))));
}

/* An axis of shares, 0 to 100%. */
function pctAxis(label) {
  return axisOf(0, 1, label, [0.01, '%']);
}

/* An axis drawn up the left of a picture (values on y): grid lines from
 * x0 to x1 at round ticks of [0, top] placed by y(value), each labelled
 * in one unit ([factor, name]: the value over factor, then the name). */
function ticksY(top, y, x0, x1, scale) {
  const [f, unit] = scale;
  return ticksOf(0, top / f, 4).map(t => [svg('line', {x1: x0, x2: x1,
    y1: y(t * f), y2: y(t * f), class: 'grid'}), svg('text', {x: 2,
    y: y(t * f) - 3, class: 'tick'}, gi.format(t) + ' ' + unit)]);
}

/* ticksY() of times (ns), in the unit top reads best in. */
function timeTicksY(top, y, x0, x1) {
  return ticksY(top, y, x0, x1, unitOf(top));
}

/* axisOf() under a picture whose values [lo, hi] span its width w less
 * left and right (room for its y axis, a margin). */
function paddedAxis(lo, hi, w, left, right, label, scale) {
  const per = (hi - lo) / Math.max(w - left - right, 1);
  return axisOf(lo - left * per, hi + right * per, label, scale);
}

function withAxis(fig, axis) {
  fig.insertBefore(axis, fig.querySelector('figcaption'));
  return fig;
}

/* An axis under lanes (a row of a name and a picture): the name column
 * left empty. */
function laneAxis(axis) {
  return el('div', {class: 'idle-row lane-axis'},
    el('span', {class: 'lane-name'}), axis);
}

/* ---- the hover readout ---- */

function titleOf(shape) {
  const t = shape && [...shape.children].find(k => k.tagName === 'title');
  return t ? t.textContent.split('\n') : [];
}

/* A readout that follows the pointer over fig's picture: read(x, shape)
 * answers its lines (none: hidden), x in viewBox units. */
function hover(fig, read) {
  const pic = fig.querySelector('svg');
  const box = el('div', {class: 'readout', hidden: true});
  const guide = el('div', {class: 'guide', hidden: true});
  fig.classList.add('hovers');
  add(fig, guide, box);
  const hide = () => { box.hidden = true; guide.hidden = true; };
  pic.addEventListener('mousemove', ev => {
    const r = pic.getBoundingClientRect();
    const f = r.left - fig.getBoundingClientRect().left;
    const fx = Math.min(1, Math.max(0, (ev.clientX - r.left) / r.width));
    const under = document.elementFromPoint(ev.clientX, ev.clientY);
    const lines = (read || ((x, s) => titleOf(s)))(
      fx * pic.viewBox.baseVal.width, under && under !== pic &&
      pic.contains(under) ? under : null);
    if (!lines || !lines.length) return hide();
    put(box, lines.map(l => el('div', null, l)));
    box.hidden = guide.hidden = false;
    guide.style.left = (f + fx * r.width) + 'px';
    guide.style.height = r.height + 'px';
    box.style.top = Math.min(r.height, ev.clientY - r.top + 14) + 'px';
    box.style.left = fx < 0.6 ? (f + fx * r.width + 10) + 'px' : '';
    box.style.right = fx < 0.6 ? '' : (r.right - ev.clientX + 10) + 'px';
  });
  pic.addEventListener('mouseleave', hide);
  return fig;
}

/* A reader for a picture of width w over [lo, hi] ns: the time at the
 * pointer, then more(t, shape)'s lines (default: the shape's title). */
function timeReader(lo, hi, w, more) {
  return (x, shape) => {
    const t = lo + x / w * (hi - lo);
    return ['at ' + fmtNs(Math.round(t))].concat(more ? more(t, shape)
      : titleOf(shape));
  };
}

/* ---- the utilisation timeline ---- */

function timelineReadout(rows, phases, cats) {
  return t => {
    const r = rows.find(x => t >= x.start_ns && t < x.end_ns) ||
      rows[rows.length - 1];
    const w = r ? r.end_ns - r.start_ns : 0;
    if (!w) return [];
    const p = phases.find(x => t >= x.start_ns && t < x.end_ns);
    const top = cats.filter(c => r.by_category[c]).sort((a, b) =>
      r.by_category[b] - r.by_category[a]).slice(0, 4);
    return [fmtNs(r.start_ns) + ' to ' + fmtNs(r.end_ns) + ': busy ' +
      pct1(r.busy_ns, w), top.map(c => c + ' ' + pct1(r.by_category[c], w))
      .join(', '), r.step ? 'step ' + r.step : 'outside steps',
    p ? 'phase ' + p.index + ' (' + p.cause + ')' : null].filter(Boolean);
  };
}

/* rows: one rank's /timeline rows; phases: its /phases rows. A stacked
 * area by category (busy share of each bucket), the phases and the step
 * kinds as grey bands above; idle shows as the white left above the
 * stack. */
function timelineChart(rank, rows, phases) {
  const W = 1000, BAND = 14, H = 120, top = 2 * BAND + 4;
  const end = rows.length ? rows[rows.length - 1].end_ns : 1;
  const x = t => t / end * W;
  const cats = CATEGORIES.filter(c => rows.some(r => r.by_category[c]));
  const kinds = [...new Set(rows.map(r => r.step).filter(Boolean))].sort();
  const causes = ['start', 'gap', 'shape'];
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
        height: hh, fill: colorOf(c)}));
    }
    if (r.step) {
      shapes.push(svg('rect', {x: x(r.start_ns), y: BAND + 2,
        width: x(w) + 0.3,
        height: BAND - 2, fill: kindColor(r.step),
        class: 'lane-band'}));
    }
  }
  for (const p of phases) {
    shapes.push(svg('rect', {x: x(p.start_ns), y: 0,
      width: Math.max(1, x(p.end_ns - p.start_ns)), height: BAND - 2,
      fill: bandColor(causes.indexOf(p.cause)), class: 'lane-band ' + p.cause}));
  }
  const span = end;
  const desc = 'Rank ' + rank + ': GPU busy ' + exactNs(busy) + ' of ' +
    exactNs(span) + ' (' + pct1(busy, span) + ') in ' + rows.length +
    ' buckets. By category: ' + (cats.map(c => c + ' ' + exactNs(byCat[c]))
    .join(', ') || 'none') + '. Phases: ' + phases.length + '. Steps: ' +
    (kinds.join(', ') || 'none') + '.';
  const fig = figure('timeline', W, top + H, 'Utilisation timeline, rank ' +
    rank, desc, ['rank ', String(rank), ': busy ', fmtNs(busy), ' of ',
    fmtNs(span), ' (', pct1(busy, span), '); top band phases, ',
    'second band step kinds'], shapes);
  withAxis(fig, timeAxis(0, end, 'time from the rank\'s first event'));
  hover(fig, timeReader(0, end, W, timelineReadout(rows, phases, cats)));
  return el('div', {class: 'timeline-chart', 'data-time': ''}, fig,
    legend(cats.map(c => [c, colorOf(c)])),
    el('div', {class: 'legend bands'}, el('span', null, 'phases (top band):'),
      legend(causes.map((c, i) => [{start: 'from the start',
        gap: 'after an idle gap', shape: 'at a shape change'}[c],
      bandColor(i)])), kinds.length ? [el('span', null,
        'steps (second band):'), legend(kinds.map(k =>
        [k, kindColor(k)]))] : null));
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
      x(b.lo_ns) - 1), height: b.count / most * (H - pad), class: 'bin',
    fill: kindColor(kind)},
  svg('title', null, fmtNs(b.lo_ns) + ' to ' + fmtNs(b.hi_ns) + ': ' +
    b.count + (b.count === 1 ? ' step' : ' steps'))));
  for (const [name, v] of [['p50', step.p50_ns], ['p99', step.p99_ns]]) {
    if (v == null) continue;
    shapes.push(svg('line', {x1: x(v), x2: x(v), y1: 0, y2: H,
      class: 'mark ' + name}, svg('title', null, name + ' ' + fmtNs(v))));
  }
  const total = bins.reduce((a, b) => a + b.count, 0);
  const desc = kind + ': ' + total + ' steps in ' + bins.length +
    ' bins from ' + exactNs(lo) + ' to ' + exactNs(hi) + '; p50 ' +
    exactNs(step.p50_ns) + ', p99 ' + exactNs(step.p99_ns) + '. Bins: ' +
    bins.map(b => exactNs(b.lo_ns) + ': ' + b.count).join('; ') + '.';
  const fig = figure('histogram', W, H, 'Step times of ' + kind, desc,
    [kind, ': ', String(total), ' steps, ', el('span', {class: 'p50'},
      'p50 ', fmtNs(step.p50_ns)), ', ', el('span', {class: 'p99'}, 'p99 ',
      fmtNs(step.p99_ns))], shapes);
  fig.setAttribute('data-time', '');
  withAxis(fig, timeAxis(lo, hi, 'step duration'));
  return hover(fig, (px, shape) => {
    const t = lo + px / W * (hi - lo);
    const b = bins.find(r => t >= r.lo_ns && t < r.hi_ns);
    return ['step time ' + fmtNs(Math.round(t))].concat(titleOf(shape)
      .length ? titleOf(shape) : b ? [fmtNs(b.lo_ns) + ' to ' +
        fmtNs(b.hi_ns) + ': ' + b.count + ' steps'] : []);
  });
}

/* ---- bars of one scale, one per rank or kind ---- */

/* A row of parts [{name, ns, tip}] on a bar of width ns / most; desc its
 * text alternative. */
function partsBar(label, most, parts, title, desc, caption) {
  const W = 1000, H = 20;
  let x = 0;
  const shapes = parts.filter(p => p.ns > 0).map(p => {
    const w = p.ns / most * W;
    const shape = svg('rect', {x, y: 0, width: w, height: H,
      fill: colorOf(p.name)}, svg('title', null, p.tip));
    x += w;
    return shape;
  });
  return el('div', {class: 'idle-row'}, el('span', {class: 'lane-name',
    title: label}, label), hover(figure('idle', W, H, title, desc, caption,
    shapes)));
}

/* byRank: [[rank, idle_ns, rows of /idle?rank=]]. Each rank's bar is its
 * own picture (its text alternative says that rank's causes); the bars
 * share one scale, the longest idle time. */
function idleBars(byRank) {
  const most = Math.max(1, ...byRank.map(([, idle]) => idle));
  const bars = byRank.map(([rank, idle, rows]) => {
    const mine = IDLE_CAUSES.map(c => rows.find(r => r.cause === c))
      .filter(Boolean);
    const desc = 'rank ' + rank + ' idle ' + exactNs(idle) + ': ' +
      mine.map(r => r.cause + ' ' + exactNs(r.idle_ns) + ' (' +
        pct1(r.idle_ns, idle) + ')').join(', ') + '.';
    return partsBar('rank ' + rank, most, mine.map(r => ({name: r.cause,
      ns: r.idle_ns, tip: r.cause.replace('_', ' ') + ': ' +
        fmtNs(r.idle_ns) + ' (' + pct1(r.idle_ns, idle) + ' of idle)'})),
    'Idle time of rank ' + rank, desc, [fmtNs(idle), ' idle']);
  });
  return el('div', {class: 'idle-bars', 'data-time': ''}, bars,
    laneAxis(timeAxis(0, most, 'idle time')),
    legend(IDLE_CAUSES.map(c => [c.replace('_', ' '), colorOf(c)])));
}

/* ---- the critical path (docs/CRITICAL_PATH.md) ---- */

/* What bounds a stretch of the path: the first five make its length, sync
 * and idle are its zero-weight waits. */
const BOUNDS = ['cpu', 'gpu', 'comm', 'launch', 'gap', 'sync', 'idle'];
const LENGTH_BOUNDS = BOUNDS.slice(0, 5);

function boundLegend() {
  return legend(BOUNDS.map(b => [b, colorOf(b)]));
}

/* rows: /critical_path/summary. One stacked bar per step kind: the share
 * of its paths' length bound by CPU, kernels, collectives, launch delay
 * and kernel-to-kernel gaps. */
function pathBreakdown(rows) {
  const bars = rows.filter(r => r.length_ns > 0).map(r => {
    const desc = r.step + ': critical path ' + exactNs(r.length_ns) +
      ' over ' + r.analyzed + ' steps: ' + LENGTH_BOUNDS.map(b => b + ' ' +
      exactNs(r[b + '_ns']) + ' (' + pct1(r[b + '_ns'], r.length_ns) +
      ')').join(', ') + '; waiting in sync ' + exactNs(r.sync_ns) + '.';
    return partsBar(r.step, r.length_ns, LENGTH_BOUNDS.map(b => ({name: b,
      ns: r[b + '_ns'], tip: b + ': ' + fmtNs(r[b + '_ns']) + ' (' +
        pct1(r[b + '_ns'], r.length_ns) + ' of the path)'})),
    'Critical path of ' + r.step + ' steps by what bounds it', desc,
    [fmtNs(r.length_ns), ' over ', num(r.analyzed), ' steps']);
  });
  return el('div', {class: 'idle-bars'}, bars,
    laneAxis(pctAxis('share of the critical path')),
    legend(LENGTH_BOUNDS.map(b => [b, colorOf(b)])));
}

/* One picked step's path (its /critical_path rows) over its lanes: a row
 * per host thread and device stream on one time scale, each stretch
 * coloured by what bounds it. */
function pathLanes(title, segs) {
  const W = 1000, H = 14;
  const t0 = Math.min(...segs.map(s => s.from_ns));
  const span = Math.max(1, Math.max(...segs.map(s => s.to_ns)) - t0);
  const lanes = [...new Set(segs.map(s => s.where))].sort();
  return el('div', {class: 'path', 'data-time': ''}, el('h5', null, title,
    ' \u00b7 ', fmtNs(span)), lanes.map(lane => {
    const mine = segs.filter(s => s.where === lane);
    const shapes = mine.map(s => svg('rect', {x: (s.from_ns - t0) / span * W,
      y: 0, width: Math.max(0.5, (s.to_ns - s.from_ns) / span * W),
      height: H, fill: colorOf(s.bound)}, svg('title', null, s.what +
      ' (' + s.bound + ') ' + fmtNs(s.to_ns - s.from_ns))));
    const desc = title + ', ' + lane + ': ' + mine.map(s => s.what + ' ' +
      s.bound + ' ' + exactNs(s.to_ns - s.from_ns)).join('; ') + '.';
    return el('div', {class: 'idle-row'}, el('span', {class: 'lane-name',
      title: lane}, lane), hover(figure('idle', W, H, title + ' on ' + lane,
      desc, [String(mine.length), ' stretches'], shapes),
    timeReader(0, span, W)));
  }), laneAxis(timeAxis(0, span, 'time from the step\'s start')));
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

/* ---- shares of device time by category ---- */

/* rows: /categories rows. One bar, a part per category, on a 0-100%
 * axis. */
function categoryBar(rows) {
  const W = 1000, H = 24;
  let x = 0;
  const shown = rows.filter(r => r.share > 0);
  const shapes = shown.map(r => {
    const w = r.share * W;
    const s = svg('rect', {x, y: 0, width: w, height: H,
      fill: colorOf(r.category), 'data-category': r.category},
    svg('title', null, r.category + ': ' + pct(r.share, 1) + ' (' +
      fmtNs(r.total_ns) + ')'));
    x += w;
    return s;
  });
  const desc = 'Device time by category: ' + shown.map(r => r.category +
    ' ' + exactNs(r.total_ns)).join(', ') + '.';
  return hover(withAxis(figure('cats', W, H, 'Device time by category',
    desc, 'share of device time; hover a part for its time', shapes),
  pctAxis('share of device time')));
}

/*
 * traced dashboard: sweeps (docs/SWEEPS.md). The list (#/sweeps), one
 * sweep (#/sweeps/<id>: its points, the throughput-latency curve with its
 * knee, the decode step and its largest families against the batch size
 * with their fits, the critical path's host and device sides and where
 * they cross, what stops scaling) and two sweeps compared
 * (#/sweeps/<a>/compare/<b>). Uses el(), add(), put(), table(), badge()
 * of app.js, verdictBadge() of results.js and svg(), figure(), legend(),
 * exactNs() and the palette of charts.js.
 */
'use strict';

/* Families drawn against the batch size beside the step, at most. */
const SWEEP_FAMILIES = 5;

function sweepColor(i) { return seriesColor(i); }

function sweepMs(v) { return v == null ? '\u2013' : v.toFixed(2) + ' ms'; }

function sweepTokS(v) { return v == null ? '\u2013' : num(Math.round(v)); }

function sweepShare(v) { return v == null ? '\u2013' : (100 * v).toFixed(1) + '%'; }

/* ---- pictures ---- */

/* The sweep's TP: its request's, else the one its first point launched
 * with (the model's preset, or ATOM's default: docs/SWEEPS.md). */
function sweepTp(s) {
  if (s.params.tp != null) return num(s.params.tp);
  const out = el('span', null, '\u2013');
  const p = s.points.find(q => q.capture != null);
  if (p && !s.node)
    get(url('/captures/{id}', {id: p.capture})).then(c => {
      if (c.launch && c.launch.tp != null) put(out, num(c.launch.tp));
    }, () => {});
  return out;
}

/* A scale from [lo, hi] to [a, b] of the viewBox. */
function sweepScale(lo, hi, a, b) {
  const span = hi > lo ? hi - lo : 1;
  return v => a + (v - lo) / span * (b - a);
}

/* The throughput-latency curve of one scenario: output tokens/s against
 * the median TPOT, a dot per concurrency, the knee ringed. */
function curveChart(scen, points) {
  const W = 600, H = 240, P = 24, LEFT = 80;
  const ps = points.filter(p => p.isl === scen.isl && p.osl === scen.osl &&
    p.status === 'done' && p.output_throughput != null &&
    p.median_tpot_ms != null);
  const xs = ps.map(p => p.median_tpot_ms);
  const ys = ps.map(p => p.output_throughput);
  const x = sweepScale(Math.min(...xs, 0), Math.max(...xs, 1), LEFT, W - P);
  const top = Math.max(...ys, 1);
  const y = sweepScale(0, top, H - P, P);
  const knee = scen.knee ? scen.knee.conc : null;
  const say = p => 'concurrency ' + p.conc + ': ' + sweepTokS(p.output_throughput) +
    ' output tokens/s, TPOT p50 ' + sweepMs(p.median_tpot_ms) + ', TTFT p50 ' +
    sweepMs(p.median_ttft_ms);
  const shapes = ticksY(top, y, LEFT, W - P, [1, 'tok/s']);
  shapes.push(svg('polyline', {class: 'curve', fill: 'none',
    stroke: sweepColor(0), points: ps.map(p => x(p.median_tpot_ms) + ',' +
      y(p.output_throughput)).join(' ')}));
  for (const p of ps) {
    shapes.push(svg('circle', {cx: x(p.median_tpot_ms),
      cy: y(p.output_throughput), r: p.conc === knee ? 7 : 4,
      class: p.conc === knee ? 'knee' : 'point', fill: sweepColor(0)},
    svg('title', null, say(p))));
    shapes.push(svg('text', {x: x(p.median_tpot_ms) + 6,
      y: y(p.output_throughput) - 6, class: 'label'}, String(p.conc)));
  }
  const desc = 'Output tokens/s against the median time per output token, ' +
    'ISL ' + scen.isl + ', OSL ' + scen.osl + ': ' + ps.map(say).join('; ') +
    '. ' + (knee ? 'The knee: concurrency ' + knee + ' (the next doubling ' +
      'gains ' + scen.knee.gain_pct.toFixed(1) + '%).'
      : 'No knee: it still scales at the largest concurrency.');
  const fig = figure('curve', W, H, 'Throughput against latency, ISL ' +
    scen.isl + ' / OSL ' + scen.osl, desc,
  [knee ? 'knee at concurrency ' + knee : 'no knee', ' \u00b7 x: TPOT p50, ',
    'y: output tokens/s'], shapes);
  const lo = Math.min(...xs, 0) * 1e6, hi = Math.max(...xs, 1) * 1e6;
  fig.setAttribute('data-time', '');
  return hover(withAxis(fig, paddedAxis(lo, hi, W, LEFT, P, 'TPOT p50',
    unitOf(hi))));
}

/* The fitted line of a row over [lo, hi], or its two lines from their
 * break. */
function fitSegments(r, lo, hi) {
  if (r.break_bs == null || r.b1_ns_per_seq == null)
    return [[lo, hi, r.a_ns, r.b_ns_per_seq || 0]];
  return [[lo, r.break_bs, r.a1_ns, r.b1_ns_per_seq],
    [r.break_bs, hi, r.a2_ns, r.b2_ns_per_seq]];
}

/* Rows against the batch size: each one's mean per batch size as dots,
 * its fit as a line (two where it breaks); marks: [[bs, name]]. */
function fitChart(title, rows, marks) {
  const W = 600, H = 240, P = 24, LEFT = 64;
  const lo = Math.min(...rows.map(r => r.bs_min));
  const hi = Math.max(...rows.map(r => r.bs_max));
  const top = Math.max(1, ...rows.map(r => Math.max(...r.by_bs.map(g => g[2]),
    ...fitSegments(r, lo, hi).map(s => s[2] + s[3] * s[1]))));
  const x = sweepScale(lo, hi, LEFT, W - P);
  const y = sweepScale(0, top, H - P, P);
  const shapes = timeTicksY(top, y, LEFT, W - P);
  rows.forEach((r, i) => {
    const c = sweepColor(i);
    for (const [a, b, icpt, slope] of fitSegments(r, r.bs_min, r.bs_max))
      shapes.push(svg('line', {x1: x(a), x2: x(b), y1: y(icpt + slope * a),
        y2: y(icpt + slope * b), stroke: c, class: 'fit'}));
    for (const [bs, n, mean] of r.by_bs)
      shapes.push(svg('circle', {cx: x(bs), cy: y(mean), r: 2.5, fill: c,
        class: 'point'}, svg('title', null, r.name + ' at bs ' + bs + ': ' +
        exactNs(Math.round(mean)) + ' over ' + n + ' steps')));
  });
  for (const [bs, name] of marks || [])
    shapes.push(svg('line', {x1: x(bs), x2: x(bs), y1: 0, y2: H,
      class: 'mark p99'}, svg('title', null, name)));
  const desc = title + ', per decode step against its batch size (' + lo +
    ' to ' + hi + '): ' + rows.map(r => r.name + ' ' + fitText(r)).join('; ') +
    '.' + (marks || []).map(m => ' ' + m[1] + '.').join('');
  return el('div', null, hover(figure('fits', W, H, title, desc,
    [title, ' \u00b7 x: batch size ' + lo + '\u2013' + hi + ', y: time per ',
      'decode step'], shapes)),
  legend(rows.map((r, i) => [r.name, sweepColor(i)])));
}

function fitText(r) {
  const line = exactNs(Math.round(r.a_ns)) + ' + ' +
    (r.b_ns_per_seq == null ? '?' : Math.round(r.b_ns_per_seq)) +
    ' ns per sequence' + (r.r2 == null ? '' : ', r\u00b2 ' + r.r2.toFixed(3));
  return r.break_bs == null ? line : line + '; breaks at bs ' + r.break_bs +
    ': ' + Math.round(r.b1_ns_per_seq) + ' then ' +
    Math.round(r.b2_ns_per_seq) + ' ns per sequence';
}

/* ---- tables ---- */

function pointsTable(points) {
  return table([
    T('conc', 'conc', num, 'num'), T('ISL/OSL', null, p => p.isl + '/' +
      p.osl),
    T('capture', null, p => p.capture_node ? el('a', {href: '#/captures/' +
      p.capture_node + ':' + p.capture}, p.capture_node + ':' + p.capture)
      : el('a', {href: '#/captures/' + p.capture}, '#' + p.capture)),
    T('status', 'status', badge), T('tokens/s', 'output_throughput', sweepTokS,
      'num'),
    T('TTFT p50', 'median_ttft_ms', sweepMs, 'num'),
    T('TTFT p99', 'p99_ttft_ms', sweepMs, 'num'),
    T('TPOT p50', 'median_tpot_ms', sweepMs, 'num'),
    T('TPOT p99', 'p99_tpot_ms', sweepMs, 'num'),
    T('decode samples', 'decode_samples', num, 'num'),
    T('bs mean', 'bs_mean', v => v == null ? '\u2013' : v.toFixed(1), 'num'),
    T('launch-bound', 'launch_bound_share', sweepShare, 'num'),
    T('error', 'error', v => v || '')], points);
}

function stopsTable(scen) {
  return table([T('family', 'name', nameCell),
    T('share at smallest bs', 'share_lo', sweepShare, 'num'),
    T('share at largest bs', 'share_hi', sweepShare, 'num'),
    T('growth', 'growth', v => (100 * v).toFixed(1) + ' pp', 'num')],
  scen.stops_scaling);
}

function fitsTable(rows) {
  return table([T('figure', 'figure'), T('name', 'name', nameCell),
    T('samples', 'n', num, 'num'), T('bs', null, r => r.bs_min + '\u2013' +
      r.bs_max),
    T('a', 'a_ns', v => fmtNs(Math.round(v)), 'num'),
    T('b per sequence', 'b_ns_per_seq', v => v == null ? '\u2013'
      : fmtNs(Math.round(v)), 'num'),
    T('r\u00b2', 'r2', v => v == null ? '\u2013' : v.toFixed(3), 'num'),
    T('breaks at', 'break_bs', num, 'num'),
    T('b below / above', null, r => r.break_bs == null ? ''
      : fmtNs(Math.round(r.b1_ns_per_seq)) + ' / ' +
        fmtNs(Math.round(r.b2_ns_per_seq)))], rows);
}

/* ---- one scenario ---- */

function scenarioView(scen, sc) {
  const mine = sc.rows.filter(r => r.isl === scen.isl && r.osl === scen.osl);
  const find = (f, n) => mine.find(r => r.figure === f && r.name === n);
  const step = find('step', 'decode');
  const fams = scen.stops_scaling.slice(0, SWEEP_FAMILIES)
    .map(s => find('family', s.name)).filter(Boolean);
  const host = find('path', 'host');
  const dev = find('path', 'device');
  const cross = scen.crossover_bs;
  return el('section', null,
    el('h3', null, 'ISL ' + scen.isl + ' / OSL ' + scen.osl),
    el('div', {class: 'charts'}, curveChart(scen, sc.points),
      step ? fitChart('Decode step and its largest families',
        [step].concat(fams)) : null,
      host && dev ? fitChart('Decode critical path: host and device',
        [host, dev], cross == null ? [] : [[cross,
          'launch-bound below bs ' + cross.toFixed(1) +
          ', compute-bound above']]) : null),
    el('p', null, cross != null ? 'Decode crosses from launch-bound to ' +
      'compute-bound at batch size ' + cross.toFixed(1) + '.'
      : scen.launch_bound_at_max ? 'Decode stays launch-bound up to the ' +
        'largest batch sampled.' : scen.launch_bound_at_min === false
        ? 'Decode is compute-bound from the smallest batch sampled.' : ''),
    el('h4', null, 'What stops scaling'), stopsTable(scen),
    idleLine(find('idle', 'decode')),
    el('h4', null, 'Fits'), fitsTable(mine));
}

function idleLine(r) {
  return r ? el('p', null, 'Idle per decode step: ' + fitText(r) + '.')
    : null;
}

/* ---- views ---- */

/* This node's sweeps; on a lab view (fleet.js) also the fleet's, as
 * their published points make them. */
function sweepListView(app) {
  const g = gen;
  const box = el('div');
  const fleet = el('div');
  add(app, el('h2', null, 'Sweeps'), box, fleet);
  get(url('/sweeps', {}, {limit: LIST_PAGE})).then(d => {
    if (g !== gen) return;
    put(box, table([
      T('id', 'id', v => el('a', {href: '#/sweeps/' + v}, '#' + v), 'num'),
      T('label', 'label', v => v || ''),
      T('model', null, s => s.params.model),
      T('concurrencies', null, s => s.params.conc.join(', ')),
      T('status', 'status', badge),
      T('points done', null, s => s.points_done + ' / ' + s.points_total),
      T('created', 'created_at', when)], d.sweeps));
  }).catch(e => put(box, errorBox(e)));
  labView().then(lab => lab && get(url('/fleet/sweeps', {},
    {limit: LIST_PAGE}))).then(d => {
    if (!d || g !== gen) return;
    put(fleet, el('h3', null, 'Sweeps of the fleet'), table([
      T('sweep', 'ref', v => el('a', {href: '#/sweeps/' + v}, v)),
      T('model', 'model', v => v || '\u2013'),
      T('concurrencies', 'conc', v => v.join(', ')),
      T('points done', null, s => s.points_done + ' / ' +
        s.points_published)], d.sweeps));
  }).catch(e => put(fleet, errorBox(e)));
}

function sweepView(app, id) {
  const g = gen;
  const head = el('div');
  const body = el('div');
  add(app, head, body);
  const cancel = async () => {
    await call('DELETE', url('/sweeps/{sweep}', {sweep: id}));
    route();
  };
  Promise.all([get(url('/sweeps/{sweep}', {sweep: id})),
    get(url('/sweeps/{sweep}/scaling', {sweep: id}))]).then(([s, sc]) => {
    if (g !== gen) return;
    /* A sweep of the fleet (a lab view) is what its published points
     * say: no request, nothing to cancel. */
    put(head, el('h2', null, 'Sweep ' + (s.node ? s.ref : '#' + id) + ' ',
      badge(s.status), ' ', FINAL.includes(s.status) ? null
        : el('button', {onclick: cancel}, 'cancel')),
    s.params ? el('p', null, s.params.model, ' \u00b7 TP ', sweepTp(s),
      ' \u00b7 concurrencies ', s.params.conc.join(', '),
      s.params.scenario ? ' \u00b7 scenario ' + s.params.scenario : '',
      s.error ? el('span', {class: 'bad'}, ' \u00b7 ' + s.error.message)
        : '') : el('p', null, 'node ' + s.node + ': its published points'));
    put(body, el('h3', null, 'Points'), pointsTable(sc.points),
      sc.scenarios.map(scen => scenarioView(scen, sc)));
    if (!FINAL.includes(s.status)) later(route, 3000);
  }).catch(e => put(body, errorBox(e)));
}

function sweepCompareView(app, a, b) {
  const g = gen;
  const box = el('div');
  add(app, el('h2', null, 'Sweep ', el('a', {href: '#/sweeps/' + a}, '#' + a),
    ' against ', el('a', {href: '#/sweeps/' + b}, '#' + b)), box);
  get(url('/sweeps/{sweep}/compare', {sweep: a}, {to: b})).then(d => {
    if (g !== gen) return;
    put(box, el('h3', null, 'Points'), table([
      T('conc', 'conc', num, 'num'), T('ISL/OSL', null, p => p.isl + '/' +
        p.osl),
      T('verdict', null, p => verdictBadge({verdict: p.verdict,
        baseline: p.b_capture})),
      T('tokens/s', 'a_output_throughput', sweepTokS, 'num'),
      T('against', 'b_output_throughput', sweepTokS, 'num'),
      T('diff', null, p => el('a', {href: '#/diff/' + p.b_capture + '/' +
        p.a_capture}, '#' + p.b_capture + ' \u2192 #' + p.a_capture))],
    d.points),
    el('h3', null, 'Slopes'), table([T('ISL/OSL', null, r => r.isl + '/' +
      r.osl), T('figure', 'figure'), T('name', 'name', nameCell),
    T('b per sequence', 'a_b_ns_per_seq', v => v == null ? '\u2013'
      : fmtNs(Math.round(v)), 'num'),
    T('against', 'b_b_ns_per_seq', v => v == null ? '\u2013'
      : fmtNs(Math.round(v)), 'num'),
    T('ratio', 'ratio', v => v == null ? '\u2013' : v.toFixed(2) + '\u00d7',
      'num')], d.slopes));
  }).catch(e => put(box, errorBox(e)));
}

/* #/sweeps, #/sweeps/<id>, #/sweeps/<a>/compare/<b>: the view, or null. */
function sweepRoute(app, path) {
  let m = /^\/sweeps\/?$/.exec(path);
  if (m) return sweepListView(app) || true;
  m = /^\/sweeps\/(\d+|[\w.-]+:\d+)\/?$/.exec(path);
  if (m) return sweepView(app, idOf(m[1])) || true;
  m = /^\/sweeps\/(\d+)\/compare\/(\d+)\/?$/.exec(path);
  if (m) return sweepCompareView(app, Number(m[1]), Number(m[2])) || true;
  return null;
}

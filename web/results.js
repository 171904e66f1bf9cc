/*
 * traced dashboard, across ranks and across runs (docs/ANALYSIS.md): the verdict
 * badge of the list and the capture page, the verdict with its reasons
 * and changes (and the baseline pin), and the Collectives tab: who held
 * the others back (a bar per rank), a rank x time picture of how late
 * each rank arrived, the worst instances and the per-family figures.
 * Uses app.js and charts.js; capture.js lists RESULT_TABS.
 */
'use strict';

/* ---- verdicts ---- */

/* The list's and the head's badge: {verdict, baseline} of the capture
 * object (null: none). */
function verdictBadge(v) {
  if (!v) return '\u2013';
  return el('span', {class: 'verdict ' + v.verdict,
    title: v.baseline ? 'against #' + v.baseline : 'no baseline'},
  v.verdict);
}

/* names: the demangled kernel names of the capture (a kernel figure's
 * name as the Kernels tab shows it). */
const changeCols = names => [S('figure', 'figure'),
  T('name', 'name', (v, r) => r.figure === 'kernel' ? readable(names)(v)
    : nameCell(v)),
  N('baseline', 'baseline'), N('this run', 'value'),
  T('change', 'delta_pct', (v, r) => v == null ? (r.value == null ? 'gone'
    : 'new') : (v > 0 ? '+' : '') + v.toFixed(1) + '%', 'num'),
  T('like for like', 'diff_pct', (v, r) => v == null ? '' : signedPct(v) +
    ' [' + signedPct(r.ci_pct[0]) + ', ' + signedPct(r.ci_pct[1]) + ']',
  'num'),
  T('band', 'band_pct', v => '\u00b1' + v.toFixed(1) + '%', 'num'),
  T('from', 'band_note', v => v || ''),
  T('', 'change', v => el('span', {class: 'verdict ' + v}, v))];

/* The verdict in one line under a capture's head: its word, then the
 * changes that made it (else its first reason), against which run. */
function verdictLine(c) {
  const line = el('p', {class: 'verdict-line'}, 'Verdict ',
    verdictBadge(c.verdict));
  Promise.all([get(url('/captures/{id}/verdict', {id: c.id})),
    kernelNames(c.id)]).then(([v, names]) => {
    const top = v.changes.filter(f => f.change !== 'unchanged').slice(0, 3);
    const what = f => [f.figure, ' ', el('code', null, f.figure === 'kernel'
      ? names.get(f.name) || f.name : f.name), ' ', f.delta_pct == null
      ? (f.value == null ? 'gone' : 'new') : signedPct(f.delta_pct)];
    add(line, ': ', top.length ? top.map((f, i) => [i ? '; ' : '', what(f)])
      : (v.reasons[0] || {}).message || '', v.baseline ? [' \u00b7 against ',
      el('a', {href: '#/captures/' + (v.baseline_node ? v.baseline_node +
        ':' : '') + v.baseline}, '#' + v.baseline)] : null,
    ' \u00b7 ', el('a', {href: '#verdict', onclick: ev => {
      ev.preventDefault();
      const box = document.getElementById('verdict');
      if (box) box.scrollIntoView();
    }}, 'details'));
  }, e => add(line, ': ', e.message));
  return line;
}

/* ---- the forest plot of a verdict ---- */

const FOREST_ROWS = 8;

function signedPct(v) {
  return (v > 0 ? '+' : '') + v.toFixed(1) + '%';
}

/* One figure's row: its difference (a dot) with its interval (a line) on
 * a scale of +-range percent, its band shaded around zero. */
function forestRow(f, range, names) {
  const W = 1000, H = 22, x = p => W / 2 + p / range * (W / 2 - 20);
  const lo = f.ci_pct[0], hi = f.ci_pct[1];
  const desc = f.figure + ' ' + f.name + ': ' + signedPct(f.diff_pct) +
    ' (interval ' + signedPct(lo) + ' to ' + signedPct(hi) + '), band \u00b1' +
    f.band_pct.toFixed(1) + '% (' + f.band_source + '), ' + f.change +
    '; scale \u00b1' + range.toFixed(1) + '%.';
  const name = f.figure === 'kernel' && names.get(f.name) || f.name;
  return el('div', {class: 'forest-row'},
    el('span', {class: 'lane-name', title: f.name}, f.figure + ' ',
      nameCell(name)),
    hover(figure('forest', W, H, f.figure + ' ' + f.name, desc,
      [signedPct(f.diff_pct), ' [', signedPct(lo), ', ', signedPct(hi), ']',
        f.band_note ? ' \u00b7 ' + f.band_note : ''],
      svg('rect', {x: x(-f.band_pct), y: 0, width: x(f.band_pct) -
        x(-f.band_pct), height: H, class: 'band'}),
      svg('line', {x1: x(0), x2: x(0), y1: 0, y2: H, class: 'axis'}),
      svg('line', {x1: x(lo), x2: x(hi), y1: H / 2, y2: H / 2,
        class: 'ci ' + f.change}),
      svg('circle', {cx: x(f.diff_pct), cy: H / 2, r: 5,
        class: 'est ' + f.change})), () => [name + ': ' +
      signedPct(f.diff_pct), 'interval ' + signedPct(lo) + ' to ' +
      signedPct(hi), 'noise band \u00b1' + f.band_pct.toFixed(1) + '% (' +
      f.band_source + ')', f.change]));
}

/* The top changes (else the figures that came nearest) as a forest plot:
 * every row on one scale, wide enough for every interval and band. */
function forestPlot(v, names) {
  const rows = (v.changes.length ? v.changes : v.figures || [])
    .filter(f => f.ci_pct).slice(0, FOREST_ROWS);
  if (!rows.length) return null;
  const range = 1.1 * Math.max(...rows.map(f => Math.max(Math.abs(f.ci_pct[0]),
    Math.abs(f.ci_pct[1]), f.band_pct)));
  return el('div', {class: 'forest'},
    el('h4', null, v.changes.length ? 'Changes' : 'Nearest figures',
      ': difference and interval, band shaded'),
    rows.map(f => forestRow(f, range, names)),
    laneAxis(axisOf(-range, range, 'difference', [1, '%'])));
}

/* What the verdict's noise was estimated from (docs/VERDICTS.md): each
 * step's sample and each figure's per-step values, as CSV. */
function sampleLinks(c) {
  const csv = (path, name) => fileLink(url(path, {id: c.id},
    {format: 'csv'}), name, name.replace(/ /g, '-') + '-' + c.id + '.csv');
  return el('p', {class: 'small'}, 'The steps sampled: ',
    csv('/captures/{id}/steps/samples', 'step samples'), ' \u00b7 ',
    csv('/captures/{id}/steps/samples/figures', 'sample figures'));
}

/* The verdict of capture c: its reasons, what changed beyond the band,
 * the baseline (a link, and a compare link), and the pin. */
function verdictBox(c) {
  const box = el('div', {class: 'verdict-box', id: 'verdict'});
  async function load() {
    let v, names;
    try {
      [v, names] = await Promise.all([get(url('/captures/{id}/verdict',
        {id: c.id})), kernelNames(c.id)]);
    } catch (e) {
      put(box, errorBox(e));
      return;
    }
    /* In a lab view the baseline may be another node's: node:id. */
    const base = v.baseline_node ? v.baseline_node + ':' + v.baseline
      : v.baseline;
    put(box, el('h3', null, 'Verdict ', verdictBadge(v)),
      el('p', {class: 'meta'}, v.baseline
        ? ['against ', el('a', {href: '#/captures/' + base},
          '#' + base), ' (', v.baseline_source, ') \u00b7 ',
        el('a', {href: '#/diff/' + base + '/' + c.id},
          'compare'), ' \u00b7 ']
        : null, num(v.compared), ' figures compared; a change counts ',
      'beyond \u00b1', String(v.threshold_pct), '% and its own noise band',
      v.history && v.history.captures ? ' \u00b7 ' + v.history.captures +
        ' earlier captures of this configuration' + (v.history.captures < 3
        ? ' (3 widen a band)' : '') : '', ' ',
      c.node ? null : el('button', {onclick: () => pin(!v.pinned)}, v.pinned
        ? 'unpin as baseline' : 'pin as baseline of this configuration')),
      el('ul', {class: 'reasons'}, v.reasons.map(r => el('li', null,
        el('code', null, r.code), ' ', r.message))),
      forestPlot(v, names),
      v.changes.length ? table(changeCols(names), v.changes) : null,
      sampleLinks(c));
  }
  async function pin(on) {
    try {
      await call(on ? 'PUT' : 'DELETE', url('/captures/{id}/baseline',
        {id: c.id}));
    } catch (e) {
      window.alert(e.message);
    }
    load();
  }
  load();
  return box;
}

/* ---- collectives ---- */

const COLL_NOTE = 'The k-th collective of a kernel family on a stream of ' +
  'every rank is one collective. Wait: from a rank\'s start to the last ' +
  'rank\'s arrival; transfer: the rest of it. Exposed: collective time ' +
  'with no compute kernel running on the rank. Held the others back: ' +
  'when a rank arrived last, the others\' waits.';

/* One bar per rank, one scale: how long it held the others back. */
function heldBars(rows) {
  const W = 1000, H = 18;
  const most = Math.max(1, ...rows.map(r => r.held_ns));
  return el('div', {class: 'held-bars', 'data-time': ''}, rows.map(r => {
    const w = r.held_ns / most * W;
    const desc = 'rank ' + r.rank + ' arrived last ' + gi.format(r.last) +
      ' times of ' + gi.format(r.matched) + ' and held the others back ' +
      exactNs(r.held_ns) + '; it waited ' + exactNs(r.wait_ns) + '.';
    return el('div', {class: 'idle-row'}, el('span', {class: 'lane-name'},
      'rank ' + r.rank), hover(figure('held', W, H, 'Rank ' + r.rank +
      ' held the others back', desc, [fmtNs(r.held_ns), ' held, last ',
      num(r.last), '\u00d7'], svg('rect', {x: 0, y: 0, width: w, height: H,
      fill: colorOf('communication')}, svg('title', null, 'rank ' + r.rank +
        ' held the others back ' + fmtNs(r.held_ns) + ', arriving last ' +
        num(r.last) + ' of ' + num(r.matched) + ' times')))));
  }), laneAxis(timeAxis(0, most, 'time the others waited for the rank')));
}

/* The rank x time picture: a strip per rank, a cell per time bin, darker
 * the later the rank arrived on average (its start minus the first
 * arrival); one scale for all. */
function skewMap(rows, ranks, span) {
  /* 256 equal bins over the capture's span (api/openapi.yaml). */
  const bins = 256;
  const W = 1000, H = 24;
  const late = r => r.instances ? r.late_ns / r.instances : 0;
  const most = Math.max(1, ...rows.map(late));
  const strips = ranks.map(rank => {
    const mine = rows.filter(r => r.rank === rank);
    const n = mine.reduce((a, r) => a + r.instances, 0);
    const l = mine.reduce((a, r) => a + r.late_ns, 0);
    const cells = mine.map(r => svg('rect', {x: r.bin / bins * W, y: 0,
      width: Math.max(W / bins, 1), height: H, class: 'skew',
      fill: colorOf('communication'),
      'fill-opacity': (0.08 + 0.92 * late(r) / most).toFixed(3)},
    svg('title', null, fmtNs(r.start_ns) + ': ' + r.instances +
      ' collectives, ' + fmtNs(Math.round(late(r))) + ' late on average, last ' +
      r.last + '\u00d7')));
    const desc = 'rank ' + rank + ' ' + exactNs(n ? Math.round(l / n) : 0) +
      ' late on average over ' + gi.format(n) + ' collectives.';
    return el('div', {class: 'idle-row'}, el('span', {class: 'lane-name'},
      'rank ' + rank), hover(figure('skew', W, H, 'How late rank ' + rank +
      ' arrived at its collectives, over time', desc,
      [fmtNs(n ? Math.round(l / n) : 0), ' late on average'], cells),
    timeReader(0, span, W)));
  });
  return el('div', {class: 'skew-map', 'data-time': ''}, strips,
    laneAxis(timeAxis(0, span, 'time from the capture\'s start')),
    el('p', {class: 'muted'}, 'Darker: later (up to ',
      fmtNs(Math.round(most)), ' late on average in a bin).'));
}

const FIG_COLS = [C('count', 'count'), N('time', 'total_ns'),
  N('exposed', 'exposed_ns'), C('matched', 'matched'), N('wait', 'wait_ns'),
  N('transfer', 'transfer_ns'), C('last', 'last'), N('held back', 'held_ns')];

/* An instance's window from the capture's t0: its first start to the
 * last rank's end (each rank's part is from that rank's t0). */
function instanceWindow(c, row) {
  const t0 = captureT0(c);
  const off = rank => ((c.ranks || []).find(r => r.rank === rank) ||
    {t0_ns: t0}).t0_ns - t0;
  const ends = row.per_rank.map(p => p.start_ns + p.dur_ns + off(p.rank));
  return [row.start_ns, Math.max(row.start_ns + 1, ...ends)];
}

/* The worst instances; each rank's part links to its slice (its start_ns
 * is from that rank's t0, as a slice's window is), and the instance to
 * all ranks' slice. */
function instanceCols(c) {
  return [T('family', 'family', nameCell), C('#', 'index'),
    N('first start', 'start_ns'), N('skew', 'skew_ns'),
    C('last rank', 'last_rank'),
    T('waits', 'per_rank', v => el('span', {class: 'waits'}, v.map(p =>
      'rank ' + p.rank + ' ' + fmtNs(p.wait_ns)).join(', '))),
    T('slices', 'per_rank', v => v.map(p => [sliceLink(c.id, p.rank,
      p.start_ns, p.start_ns + p.dur_ns, 'rank ' + p.rank), ' '])),
    T('all ranks', null, row => ranksSliceLink(c,
      ...instanceWindow(c, row), 'all ranks'))];
}

async function collectivesTab(c, st) {
  const q = {rank: st.rank};
  const [byRank, fams, steps, tl, worst] = await Promise.all([
    get(url('/captures/{id}/collectives', {id: c.id}, {by: 'rank'})),
    get(url('/captures/{id}/collectives', {id: c.id}, q)),
    get(url('/captures/{id}/collectives/steps', {id: c.id}, q)),
    get(url('/captures/{id}/collectives/timeline', {id: c.id})),
    get(url('/captures/{id}/collectives/instances', {id: c.id},
      {limit: 20}))]);
  const info = c.collectives || {warnings: []};
  const warned = (info.warnings || []).map(w => el('p', {class: 'warn'},
    w.message));
  if (!byRank.rows.length) {
    return [el('p', {class: 'empty'}, 'No collectives: no communication ',
      'kernel (NCCL or RCCL, a custom all-reduce) ran on any rank. A ',
      'capture at tp 2 or more has them.'), warned];
  }
  const ranks = byRank.rows.map(r => r.rank);
  const matched = info.matched || 0;
  /* Unmatched, a collective has no wait, transfer or lateness. */
  const byFamily = [el('h4', null, 'By family and rank'),
    table([T('family', 'family', nameCell), C('rank', 'rank')]
      .concat(matched ? FIG_COLS : FIG_COLS.slice(0, 3)), fams.rows)];
  if (ranks.length < 2 || !matched) {
    return [el('p', {class: 'empty'}, ranks.length < 2 ? ['One rank ',
      'ran collectives: who waited for whom is found by matching each ',
      'collective across ranks, which takes two or more (a capture at tp ',
      '2 or more). Its communication kernels are below.']
      : ['None of the ', String(ranks.length), ' ranks\' collectives ',
        'matched (the ranks ran different collectives: see the warnings), ',
        'so who waited for whom is not known.']), warned, byFamily];
  }
  return [el('p', {class: 'muted'}, COLL_NOTE), warned,
    el('h4', null, 'Who held the others back'), heldBars(byRank.rows),
    el('h4', null, 'Arrival skew over time'), skewMap(tl.rows, ranks,
      info.span_ns || 1),
    el('h4', null, 'The worst skews'), table(instanceCols(c), worst.rows,
      null, 'No collective was matched across the ranks.'),
    byFamily,
    el('h4', null, 'By step kind and rank'),
    table([T('step', 'step', v => v == null ? 'outside steps' : v),
      C('rank', 'rank')].concat(FIG_COLS), steps.rows, null, NO_STEPS)];
}

const RESULT_TABS = [
  {id: 'collectives', label: 'Collectives', render: collectivesTab}];

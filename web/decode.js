/*
 * traced dashboard, the Decode tab (docs/DECODE.md): device time by what
 * launched it, per step kind. The median step as one stacked bar by layer
 * and module (a part's tooltip names its kernels), the tables by module,
 * layer, op, (layer, module), (op, module) and a module's kernels, the
 * repeated block (layers collapsed, the spread between the fastest and
 * the slowest layer as a bar), and how complete the attribution is on
 * each rank (graph replays matched to their captured graphs or not,
 * kernels outside any launch or op). Uses app.js and charts.js;
 * capture.js lists DECODE_TABS.
 */
'use strict';

const NOT_IN = '(none)';
/* The median step's parts asked: table_limit_max (api/openapi.yaml). */
const MEDIAN_PARTS = 1000;

/* The tables of the tab: route, the key columns, query parameters. */
const DECODE_VIEWS = [
  {id: 'modules', label: 'by module', path: '/captures/{id}/decode/modules',
    q: true, note: 'Module paths with the layer index collapsed ' +
      '(layers.*): one row for a module of every layer. A module opens ' +
      'its kernels.'},
  {id: 'layers', label: 'by layer', path: '/captures/{id}/decode/layers',
    note: 'Layer (none): kernels outside every layer (embedding, final ' +
      'norm, head, sampler).'},
  {id: 'ops', label: 'by op', path: '/captures/{id}/decode/ops', q: true,
    note: 'The innermost op above each launch: its direct time (total); ' +
      'subtree: every kernel with the op anywhere above its launch.'},
  {id: 'layer_modules', label: 'by layer and module',
    path: '/captures/{id}/decode/layer_modules', q: true, module: true},
  {id: 'op_modules', label: 'by op and module',
    path: '/captures/{id}/decode/op_modules', q: true, module: true,
    note: 'TraceLens\'s ops summary by parent module.'},
  {id: 'blocks', label: 'repeated block', path: '/captures/{id}/decode/blocks',
    q: true, note: 'Each module of the repeated block over its layers: a ' +
      'layer\'s time per step on average, the fastest and the slowest ' +
      'layer. The bar spans fastest to slowest on one scale, the mark is ' +
      'the mean.'}];

const nameOr = v => v == null ? el('span', {class: 'muted'}, NOT_IN)
  : nameCell(String(v));

/* The figures every decode table shares (common/summary.h). */
function decFigures() {
  return [C('kernels', 'kernels'), N('total', 'total_ns'),
    C('steps', 'steps'), N('per step', 'per_step_ns'), N('p50', 'p50_ns'),
    N('p99', 'p99_ns'), T('share of the step', 'share', shareCell, 'num')];
}

/* A link that shows the kernels of module m below the table. */
function moduleLink(st, redraw, m) {
  if (m == null) return nameOr(m);
  return el('a', {href: '#', title: 'kernels of ' + m, onclick: ev => {
    ev.preventDefault();
    st.module = m;
    redraw();
  }}, nameCell(m));
}

/* The repeated block's spread: a bar from the fastest to the slowest
 * layer on the scale most, a mark at the mean. */
function spreadBar(r, most) {
  const x = v => most ? v / most * 100 : 0;
  const text = 'fastest layer ' + r.fastest_layer + ' ' +
    exactNs(r.fastest_ns) + ', mean ' + exactNs(r.layer_ns) +
    ', slowest layer ' + r.slowest_layer + ' ' + exactNs(r.slowest_ns);
  return svg('svg', {viewBox: '0 0 100 10', preserveAspectRatio: 'none',
    class: 'spread', role: 'img', 'aria-label': text},
  svg('title', null, text),
  svg('rect', {x: 0, y: 4, width: 100, height: 2, class: 'scale'}),
  svg('rect', {x: x(r.fastest_ns), y: 1, height: 8, class: 'range',
    width: Math.max(0.5, x(r.slowest_ns) - x(r.fastest_ns))}),
  svg('line', {x1: x(r.layer_ns), x2: x(r.layer_ns), y1: 0, y2: 10,
    class: 'mean'}));
}

function viewCols(view, st, redraw) {
  const mod = T('module', 'module', v => moduleLink(st, redraw, v));
  const layer = T('layer', 'layer', v => v == null ? nameOr(v) : num(v),
    'num');
  const op = T('op', 'op', nameOr);
  switch (view) {
    case 'modules':
      return [mod, C('layers', 'layers')].concat(decFigures());
    case 'layers':
      return [layer].concat(decFigures());
    case 'ops':
      return [op, C('instances', 'count')].concat(decFigures(),
        [N('subtree', 'subtree_ns')]);
    case 'layer_modules':
      return [layer, mod].concat(decFigures());
    case 'op_modules':
      return [op, mod, C('instances', 'count'), C('kernels', 'kernels'),
        N('total', 'total_ns')];
    default:
      return null;
  }
}

function blockTable(rows, st, redraw) {
  const most = Math.max(0, ...rows.map(r => r.slowest_ns));
  return table([T('module', 'module', v => moduleLink(st, redraw, v)),
    C('layers', 'layers'), N('total', 'total_ns'), C('steps', 'steps'),
    N('a layer per step', 'layer_ns'),
    T('fastest', 'fastest_ns', (v, r) => ['layer ', num(r.fastest_layer),
      ': ', nsCell(v)], 'num'),
    T('slowest', 'slowest_ns', (v, r) => ['layer ', num(r.slowest_layer),
      ': ', nsCell(v)], 'num'),
    T('slowest / fastest', null, r => r.fastest_ns
      ? (r.slowest_ns / r.fastest_ns).toFixed(2) + '\u00d7' : '\u2013', 'num'),
    T('spread', null, r => spreadBar(r, most))], rows, null, 'No repeated ' +
    'block: no module ran in two or more numbered layers (layers.N in its ' +
    'path).');
}

/* The median step of kind on one rank as one stacked bar: a part per
 * (layer, module), layers in order and the parts outside layers last,
 * coloured by module; its tooltip names the part's largest kernels. */
function medianBar(kind, rank, step, rows, names) {
  const W = 1000, H = 30;
  const order = rows.slice().sort((a, b) =>
    (a.layer == null) - (b.layer == null) || (a.layer || 0) - (b.layer || 0) ||
    cmp(a.module, b.module));
  const mods = [...new Set(rows.map(r => r.module == null ? NOT_IN
    : r.module))].sort();
  /* Device time no module launched is grey, as "other" is everywhere. */
  const named = mods.filter(m => m !== NOT_IN);
  const color = m => m === NOT_IN ? colorOf('other')
    : seriesColor(named.indexOf(m));
  const total = rows.reduce((a, r) => a + r.total_ns, 0);
  const byLayer = new Map();
  for (const r of order) {
    byLayer.set(r.layer, (byLayer.get(r.layer) || 0) + r.total_ns);
  }
  const shapes = [];
  let x = 0;
  let prev;
  for (const r of order) {
    const w = total ? r.total_ns / total * W : 0;
    const m = r.module == null ? NOT_IN : r.module;
    const where = r.layer == null ? 'outside layers' : 'layer ' + r.layer;
    const tip = where + ' \u00b7 ' + m + ': ' + exactNs(r.total_ns) + ' (' +
      pct1(r.total_ns, total) + '), ' + r.kernels + ' kernels' +
      (r.top_kernels || []).map(k => '\n  ' + (names.get(k.name) ||
        k.name) + ' \u00d7' +
        k.kernels + ' ' + exactNs(k.total_ns)).join('');
    if (x && r.layer !== prev) {
      shapes.push(svg('line', {x1: x, x2: x, y1: 0, y2: H, class: 'layer'}));
    }
    shapes.push(svg('rect', {x, y: 3, width: w, height: H - 6,
      fill: color(m), class: 'part', 'data-layer': r.layer == null ? ''
        : r.layer, 'data-module': m}, svg('title', null, tip)));
    x += w;
    prev = r.layer;
  }
  const layers = [...byLayer.keys()];
  const numbered = layers.filter(l => l != null);
  const slow = numbered.length ? numbered.reduce((a, l) =>
    byLayer.get(l) > byLayer.get(a) ? l : a) : null;
  const desc = kind + ' median step on rank ' + rank + ' (' +
    (step.median_label || 'no label') + '): ' + exactNs(total) +
    ' of device time in ' + rows.length + ' parts. Layers: ' +
    layers.map(l => (l == null ? 'outside layers' : 'layer ' + l) + ' ' +
      exactNs(byLayer.get(l))).join(', ') + '.' + (slow != null
    ? ' Slowest layer: ' + slow + '.' : '');
  const fig = figure('median', W, H, 'The ' + kind +
    ' median step by layer and module', desc, [kind, ' median step, rank ',
    String(rank), ': ', fmtNs(total), slow != null ? [' \u00b7 slowest ',
      'layer ', String(slow), ' (', fmtNs(byLayer.get(slow)), ')'] : null,
    ' \u00b7 hover a part for its kernels'], shapes);
  withAxis(fig, timeAxis(0, total, 'device time into the step, kernels ' +
    'back to back'));
  return el('div', {class: 'median-chart', 'data-time': ''},
    hover(fig, timeReader(0, total, W)),
    legend(mods.map(m => [m, color(m)])));
}

/* Per rank: how much of its device time got an op, module and layer. */
function completeness(ranks) {
  const share = (v, r) => r.device_ns ? [nsCell(v), ' (',
    pct(v / r.device_ns, 1), ')'] : nsCell(v);
  const reasons = v => {
    const ks = Object.keys(v || {}).filter(k => v[k].replays);
    return ks.length ? ks.map(k => el('div', null, k.replace('_', ' '), ': ',
      num(v[k].replays), ' (', nsCell(v[k].ns), ')')) : '\u2013';
  };
  return [el('h4', null, 'Completeness'),
    el('p', {class: 'muted'}, 'Graph replays are matched to the graphs ',
      'of the capture traces (mark_trace) by their step\'s batch size and ',
      'query length, then by the graph\'s kernel sequence; a replay ',
      'missing kernels is matched only where they fit one way, and one ',
      'that fits no graph is left unmatched with its reason, never ',
      'guessed. Eager kernels take the op and module stack above their ',
      'launch.'),
    el('div', {class: 'hscroll'}, table([C('rank', 'rank'),
      C('capture traces', 'capture_traces'),
      C('graphs', 'capture_graphs'), C('replays', 'replays'),
      C('matched', 'replays_matched'),
      T('short', 'replays_short', (v, r) => v
        ? el('span', {class: 'warn'}, num(v), ' (', num(r.missing_launches),
          ' kernels missing; ', nsCell(r.replays_short_ns), ')') : num(v),
      'num'),
      T('unmatched', 'replays_unmatched', (v, r) => v ? el('span',
        {class: 'warn'}, num(v), ' (', nsCell(r.replays_unmatched_ns), ')')
        : num(v), 'num'),
      T('why unmatched', 'unmatched_reasons', reasons),
      C('empty graph launches', 'empty_graph_launches'),
      T('outside any launch', 'kernels_no_launch_ns', (v, r) =>
        [num(r.kernels_no_launch), ': ', share(v, r)], 'num'),
      T('outside any op', 'kernels_no_op_ns', (v, r) =>
        [num(r.kernels_no_op), ': ', share(v, r)], 'num')],
    ranks.filter(r => r.replays != null)))];
}

/* Why most of a step's device time has no op: its graph replays had no
 * capture traces to take them from (docs/DECODE.md), and what gives them
 * some. */
function replaysWhy(c, step) {
  const lost = (c.ranks || []).reduce((a, r) => a + ((r.unmatched_reasons ||
    {}).no_capture || {replays: 0}).replays, 0);
  if (!step || !lost || step.attributed_ns * 2 > step.step_ns) return null;
  return el('p', {class: 'empty'}, num(lost), ' graph replays had no ',
    'capture trace to take their ops and modules from, so most of the ',
    'step has none. A capture with "mark_trace": true records ATOM\'s ',
    'graph-capture traces (docs/DECODE.md).');
}

/* The line over the tables: the step kind's steps and how much of its
 * device time has an op; without run labels, what the tables are over. */
function decodeMeta(st, step) {
  if (!step) {
    return el('p', {class: 'meta'}, 'No run labels in this trace: the ',
      'tables are over the whole trace, not per step kind, and there is ',
      'no median step to draw (ATOM\'s prefill[...] and decode[...] ',
      'labels, which a capture by traced records, split them).');
  }
  return el('p', {class: 'meta'}, num(step.steps), ' ', st.kind,
    ' steps \u00b7 device time ', nsCell(step.step_ns), ' \u00b7 with an op ',
    nsCell(step.attributed_ns), ' (', pct(step.step_ns
      ? step.attributed_ns / step.step_ns : 0, 1), ') \u00b7 median step ',
    nsCell(step.median_ns));
}

/* The Decode tab. A trace without run labels has no step kinds: its
 * tables are asked without one (rows of no step), over the whole trace. */
async function decodeTab(c, st, ranks) {
  const box = el('div');
  const numbered = ranks.filter(r => r.rank != null);
  const [steps, any, names] = await Promise.all([
    get(url('/captures/{id}/decode/steps', {id: c.id}, {rank: st.rank})),
    get(url('/captures/{id}/decode/modules', {id: c.id},
      {rank: st.rank, limit: 1})), kernelNames(c.id)]);
  const kinds = steps.rows.map(r => r.step);
  if (!any.rows.length) {
    return [el('p', {class: 'empty'}, 'No decode figures: no kernel of ',
      'this capture was attributed to an op, module or layer. Its ranks ',
      'were indexed before traced made these tables: import the traces ',
      'again to fill them.'), completeness(c.ranks || [])];
  }
  if (!kinds.includes(st.kind)) {
    st.kind = kinds.includes('decode') ? 'decode' : kinds[0] || '';
  }
  if (!DECODE_VIEWS.some(v => v.id === st.view)) st.view = 'modules';
  /* The median step is one rank's: the one picked, else the first. */
  const rank = st.rank !== '' ? Number(st.rank)
    : numbered.length ? numbered[0].rank : null;
  let seq = 0;
  const csv = (path, q, name) => el('p', {class: 'small'}, fileLink(
    url(path, {id: c.id}, Object.assign({}, q, {format: 'csv'})),
    'these rows as CSV', name + '-' + c.id + '.csv'));

  async function draw() {
    const my = ++seq;
    saveOpts({tab: 'decode', rank: st.rank, q: st.q, kind: st.kind,
      view: st.view === 'modules' ? '' : st.view, module: st.module});
    const view = DECODE_VIEWS.find(v => v.id === st.view);
    const step = steps.rows.find(r => r.step === st.kind);
    const query = {rank: st.rank, kind: st.kind, q: view.q ? st.q : '',
      limit: LIMIT};
    const mod = {rank: st.rank, kind: st.kind, module: st.module,
      limit: LIMIT};
    /* Every part of the median step (a part per layer and module: 36
     * layers of 10 modules pass the default 100 rows). */
    const medQ = {rank, kind: st.kind, limit: MEDIAN_PARTS};
    const [med, data, kernels] = await Promise.all([
      rank == null || !step ? {rows: []} : get(url(
        '/captures/{id}/decode/median', {id: c.id}, medQ)),
      get(url(view.path, {id: c.id}, query)),
      st.module ? get(url('/captures/{id}/decode/kernels', {id: c.id}, mod))
        : null]);
    if (my !== seq) return;
    put(box,
      el('div', {class: 'tools'}, kinds.length ? select(st.kind,
        kinds.map(k => [k, 'step kind ' + k]), v => {
          st.kind = v;
          draw();
        }) : null,
      select(st.view, DECODE_VIEWS.map(v => [v.id, v.label]), v => {
        st.view = v;
        draw();
      })),
      decodeMeta(st, step), replaysWhy(c, step),
      med.rows.length ? [medianBar(st.kind, rank, step, med.rows, names),
        csv('/captures/{id}/decode/median', medQ,
          'decode-median')] : null,
      el('h4', null, view.label[0].toUpperCase() + view.label.slice(1)),
      view.note ? el('p', {class: 'muted'}, view.note) : null,
      view.id === 'blocks' ? blockTable(data.rows, st, draw)
        : table(viewCols(view.id, st, draw), data.rows, null, st.q
          ? 'No row has \u201c' + st.q + '\u201d.' : 'No kernel of this ' +
          'step kind has one above it.'),
      data.rows.length ? csv(view.path, query, 'decode-' + view.id) : null,
      kernels ? [el('h4', null, 'Kernels of ', el('code', null, st.module),
        ' ', el('button', {onclick: () => { st.module = ''; draw(); }},
          '\u00d7')),
      table([T('kernel', 'name', readable(names)), C('kernels', 'kernels'),
        N('total', 'total_ns')], kernels.rows, null, 'No kernel of this ' +
        'step kind ran under ' + st.module + '.'),
      kernels.rows.length ? csv('/captures/{id}/decode/kernels', mod,
        'decode-kernels') : null] : null,
      kinds.length ? [el('h4', null, 'Steps'),
        table([S('step kind', 'step'), C('steps', 'steps'),
          C('kernels', 'kernels'), N('device time', 'step_ns'),
          N('with an op', 'attributed_ns'), S('median step', 'median_label'),
          N('its device time', 'median_ns')], steps.rows),
        csv('/captures/{id}/decode/steps', {rank: st.rank}, 'decode-steps')]
        : null,
      completeness(c.ranks || []));
  }
  await draw();
  return box;
}

const DECODE_TABS = [{id: 'decode', label: 'Decode', render: decodeTab,
  q: true}];

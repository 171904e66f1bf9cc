/*
 * traced dashboard, the capture view (#/captures/<id>): its top
 * (overview.js) polled every second while it runs, then one tab per
 * table route; the analysis tabs (timeline, idle, critical path,
 * families) are analysis.js's, collectives results.js's, decode
 * decode.js's. Uses the helpers of app.js and charts.js.
 */
'use strict';

/* q of the table routes: at most 256 characters (api/openapi.yaml). */
const MAX_Q = 256;
/* Rows asked of the long tables; the name filter finds the rest. */
const LIMIT = 100;

/* ---- capture view ---- */

function captureView(app, id, q) {
  const g = gen;
  const head = el('div');
  const tabs = el('div');
  let tabsShown = false;
  add(app, head, tabs);
  async function poll() {
    let c;
    try {
      c = await get(url('/captures/{id}', {id}));
    } catch (e) {
      if (g !== gen) return;
      put(head, errorBox(e));
      if (e.status !== 404 && e.status !== 400) later(poll, 2000);
      return;
    }
    if (g !== gen) return;
    /* A capture of the fleet (a lab view) goes by node:id everywhere. */
    if (c.node) c.id = id;
    put(head, captureHead(c), captureBody(c));
    const ranks = (c.ranks || []).filter(r => r.status === 'done');
    if (!FINAL.includes(c.status)) later(poll, 1000);
    else if (ranks.length && !tabsShown) {
      tabsShown = true;
      tabsView(tabs, c, ranks, q);
    }
  }
  poll();
}

/* ---- capture tabs: each reads one table route ---- */

function topList(items, launch) {
  return el('ul', {class: 'top'}, (items || []).map(k => el('li', null,
    kernelName(k), launch ? ' ' + dim(k.grid) + ' / ' + dim(k.block)
      : null, ' \u00d7', num(k.count), ' ', nsCell(k.total_ns))));
}

/* Phases on a time axis, one lane per rank, each phase in the grey of
 * what started it. */
function phaseLanes(rows) {
  const W = 1000, H = 14;
  const end = Math.max(1, ...rows.map(r => r.end_ns));
  const causes = ['start', 'gap', 'shape'];
  const lanes = new Map();
  for (const r of rows) {
    const k = r.rank == null ? 'phases' : 'rank ' + r.rank;
    if (!lanes.has(k)) lanes.set(k, []);
    lanes.get(k).push(r);
  }
  return el('div', {class: 'phase-lanes', 'data-time': ''},
    Array.from(lanes, ([k, rs]) => el('div', {class: 'idle-row'},
      el('span', {class: 'lane-name'}, k), hover(figure('idle', W, H,
        'Phases of ' + k, k + ': ' + rs.length + ' phases: ' +
        rs.map(r => '#' + r.index + ' ' + r.cause + ' ' +
          exactNs(r.start_ns) + ' to ' + exactNs(r.end_ns)).join('; ') + '.',
        [String(rs.length), ' phases'], rs.map(r => svg('rect', {
          x: r.start_ns / end * W, y: 0, height: H,
          width: Math.max(0.5, (r.end_ns - r.start_ns) / end * W),
          fill: bandColor(causes.indexOf(r.cause)), class: 'lane-band'},
        svg('title', null, '#' + r.index + ' (' + r.cause + ') ' +
          fmtNs(r.start_ns) + ' to ' + fmtNs(r.end_ns) + ', busy ' +
          fmtNs(r.busy_ns) + ((r.top_kernels || [])[0] ? '\ntop ' +
            (r.top_kernels[0].demangled || r.top_kernels[0].name) : ''))))),
      timeReader(0, end, W)))),
    laneAxis(timeAxis(0, end, 'time from the rank\'s first event')),
    legend(causes.map((c, i) => [{start: 'from the start',
      gap: 'after an idle gap', shape: 'at a shape change'}[c],
    bandColor(i)])));
}

/* Why a capture has no steps, and what would give it some. */
const NO_STEPS = 'No steps: the trace has neither ATOM\'s run labels ' +
  '(prefill[...] and decode[...] on the GPU timeline, which a capture by ' +
  'traced records) nor ProfilerStep ranges (torch.profiler with a ' +
  'schedule). A trace with either fills this.';

const TABS = [
  {id: 'kernels', label: 'Kernels', path: '/captures/{id}/kernels', q: true,
    sort: true, limit: LIMIT, note: 'A name opens its launch configs, a ' +
      'family its kernels. Mangled names are shown demangled (the name ' +
      'as traced is in the tooltip).',
    cols: (all, st, show) => [T('name', 'name', (v, r) => el('a', {href: '#',
      onclick: ev => {
        ev.preventDefault();
        Object.assign(st, {tab: 'launches', q: v.slice(0, MAX_Q)});
        show();
      }}, el('span', {class: 'name', title: v}, r.demangled || v)), null, 30),
    T('family', 'family', v => v == null ? '\u2013' : el('a', {href: '#',
      title: 'only this family', onclick: ev => {
        ev.preventDefault();
        st.family = v;
        show();
      }}, nameCell(v)), null, 22), T('category', 'category', catCell),
    C('count', 'count'),
    N('total', 'total_ns'), N('avg', 'avg_ns'), N('min', 'min_ns'),
    N('max', 'max_ns'), all ? null : N('median', 'median_ns'),
    T('share', 'share', shareCell, 'num'),
    T('on path', 'critical_ns', nsCell, 'num'),
    all ? null : N('first at', 'first_ns'),
    all ? null : N('last at', 'last_ns'),
    all ? C('ranks', 'ranks') : null,
    all ? T('slowest rank', 'slowest_rank_ns', (v, r) => [num(r.slowest_rank),
      ': ', nsCell(v)], 'num') : null,
    all ? T('fastest rank', 'fastest_rank_ns', (v, r) => [num(r.fastest_rank),
      ': ', nsCell(v)], 'num') : null]},
  {id: 'launches', label: 'Launches', path: '/captures/{id}/launches',
    q: true, sort: true, limit: LIMIT, names: true,
    cols: (all, st) => [T('name', 'name', readable(st.names)),
      T('grid', 'grid', dim), T('block', 'block', dim),
      C('regs/thread', 'registers_per_thread'), B('shared', 'shared_bytes'),
      C('count', 'count'), N('total', 'total_ns'), N('avg', 'avg_ns'),
      N('min', 'min_ns'), N('max', 'max_ns')]},
  {id: 'categories', label: 'Categories', path: '/captures/{id}/categories',
    note: 'Share of device time (kernels, copies, memsets). A category ' +
      'opens its kernels.',
    before: categoryBar, cols: (all, st, show) => [T('category', 'category',
      v => el('a', {href: '#', title: 'kernels of ' + v, onclick: ev => {
        ev.preventDefault();
        Object.assign(st, {tab: 'kernels', category: v, q: ''});
        show();
      }}, catCell(v))),
    C('events', 'count'), N('total', 'total_ns'),
    T('share of device time', 'share', shareCell, 'num')]},
  {id: 'steps', label: 'Steps', path: '/captures/{id}/steps',
    note: 'Percentiles are of the step durations (all ranks: the largest ' +
      'rank\'s). Steady: without the warm-up, the leading steps slower ' +
      'than twice the p50 (at most a tenth of them).',
    after: (c, st, rows) => stepsExtra(c, st, rows), empty: NO_STEPS,
    cols: () => [S('kind', 'kind'), C('count', 'count'),
      N('total', 'total_ns'), N('avg', 'avg_ns'), N('p50', 'p50_ns'),
      N('p90', 'p90_ns'), N('p99', 'p99_ns'), N('max', 'max_ns'),
      C('warm-up', 'warmup_steps'), N('steady p50', 'steady_p50_ns'),
      N('steady p99', 'steady_p99_ns'), C('tokens', 'tokens'),
      C('padded', 'padded'), N('kernel time inside', 'kernel_ns'),
      S('source', 'source')]},
  {id: 'memcpy', label: 'Copies', path: '/captures/{id}/memcpy',
    empty: 'No copies and no memsets: the device copied nothing in this ' +
      'trace (or its profiler recorded no memcpy or memset events).',
    cols: () => [S('kind', 'kind'), C('count', 'count'),
      N('total', 'total_ns'), B('bytes', 'bytes'), B('largest', 'max_bytes'),
      T('GB/s', null, r => r.total_ns && r.bytes
        ? sig3(r.bytes / r.total_ns) : '\u2013', 'num')]},
  {id: 'runtime', label: 'Host API', path: '/captures/{id}/runtime',
    q: true, sort: true, limit: LIMIT,
    note: 'Host-side API time includes queueing and waiting: it is not ' +
      'device time (see Kernels and Copies for what the GPU ran).',
    cols: () => [T('name', 'name', nameCell), C('count', 'count'),
      N('total', 'total_ns'), N('median', 'median_ns'), N('max', 'max_ns')]},
  {id: 'phases', label: 'Phases', path: '/captures/{id}/phases',
    note: 'Cut at idle gaps (gap) and launch-shape changes (shape). A ' +
      'slice is the rank\'s raw trace over the phase, to open in Perfetto.',
    empty: 'No phases: the rank ran no kernel.',
    before: phaseLanes, cols: (all, st) => [all ? C('rank', 'rank') : null,
      C('#', 'index'), N('start', 'start_ns'), N('end', 'end_ns'),
      T('length', null, r => nsCell(r.end_ns - r.start_ns), 'num'),
      N('busy', 'busy_ns'), T('busy %', null, r => r.end_ns > r.start_ns
        ? pct(r.busy_ns / (r.end_ns - r.start_ns), 1) : '\u2013', 'num'),
      C('kernels', 'kernel_events'), S('cause', 'cause'),
      T('top kernels', 'top_kernels', v => topList(v)),
      T('top launch configs', 'top_launches', v => topList(v, true)),
      T('raw events', null, r => sliceLink(st.id, all ? r.rank : st.rank,
        r.start_ns, r.end_ns))]}];

/* Why a table tab has no rows: the filters asked (name, category,
 * family, on a critical path) when any, else the tab's own reason. */
function emptyWhy(tab, query) {
  const asked = [query.q ? 'name contains \u201c' + query.q + '\u201d'
    : null, query.category ? 'category ' + query.category : null,
  query.family ? 'family ' + query.family : null,
  query.on_path ? 'on a critical path' : null].filter(Boolean);
  if (asked.length) {
    return 'No rows with ' + asked.join(', ') + ': clear the filter to ' +
      'see them all.';
  }
  return tab.empty || 'No rows: the trace holds nothing of this kind.';
}

/* Every tab: these, the analysis ones, the collectives, decode and perf
 * (analysis.js, results.js, decode.js, perf.js, loaded after). */
function allTabs() {
  return TABS.concat(ANALYSIS_TABS, RESULT_TABS, DECODE_TABS, PERF_TABS);
}

function tabsView(box, c, ranks, hq) {
  const g = gen;
  /* One rank: its own figures (median, first/last seen) from the start. */
  const numbered = ranks.filter(r => r.rank != null);
  const only = ranks.length === 1 && numbered.length ? String(ranks[0].rank)
    : '';
  const st = {id: c.id, tab: hq.get('tab') || 'kernels',
    rank: hq.get('rank') || only,
    q: hq.get('q') || '', sort: hq.get('sort') || 'total',
    category: hq.get('category') || '', family: hq.get('family') || '',
    kind: hq.get('kind') || '', view: hq.get('view') || '',
    module: hq.get('module') || '', onPath: hq.get('on_path') || ''};
  const bar = el('nav', {class: 'tabs'});
  const tools = el('div', {class: 'tools'});
  const out = el('div');
  let seq = 0;
  let typing = null;
  const search = el('input', {type: 'search', placeholder: 'name contains',
    maxlength: MAX_Q,
    oninput: () => {
      clearTimeout(typing);
      typing = setTimeout(() => { st.q = search.value; load(); }, 250);
    }});
  add(box, el('h3', null, 'Analysis'), bar, tools, out);

  function show() {
    const tab = allTabs().find(t => t.id === st.tab) || TABS[0];
    st.tab = tab.id;
    put(bar, allTabs().map(t => el('a', {href: '#',
      class: t === tab ? 'on' : null,
      onclick: ev => { ev.preventDefault(); st.tab = t.id; show(); }},
    t.label)));
    search.value = st.q;
    put(tools, select(st.rank, [['', 'all ranks']].concat(numbered.map(r =>
      [r.rank, 'rank ' + r.rank])), v => { st.rank = v; load(); }),
    tab.q ? search : null, tab.id === 'kernels' || tab.id === 'families'
      ? select(st.category,
      [['', 'any category']].concat(CATEGORIES), v => {
        st.category = v;
        load();
      }) : null, tab.id === 'kernels' && st.family ? el('button', {
      title: 'show every family', onclick: () => { st.family = ''; show(); }},
    'family ', el('code', null, st.family), ' \u00d7') : null,
    tab.id === 'kernels' || tab.id === 'families' ? el('label', null,
      el('input', {type: 'checkbox', checked: st.onPath === '1',
        onchange: ev => {
          st.onPath = ev.target.checked ? '1' : '';
          load();
        }}),
      ' on a critical path') : null,
    tab.sort ? select(st.sort, ['total', 'count', 'avg',
      'name'].map(s => [s, 'by ' + s]), v => { st.sort = v; load(); })
      : null);
    load();
  }

  /* A table tab: its rows, a picture before them, more after them. */
  async function tableTab(tab, query) {
    const [data, names] = await Promise.all([get(url(tab.path, {id: c.id},
      Object.assign(query, {limit: tab.limit}))),
    tab.names ? kernelNames(c.id) : null]);
    const all = data.rank === null;
    st.names = names;
    return [tab.note ? el('p', {class: 'muted'}, tab.note) : null,
      tab.before && data.rows.length ? tab.before(data.rows) : null,
      table(tab.cols(all, st, show).filter(Boolean), data.rows, null,
        emptyWhy(tab, query)),
      data.rows.length ? el('p', {class: 'small'}, fileLink(url(tab.path,
        {id: c.id}, Object.assign({}, query, {limit: tab.limit,
          format: 'csv'})), 'these rows as CSV', tab.id.replace('/', '-') +
        '-' + c.id + '.csv')) : null,
      tab.limit && data.rows.length === tab.limit ? el('p',
        {class: 'muted'}, 'first ' + tab.limit + ' rows: narrow with the ' +
        'name filter') : null,
      tab.after && data.rows.length ? await tab.after(c, st, data.rows)
        : null];
  }

  async function load() {
    const tab = allTabs().find(t => t.id === st.tab);
    const kernels = tab.id === 'kernels';
    const query = {rank: st.rank, q: tab.q ? st.q : '',
      category: kernels || tab.id === 'families' ? st.category : '',
      sort: tab.sort ? st.sort : '', family: kernels ? st.family : '',
      on_path: kernels || tab.id === 'families' ? st.onPath : ''};
    saveOpts(Object.assign({tab: kernels ? '' : tab.id}, query,
      {sort: query.sort === 'total' ? '' : query.sort}));
    const my = ++seq;
    put(out, el('p', {class: 'muted'}, 'loading\u2026'));
    let nodes;
    try {
      nodes = tab.render ? await tab.render(c, st, ranks)
        : await tableTab(tab, query);
    } catch (e) {
      if (g === gen && my === seq) put(out, errorBox(e));
      return;
    }
    if (g === gen && my === seq) put(out, nodes);
  }
  show();
}

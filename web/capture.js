/*
 * traced dashboard, the capture view (#/captures/<id>): status and phase
 * while it runs (polled every second), then the per-rank figures and one
 * tab per table route; the analysis tabs (timeline, idle, families) are
 * analysis.js's. Uses the helpers of app.js and charts.js.
 */
'use strict';

/* q of the table routes: at most 256 characters (api/openapi.yaml). */
const MAX_Q = 256;
/* Rows asked of the long tables; the name filter finds the rest. */
const LIMIT = 100;
const CATEGORIES = ['gemm', 'attention', 'moe', 'communication', 'custom',
  'routing', 'copy', 'memset', 'elementwise', 'normalization', 'softmax_topk',
  'sync', 'other'];
/* Members of the capture object itself; the others are its extra. */
const OWN = ['id', 'kind', 'label', 'params', 'status', 'phase', 'created_at',
  'started_at', 'finished_at', 'phase_started_at', 'queue_position',
  'progress', 'error', 'bench', 'ranks', 'collectives', 'verdict'];
/* The phases a capture runs after the queue (PHASES: lifecycle.js). */
const RUN_PHASES = PHASES.filter(p => p !== 'queued');

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

async function dropCapture(c) {
  const live = !FINAL.includes(c.status);
  if (!window.confirm((live ? 'Cancel' : 'Delete') + ' capture #' + c.id +
    (live ? '?' : ' and its trace files?'))) return;
  try {
    const r = await call('DELETE', url('/captures/{id}', {id: c.id}));
    if (r && r.deleted) location.hash = '#/'; else route();
  } catch (e) {
    window.alert(e.message);
  }
}

/* Which models.json preset and variant the capture ran with, or why
 * none, and the TP it launched at (docs/ATOM.md, "Presets"). */
function presetLine(c) {
  const pr = c.preset;
  if (!pr) return null;
  return el('span', {class: 'preset'}, pr.applied
    ? ['preset ', el('code', null, pr.match), pr.variant
      ? [' variant ', el('code', null, pr.variant)] : ' (base variant)']
    : ['no preset: ', pr.why],
  c.launch ? [' \u00b7 launched at tp ', num(c.launch.tp), ' (',
    c.launch.tp_source, ')'] : null);
}

function captureHead(c) {
  const p = c.params || {};
  const live = !FINAL.includes(c.status);
  return el('div', {class: 'head'},
    el('h2', null, (c.kind === 'import' ? 'Import #' : 'Capture #') + c.id,
      c.node ? [' on ', el('a', {href: /^https?:\/\//.test(c.node_url || '')
        ? c.node_url : null, title: 'its node: raw traces and slices are ' +
        'there'}, c.node)] : null,
      c.label ? [' \u00b7 ', c.label] : null, ' ', badge(c.status),
      c.verdict ? [' ', verdictBadge(c.verdict)] : null),
    el('p', {class: 'meta'},
      p.model ? ['model ', el('code', null, p.model), ' \u00b7 tp ',
        num(p.tp), ' \u00b7 isl ', num(p.isl), ' \u00b7 osl ', num(p.osl),
        ' \u00b7 conc ', num(p.conc), ' \u00b7 prompts \u00d7',
        num(p.prompt_multiplier), p.more ? ' \u00b7 profiler more' : '']
        : ['path ', el('code', null, p.path || '\u2013')],
      c.preset ? [el('br'), presetLine(c)] : null,
      el('br'), 'created ', when(c.created_at), ' \u00b7 started ',
      when(c.started_at), ' \u00b7 finished ', when(c.finished_at),
      ' \u00b7 took ', elapsed(c.started_at, c.finished_at),
      c.queue_position ? ' \u00b7 queue position ' + c.queue_position : null,
      /* A capture of the fleet is deleted on its node. */
      c.node ? null : [' ', el('button', {onclick: () => dropCapture(c)},
        live ? 'cancel' : 'delete')]));
}

function lifecycle(c) {
  const seq = c.kind === 'import'
    ? RUN_PHASES.slice(RUN_PHASES.indexOf('indexing')) : RUN_PHASES;
  const at = c.status === 'done' ? seq.length - 1
    : seq.indexOf(c.error && c.error.phase || c.phase);
  const bad = FINAL.includes(c.status) && c.status !== 'done';
  return el('div', null, el('ol', {class: 'phases'}, seq.map((p, i) =>
    el('li', {class: i < at ? 'past' : i > at ? null : bad ? 'failed'
      : c.status === 'done' ? 'past' : 'current'},
    p.replace('_', ' ')))), el('p', {class: 'muted'}, 'phase ', c.phase,
    c.phase_started_at && !FINAL.includes(c.status)
      ? ' for ' + elapsed(c.phase_started_at) : null));
}

/* The bench's result JSON as a grid of name and value. */
function metrics(obj) {
  return el('div', {class: 'metrics'}, Object.keys(obj).map(k =>
    el('div', null, el('span', {class: 'muted'}, k), ' ',
      el('strong', null, obj[k] !== null && typeof obj[k] === 'object'
        ? JSON.stringify(obj[k]) : num(obj[k])))));
}

/* Counters while the capture runs, and where a failed one stopped. */
function progress(c) {
  const p = c.progress;
  if (!p || c.status === 'done') return null;
  const exp = c.kind === 'capture';
  const pctOf = (a, b) => b ? ' (' + pct(a / b, 1) + ')' : '';
  return el('div', {class: 'progress'},
    exp ? el('span', null, 'ranks exported ', num(p.ranks_exported), '/',
      num(p.ranks_expected)) : null,
    el('span', null, 'indexed ', num(p.ranks_indexed), '/',
      num(p.ranks_expected)),
    el('span', null, 'bytes ', bytesCell(p.bytes_indexed), ' / ',
      bytesCell(p.bytes_total), pctOf(p.bytes_indexed, p.bytes_total)),
    p.bytes_total ? el('progress', {max: p.bytes_total,
      value: p.bytes_indexed || 0}) : null,
    p.orphan_json ? el('span', {class: 'warn'}, num(p.orphan_json),
      FINAL.includes(c.status) ? ' orphan .json (export died mid-write?)'
        : ' .json not gzipped yet') : null,
    exp && p.export_polls ? el('span', null, 'export polls ',
      num(p.export_polls)) : null);
}

function captureBody(c) {
  const logs = c.kind === 'capture'
    ? ['server', 'bench', 'launcher', 'stop', 'gpu']
    .map(w => fileLink(url('/captures/{id}/logs', {id: c.id}, {which: w}),
      w + ' log')) : [];
  const extra = {};
  for (const k of Object.keys(c)) if (!OWN.includes(k)) extra[k] = c[k];
  return el('div', null, lifecycle(c), progress(c),
    c.error ? el('div', {class: 'error'},
      el('strong', null, 'failed in ', c.error.phase || c.phase), ': ',
      c.error.message, c.error.log_tail ? el('pre', null, c.error.log_tail)
        : null) : null,
    c.verdict ? verdictBox(c) : null,
    c.bench ? [el('h3', null, 'Benchmark'), metrics(c.bench)] : null,
    c.ranks && c.ranks.length ? [el('h3', null, 'Ranks'), totals(c.ranks),
      ranksTable(c)] : null,
    el('p', {class: 'links'}, logs),
    el('details', null, el('summary', null, 'request and paths'),
      kv(c.params), kv(extra)));
}

/* The figures a reader looks at first, over the ranks indexed. */
function totals(ranks) {
  const rs = ranks.filter(r => r.status === 'done');
  if (!rs.length) return null;
  const sum = k => rs.reduce((a, r) => a + (r[k] || 0), 0);
  const ks = rs.map(r => r.kernel_ns);
  return el('p', {class: 'meta'}, num(rs.length), ' ranks \u00b7 kernel time ',
    nsCell(sum('kernel_ns')), rs.length > 1 ? [' (per rank ',
      nsCell(Math.min(...ks)), ' to ', nsCell(Math.max(...ks)), ')'] : null,
    ' \u00b7 device time ', nsCell(sum('device_ns')), ' \u00b7 copies ',
    bytesCell(sum('memcpy_bytes')), ' in ', nsCell(sum('memcpy_ns')),
    ' \u00b7 host API ', nsCell(sum('runtime_ns')), ' (host side, not ',
    'device time)');
}

function ranksTable(c) {
  const busy = (v, r) => r.span_ns ? pct(r.gpu_busy_ns / r.span_ns, 1)
    : '\u2013';
  return table([C('rank', 'rank'), S('label', 'label'),
    S('device', 'device'), T('status', 'status', badge),
    C('kernels', 'kernel_events'), C('distinct', 'distinct_kernels'),
    N('kernel time', 'kernel_ns'), N('gpu busy', 'gpu_busy_ns'),
    N('span', 'span_ns'), T('busy/span', null, busy, 'num'),
    B('copied', 'memcpy_bytes'), N('host API', 'runtime_ns'),
    T('', null, r => r.status === 'failed'
      ? el('span', {class: 'warn'}, r.error) : r.rank == null ? null
        : fileLink(url('/captures/{id}/ranks/{r}/trace',
          {id: c.id, r: r.rank}), 'raw trace',
        (r.file || 'rank' + r.rank + '.json').split('/').pop()))],
  c.ranks);
}

/* ---- capture tabs: each reads one table route ---- */

function catBar(rows) {
  return el('div', {class: 'stack'}, rows.filter(r => r.share > 0)
    .map(r => el('span', {class: 'cat-' + r.category, title: r.category +
      ' ' + pct(r.share) + ' (' + fmtNs(r.total_ns) + ')',
    style: 'width:' + r.share * 100 + '%'})));
}

function topList(items, launch) {
  return el('ul', {class: 'top'}, (items || []).map(k => el('li', null,
    kernelName(k), launch ? ' ' + dim(k.grid) + ' / ' + dim(k.block)
      : null, ' \u00d7', num(k.count), ' ', nsCell(k.total_ns))));
}

function phaseSpan(r, end) {
  const top = r.top_kernels && r.top_kernels[0];
  return el('span', {class: 'bar ' + r.cause,
    title: '#' + r.index + ' ' + fmtNs(r.start_ns) + ' \u2192 ' +
      fmtNs(r.end_ns) + ', busy ' + fmtNs(r.busy_ns) + ', ' + r.cause +
      (top ? ', top ' + top.name : ''),
    style: 'left:' + r.start_ns / end * 100 + '%;width:' +
      Math.max(0.2, (r.end_ns - r.start_ns) / end * 100) + '%'});
}

/* Phases as bars on a time axis, one lane per rank. */
function timeline(rows) {
  const end = Math.max(1, ...rows.map(r => r.end_ns));
  const lanes = new Map();
  for (const r of rows) {
    const k = r.rank == null ? '' : 'rank ' + r.rank;
    if (!lanes.has(k)) lanes.set(k, []);
    lanes.get(k).push(r);
  }
  return el('div', {class: 'timeline'}, Array.from(lanes, ([k, rs]) =>
    el('div', {class: 'lane'}, el('span', {class: 'lane-name'}, k),
      el('div', {class: 'track'}, rs.map(r => phaseSpan(r, end))))));
}

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
      }}, el('span', {class: 'name', title: v}, r.demangled || v))),
    T('family', 'family', v => v == null ? '\u2013' : el('a', {href: '#',
      title: 'only this family', onclick: ev => {
        ev.preventDefault();
        st.family = v;
        show();
      }}, nameCell(v))), S('category', 'category'), C('count', 'count'),
    N('total', 'total_ns'), N('avg', 'avg_ns'), N('min', 'min_ns'),
    N('max', 'max_ns'), all ? null : N('median', 'median_ns'),
    T('share', 'share', shareCell, 'num'),
    N('on critical path', 'critical_ns'),
    all ? null : N('first at', 'first_ns'),
    all ? null : N('last at', 'last_ns'),
    all ? C('ranks', 'ranks') : null,
    all ? T('slowest rank', 'slowest_rank_ns', (v, r) => [num(r.slowest_rank),
      ': ', nsCell(v)], 'num') : null,
    all ? T('fastest rank', 'fastest_rank_ns', (v, r) => [num(r.fastest_rank),
      ': ', nsCell(v)], 'num') : null]},
  {id: 'launches', label: 'Launches', path: '/captures/{id}/launches',
    q: true, sort: true, limit: LIMIT, cols: () => [T('name', 'name', nameCell),
      T('grid', 'grid', dim), T('block', 'block', dim),
      C('regs/thread', 'registers_per_thread'), B('shared', 'shared_bytes'),
      C('count', 'count'), N('total', 'total_ns'), N('avg', 'avg_ns'),
      N('min', 'min_ns'), N('max', 'max_ns')]},
  {id: 'categories', label: 'Categories', path: '/captures/{id}/categories',
    note: 'Share of device time (kernels, copies, memsets). A category ' +
      'opens its kernels.',
    before: catBar, cols: (all, st, show) => [T('category', 'category',
      v => el('a', {href: '#', title: 'kernels of ' + v, onclick: ev => {
        ev.preventDefault();
        Object.assign(st, {tab: 'kernels', category: v, q: ''});
        show();
      }}, el('span', {class: 'dot cat-' + v}), v)),
    C('events', 'count'), N('total', 'total_ns'),
    T('share of device time', 'share', shareCell, 'num')]},
  {id: 'steps', label: 'Steps', path: '/captures/{id}/steps',
    note: 'Percentiles are of the step durations (all ranks: the largest ' +
      'rank\'s). Steady: without the warm-up, the leading steps slower ' +
      'than twice the p50 (at most a tenth of them).',
    after: (c, st, rows) => stepsExtra(c, st, rows),
    cols: () => [S('kind', 'kind'), C('count', 'count'),
      N('total', 'total_ns'), N('avg', 'avg_ns'), N('p50', 'p50_ns'),
      N('p90', 'p90_ns'), N('p99', 'p99_ns'), N('max', 'max_ns'),
      C('warm-up', 'warmup_steps'), N('steady p50', 'steady_p50_ns'),
      N('steady p99', 'steady_p99_ns'), C('tokens', 'tokens'),
      C('padded', 'padded'), N('kernel time inside', 'kernel_ns'),
      S('source', 'source')]},
  {id: 'memcpy', label: 'Copies', path: '/captures/{id}/memcpy',
    cols: () => [S('kind', 'kind'), C('count', 'count'),
      N('total', 'total_ns'), B('bytes', 'bytes'), B('largest', 'max_bytes'),
      T('GB/s', null, r => r.total_ns && r.bytes
        ? (r.bytes / r.total_ns).toFixed(2) : '\u2013', 'num')]},
  {id: 'runtime', label: 'Host API', path: '/captures/{id}/runtime',
    q: true, sort: true, limit: LIMIT,
    note: 'Host-side API time includes queueing and waiting: it is not ' +
      'device time (see Kernels and Copies for what the GPU ran).',
    cols: () => [T('name', 'name', nameCell), C('count', 'count'),
      N('total', 'total_ns'), N('median', 'median_ns'), N('max', 'max_ns')]},
  {id: 'phases', label: 'Phases', path: '/captures/{id}/phases',
    note: 'Cut at idle gaps (gap) and launch-shape changes (shape). A ' +
      'slice is the rank\'s raw trace over the phase, to open in Perfetto.',
    before: timeline, cols: (all, st) => [all ? C('rank', 'rank') : null,
      C('#', 'index'), N('start', 'start_ns'), N('end', 'end_ns'),
      T('length', null, r => nsCell(r.end_ns - r.start_ns), 'num'),
      N('busy', 'busy_ns'), T('busy %', null, r => r.end_ns > r.start_ns
        ? pct(r.busy_ns / (r.end_ns - r.start_ns), 1) : '\u2013', 'num'),
      C('kernels', 'kernel_events'), S('cause', 'cause'),
      T('top kernels', 'top_kernels', v => topList(v)),
      T('top launch configs', 'top_launches', v => topList(v, true)),
      T('raw events', null, r => sliceLink(st.id, all ? r.rank : st.rank,
        r.start_ns, r.end_ns))]}];

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
    const data = await get(url(tab.path, {id: c.id}, Object.assign(query,
      {limit: tab.limit})));
    const all = data.rank === null;
    return [tab.note ? el('p', {class: 'muted'}, tab.note) : null,
      tab.before && data.rows.length ? tab.before(data.rows) : null,
      table(tab.cols(all, st, show).filter(Boolean), data.rows),
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

/*
 * traced dashboard, the analysis tabs of the capture view: the
 * utilisation timeline, idle time by cause, kernel families, and the
 * step-time pictures under the Steps tab. Each render function answers the
 * nodes to show; capture.js calls them (see TABS there). Uses app.js and
 * charts.js.
 */
'use strict';

/* The ranks a picture is drawn for: the one picked, else every numbered
 * rank (at most 16: a picture per rank). */
function pictureRanks(st, ranks) {
  return st.rank !== '' ? [Number(st.rank)]
    : ranks.filter(r => r.rank != null).map(r => r.rank).slice(0, 16);
}

/* Rows wanted of the timeline: about one per two pixels of the page. */
function timelineBuckets() {
  return Math.max(64, Math.min(1024, Math.round(window.innerWidth / 2)));
}

async function timelineTab(c, st, ranks) {
  const buckets = timelineBuckets();
  const charts = await Promise.all(pictureRanks(st, ranks).map(async r => {
    const [tl, ph] = await Promise.all([
      get(url('/captures/{id}/timeline', {id: c.id}, {rank: r, buckets})),
      get(url('/captures/{id}/phases', {id: c.id}, {rank: r}))]);
    return timelineChart(r, tl.rows, ph.rows);
  }));
  return [el('p', {class: 'muted'}, 'GPU busy time per bucket, stacked by ',
    'category (the kernel, copy or memset that kept the device busy); the ',
    'white above the stack is idle time. Bands: phases (colour by what ',
    'started them) and the step kind running.'), charts];
}

const IDLE_NOTE = 'Idle time is the span minus GPU busy time, split by ' +
  'the first cause that holds: the host was late issuing the next work ' +
  '(host late), a synchronising call held the host (sync), the device ' +
  'waited for a collective, gaps inside one graph replay, time between ' +
  'steps, or other (work queued that did not start). The causes sum to ' +
  'the idle time.';

async function idleTab(c, st, ranks) {
  const picked = pictureRanks(st, ranks);
  const per = await Promise.all(picked.map(r =>
    get(url('/captures/{id}/idle', {id: c.id}, {rank: r}))));
  const idleOf = r => (ranks.find(x => x.rank === r) || {}).idle_ns || 0;
  const bySteps = await get(url('/captures/{id}/idle', {id: c.id},
    {rank: st.rank, by: 'step'}));
  const withDelay = ranks.filter(r => r.launch_delays != null &&
    picked.includes(r.rank));
  return [el('p', {class: 'muted'}, IDLE_NOTE),
    idleBars(picked.map((r, i) => [r, idleOf(r), per[i].rows])),
    el('h4', null, 'By step kind'),
    table([T('step', 'step', v => v == null ? 'outside steps' : v),
      S('cause', 'cause'), N('idle', 'idle_ns'),
      T('share of idle', 'share', shareCell, 'num')], bySteps.rows),
    el('h4', null, 'Launch delay (kernel start minus its launch call)'),
    table([C('rank', 'rank'), C('kernels', 'launch_delays'),
      N('min', 'launch_delay_min_ns'), N('p50', 'launch_delay_p50_ns'),
      N('p99', 'launch_delay_p99_ns'), N('max', 'launch_delay_max_ns')],
    withDelay)];
}

/* Under the Steps table: a histogram per kind with its p50 and p99, the
 * batch-size buckets, and the outliers beside the median step. */
async function stepsExtra(c, st, rows) {
  const q = {rank: st.rank};
  const [hist, buckets, outliers] = await Promise.all([
    get(url('/captures/{id}/steps/histogram', {id: c.id}, q)),
    get(url('/captures/{id}/steps/buckets', {id: c.id}, q)),
    get(url('/captures/{id}/steps/outliers', {id: c.id}, q))]);
  const pics = rows.map(s => stepHistogram(s.kind,
    hist.rows.filter(b => b.kind === s.kind), s));
  return [el('h4', null, 'Step times'), el('div', {class: 'charts'}, pics),
    el('h4', null, 'By batch size (bs) and tokens (tok)'),
    table([S('kind', 'kind'), S('by', 'dim'),
      T('range', null, b => b.hi == null ? '\u2265 ' + num(b.lo)
        : b.lo === b.hi ? num(b.lo) : num(b.lo) + '\u2013' + num(b.hi)),
      C('steps', 'count'), T('padded', 'padded_share', v => pct(v, 1),
        'num'), N('p50', 'p50_ns'), N('p99', 'p99_ns'), N('max', 'max_ns')],
    buckets.rows),
    el('h4', null, 'Slowest steps beside the median step'),
    outlierView(outliers.rows, c.id, st.rank)];
}

/* A step's card; its slice is the rank's (rank: the one picked, when the
 * rows are of one rank). */
function stepCard(o, id, rank) {
  const r = o.rank != null ? o.rank : rank;
  return el('div', {class: 'card step ' + o.role},
    el('strong', null, o.role === 'median' ? 'median step'
      : 'slowest #' + (o.index + 1)), o.rank != null ? ' rank ' + o.rank
      : null, ' \u00b7 ', nsCell(o.dur_ns), ' at ', nsCell(o.start_ns),
    ' \u00b7 ', sliceLink(id, r, o.start_ns, o.start_ns + o.dur_ns,
      'open in Perfetto (slice)'),
    el('div', null, el('code', {class: 'name'}, o.label)),
    el('ol', {class: 'step-kernels'}, o.top_kernels.map(k => el('li', null,
      kernelName(k), ' \u00d7', num(k.count), ' ', nsCell(k.total_ns)))));
}

function outlierView(rows, id, rank) {
  if (!rows.length) return el('p', {class: 'muted'}, 'no steps');
  const kinds = [...new Set(rows.map(o => o.kind))];
  const card = o => stepCard(o, id, rank);
  return kinds.map(k => el('div', {class: 'outliers'},
    el('h5', null, k), el('div', {class: 'cards'},
      rows.filter(o => o.kind === k && o.role === 'median').map(card),
      rows.filter(o => o.kind === k && o.role === 'slowest').map(card))));
}

/* Under the Families table: each family's time per step kind. */
async function familyStepsExtra(c, st) {
  const d = await get(url('/captures/{id}/families/steps', {id: c.id},
    {rank: st.rank, q: st.q, limit: LIMIT}));
  return [el('h4', null, 'Time per step kind (GPU-side labels)'),
    table([T('family', 'family', nameCell), S('step', 'step'),
      C('kernels', 'count'), N('total', 'total_ns'), C('steps', 'steps'),
      N('per step', 'per_step_ns')], d.rows)];
}

function familyCols(all, st, show) {
  return [T('family', 'family', v => el('a', {href: '#', title:
    'kernels of ' + v, onclick: ev => {
    ev.preventDefault();
    Object.assign(st, {tab: 'kernels', family: v, q: '', category: ''});
    show();
  }}, nameCell(v))), S('category', 'category'), C('kernels', 'kernels'),
  C('count', 'count'), N('total', 'total_ns'), N('avg', 'avg_ns'),
  N('p50', 'p50_ns'), N('p99', 'p99_ns'), N('max', 'max_ns'),
  T('share', 'share', shareCell, 'num'), all ? C('ranks', 'ranks') : null];
}

const ANALYSIS_TABS = [
  {id: 'timeline', label: 'Timeline', render: timelineTab},
  {id: 'idle', label: 'Idle', render: idleTab},
  {id: 'families', label: 'Families', path: '/captures/{id}/families',
    q: true, sort: true, limit: LIMIT, cols: familyCols,
    note: 'Kernels with template and parameter lists, Tensile solution ' +
      'fields, tile suffixes and Triton ordinals dropped: the same kernel ' +
      'at another tile is one family. A family opens its kernels.',
    after: familyStepsExtra}];

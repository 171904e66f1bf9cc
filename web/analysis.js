/*
 * traced dashboard, the analysis tabs of the capture view: the
 * utilisation timeline, idle time by cause, the critical path, kernel
 * families, and the step-time pictures under the Steps tab. Each render
 * function answers the nodes to show; capture.js calls them (see TABS
 * there). Uses app.js and charts.js.
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
    'white above the stack is idle time. Grey bands: phases (by what ',
    'started them) and the step kind running. Hover for the bucket\'s ',
    'figures.'), charts];
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
      T('cause', 'cause', catCell), N('idle', 'idle_ns'),
      T('share of idle', 'share', shareCell, 'num')], bySteps.rows, null,
    'No idle time: the GPU was busy from the first event to the last.'),
    el('h4', null, 'Launch delay (kernel start minus its launch call)'),
    table([C('rank', 'rank'), C('kernels', 'launch_delays'),
      N('min', 'launch_delay_min_ns'), N('p50', 'launch_delay_p50_ns'),
      N('p99', 'launch_delay_p99_ns'), N('max', 'launch_delay_max_ns')],
    withDelay, null, 'No launch delays: the trace links no kernel to the ' +
    'launch call that queued it (a kineto trace does, by correlation id; ' +
    'a GPU-only trace has no host side).')];
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
    buckets.rows, null, 'No batch sizes: the steps\' labels carry no bs= ' +
      'or tok= (ATOM\'s run labels do).'),
    el('h4', null, 'Slowest steps beside the median step'),
    outlierView(outliers.rows, c, st.rank)];
}

/* A step's card; its slice is the rank's (rank: the one picked, when the
 * rows are of one rank), and all ranks' over the same instants. */
function stepCard(o, c, rank) {
  const r = o.rank != null ? o.rank : rank;
  const end = o.start_ns + o.dur_ns;
  const all = r === '' || r == null ? null
    : ranksSliceFrom(c, Number(r), o.start_ns, end, 'all ranks');
  return el('div', {class: 'card step ' + o.role},
    el('strong', null, o.role === 'median' ? 'median step'
      : 'slowest #' + (o.index + 1)), o.rank != null ? ' rank ' + o.rank
      : null, ' \u00b7 ', nsCell(o.dur_ns), ' at ', nsCell(o.start_ns),
    ' \u00b7 ', sliceLink(c.id, r, o.start_ns, end, 'slice'),
    all ? [' \u00b7 ', all] : null,
    el('div', null, el('code', {class: 'name'}, o.label)),
    el('ol', {class: 'step-kernels'}, o.top_kernels.map(k => el('li', null,
      kernelName(k), ' \u00d7', num(k.count), ' ', nsCell(k.total_ns)))));
}

function outlierView(rows, c, rank) {
  if (!rows.length) return el('p', {class: 'muted'}, NO_STEPS);
  const kinds = [...new Set(rows.map(o => o.kind))];
  const card = o => stepCard(o, c, rank);
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
      N('per step', 'per_step_ns')], d.rows, null, NO_STEPS)];
}

function familyCols(all, st, show) {
  return [T('family', 'family', v => el('a', {href: '#', title:
    'kernels of ' + v, onclick: ev => {
    ev.preventDefault();
    Object.assign(st, {tab: 'kernels', family: v, q: '', category: ''});
    show();
  }}, nameCell(v)), null, 40), T('category', 'category', catCell),
  C('kernels', 'kernels'),
  C('count', 'count'), N('total', 'total_ns'), N('avg', 'avg_ns'),
  N('p50', 'p50_ns'), N('p99', 'p99_ns'), N('max', 'max_ns'),
  T('share', 'share', shareCell, 'num'),
  T('on path', 'critical_ns', nsCell, 'num'),
  all ? C('ranks', 'ranks') : null];
}

/* ---- the critical path (docs/CRITICAL_PATH.md) ---- */

const PATH_NOTE = 'The critical path of a step is the longest chain ' +
  'through its CPU ops, launch calls, kernels, copies and ' +
  'synchronisation (as Holistic Trace Analysis builds it): what bounds ' +
  'the step. Slack: how much longer a kernel could have run without ' +
  'lengthening its step. A name filter finds one kernel.';

/* "on the path in N of M decode steps, slack p50 X". */
function onPathCell(r) {
  return [num(r.steps_on), ' of ', num(r.steps), ' ', r.step, ' steps',
    r.steps_on < r.steps ? [', slack p50 ', nsCell(r.slack_p50_ns)] : null];
}

const PATH_COLS = [T('on the path in', null, onPathCell),
  C('instances', 'instances'), C('on path', 'on_path'),
  N('time on path', 'critical_ns'), N('slack p50', 'slack_p50_ns'),
  N('slack p99', 'slack_p99_ns'), N('slack max', 'slack_max_ns')];

/* The median and slowest step of each kind (the first four kinds), drawn
 * over their lanes (a step keeps at most 2048 stretches). */
async function pickedPaths(c, rank, kinds) {
  const picks = kinds.slice(0, 4).flatMap(kind => ['median', 'slowest']
    .map(step => [kind, step]));
  const got = await Promise.all(picks.map(([kind, step]) => get(url(
    '/captures/{id}/critical_path', {id: c.id},
    {rank, kind, step, limit: 1000}))));
  return picks.map(([kind, step], i) => got[i].rows.length
    ? pathLanes(kind + ' ' + step + ' step #' + got[i].rows[0].index,
      got[i].rows) : null);
}

async function criticalTab(c, st, ranks) {
  const rank = pictureRanks(st, ranks)[0];
  const q = {rank: st.rank};
  const named = Object.assign({q: st.q, limit: LIMIT}, q);
  const sum = await get(url('/captures/{id}/critical_path/summary',
    {id: c.id}, q));
  const [steps, kernels, fams, culprits, seqs, med, paths, names] =
    await Promise.all([
      get(url('/captures/{id}/critical_path/steps', {id: c.id},
        {rank, limit: 50})),
      get(url('/captures/{id}/critical_path/kernels', {id: c.id}, named)),
      get(url('/captures/{id}/critical_path/families', {id: c.id}, named)),
      get(url('/captures/{id}/idle/culprits', {id: c.id},
        Object.assign({limit: LIMIT}, q))),
      get(url('/captures/{id}/sequences', {id: c.id}, named)),
      get(url('/captures/{id}/sequences/median', {id: c.id},
        {rank, limit: 200})),
      pickedPaths(c, rank, sum.rows.map(r => r.step)), kernelNames(c.id)]);
  const waited = [el('h4', null, 'Who kept the GPU waiting'),
    table([T('step', 'step', v => v == null ? 'outside steps' : v),
      T('cause', 'cause', catCell), T('culprit', 'culprit', v => v == null
        ? '\u2013' : nameCell(v)), S('kind', 'culprit_kind'),
      C('count', 'count'), N('idle caused', 'idle_ns'), N('p50', 'p50_ns'),
      N('p99', 'p99_ns')], culprits.rows, null, 'Nobody: no idle stretch ' +
      'was the host\'s (late, or held in a synchronising call).')];
  if (!sum.rows.length) {
    return [el('p', {class: 'muted'}, PATH_NOTE), el('p', {class: 'empty'},
      'No critical path: no step (a run label, a ProfilerStep, else the ',
      'whole trace) was analysed; docs/CRITICAL_PATH.md says when one is ',
      'not (too big, a cycle, no kernel launched in it).'), waited];
  }
  const kernel = T('kernel', 'name', readable(names));
  return [el('p', {class: 'muted'}, PATH_NOTE),
    el('h4', null, 'What bounds each step kind'), pathBreakdown(sum.rows),
    el('p', {class: 'muted'}, 'Path p50 and max are one step\'s ',
      'path; cpu to sync are summed over the analysed steps.'),
    table([S('step', 'step'), C('steps', 'steps'), C('analysed', 'analyzed'),
      N('path p50', 'length_p50_ns'), N('path max', 'length_max_ns'),
      ...LENGTH_BOUNDS.concat('sync').map(b => N(b, b + '_ns')),
      C('kernels on path', 'kernels_on_path'), C('kernels', 'kernels'),
      C('launch queue max', 'queue_max')], sum.rows),
    el('h4', null, 'Median and slowest steps', rank != null ? ' (rank ' +
      rank + ')' : null), boundLegend(), paths, waited,
    el('h4', null, 'Kernels on the critical path'),
    table([kernel].concat(PATH_COLS), kernels.rows, null, st.q
      ? 'No kernel on a path has \u201c' + st.q + '\u201d in its name.'
      : 'No kernel lies on a critical path.'),
    el('h4', null, 'Families on the critical path'),
    table([T('family', 'family', nameCell)].concat(PATH_COLS), fams.rows,
      null, 'No family lies on a critical path.'),
    el('h4', null, 'Steps', rank != null ? ' (rank ' + rank + ')' : null),
    table([C('#', 'index'), S('step', 'step'), S('role', 'role'),
      S('status', 'status'), N('window', 'dur_ns'),
      N('path', 'length_ns'), ...LENGTH_BOUNDS.map(b => N(b, b + '_ns')),
      C('kernels on path', 'kernels_on_path'), C('kernels', 'kernels'),
      C('queue max', 'queue_max')], steps.rows, null, 'No step of this ' +
      'rank was analysed (pick another rank).'),
    el('h4', null, 'Most frequent kernel sequences (is decode fused?)'),
    table([S('step', 'step'), C('n', 'n'), T('sequence', 'sequence',
      nameCell), C('count', 'count'), C('steps', 'steps'),
    N('kernel time', 'total_ns')], seqs.rows, null, 'No run of two or ' +
      'more kernels in an analysed step.'),
    el('h4', null, 'The median step\'s kernels in order'),
    table([S('step', 'step'), C('#', 'position'), T('family', 'family',
      nameCell), kernel, C('count', 'count'),
    N('time', 'dur_ns'), T('share', 'share', shareCell, 'num')], med.rows,
    null, 'No median step with kernels on this rank.')];
}

const ANALYSIS_TABS = [
  {id: 'timeline', label: 'Timeline', render: timelineTab},
  {id: 'idle', label: 'Idle', render: idleTab},
  {id: 'critical', label: 'Critical path', render: criticalTab, q: true},
  {id: 'families', label: 'Families', path: '/captures/{id}/families',
    q: true, sort: true, limit: LIMIT, cols: familyCols,
    note: 'Kernels with template and parameter lists, Tensile solution ' +
      'fields, tile suffixes and Triton ordinals dropped: the same kernel ' +
      'at another tile is one family. A family opens its kernels.',
    after: familyStepsExtra}];

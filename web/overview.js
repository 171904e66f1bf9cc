/*
 * traced dashboard, the top of a capture's page (#/captures/<id>): what a
 * performance engineer asks first, on one screen (1400x900): the head
 * (status, the configuration, the verdict in one line), the glance (step
 * time, the GPU's busy and idle share, the top kernel families and the
 * benchmark's headline), then the benchmark as one compact table, the
 * verdict's reasons and changes, the ranks; a failed capture shows its
 * error and the log opened at it. capture.js draws the tabs below. Uses
 * app.js, charts.js and results.js.
 */
'use strict';

/* Members of the capture object itself; the others are its extra. */
const OWN = ['id', 'kind', 'label', 'params', 'status', 'phase', 'created_at',
  'started_at', 'finished_at', 'phase_started_at', 'queue_position',
  'progress', 'error', 'bench', 'ranks', 'collectives', 'verdict'];
/* The phases a capture runs after the queue (PHASES: lifecycle.js). */
const RUN_PHASES = PHASES.filter(p => p !== 'queued');
/* Families in the glance. */
const GLANCE_FAMILIES = 5;

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

/* The configuration in one line: the model's folder name (its path on
 * hover), the TP it ran at, the benchmark's shape. */
function configLine(c) {
  const p = c.params || {};
  if (!p.model) return ['path ', el('code', {title: p.path}, p.path || '\u2013')];
  const tp = c.launch ? c.launch.tp : p.tp;
  return [el('code', {title: p.model}, p.model.split('/').pop()),
    ' \u00b7 tp ', num(tp), ' \u00b7 isl ', num(p.isl), ' \u00b7 osl ',
    num(p.osl), ' \u00b7 conc ', num(p.conc), p.prompt_multiplier > 1
      ? ' \u00b7 prompts \u00d7' + p.prompt_multiplier : null,
    p.more ? ' \u00b7 profiler more' : null];
}

function captureHead(c) {
  const live = !FINAL.includes(c.status);
  return el('div', {class: 'head'},
    el('h2', null, (c.kind === 'import' ? 'Import #' : 'Capture #') + c.id,
      c.node ? [' on ', el('a', {href: /^https?:\/\//.test(c.node_url || '')
        ? c.node_url : null, title: 'its node: raw traces and slices are ' +
        'there'}, c.node)] : null,
      c.label ? [' \u00b7 ', c.label] : null, ' ', badge(c.status),
      /* A capture of the fleet is deleted on its node. */
      c.node ? null : el('button', {class: 'drop',
        onclick: () => dropCapture(c)}, live ? 'cancel' : 'delete')),
    el('p', {class: 'meta'}, configLine(c),
      c.preset ? [' \u00b7 ', presetLine(c)] : null, el('br'),
      live ? ['started ', when(c.started_at)] : ['finished ',
        when(c.finished_at)], ' \u00b7 took ',
      elapsed(c.started_at, c.finished_at), el('span', {class: 'small'},
        ' (created ', when(c.created_at), ')'),
      c.queue_position ? ' \u00b7 queue position ' + c.queue_position
        : null),
    c.verdict ? verdictLine(c) : null);
}

/* Where the capture is among its phases: while it runs, and where one
 * that failed stopped (a done capture needs none). Only a sweep's point
 * collects its files from the sweep's folder (docs/SWEEPS.md). */
function lifecycle(c) {
  if (c.status === 'done') return null;
  const seq = (c.kind === 'import'
    ? RUN_PHASES.slice(RUN_PHASES.indexOf('indexing')) : RUN_PHASES)
    .filter(p => p !== 'collecting' || c.sweep);
  const at = seq.indexOf(c.error && c.error.phase || c.phase);
  const bad = FINAL.includes(c.status);
  return el('div', null, el('ol', {class: 'phases'}, seq.map((p, i) =>
    el('li', {class: i < at ? 'past' : i > at ? null : bad ? 'failed'
      : 'current'}, p.replace('_', ' ')))), el('p', {class: 'muted'},
    'phase ', c.phase, c.phase_started_at && !bad
      ? ' for ' + elapsed(c.phase_started_at) : null));
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

/* ---- a failure and its log ---- */

/* Lines that say something went wrong (the daemon's markers,
 * daemon/logscan.c, and what Python and the scripts print). */
const LOG_ERROR = /error|traceback|exception|fault|died|fatal|failed|killed|refused|cannot|can't/i;

/* The line of log the failure is about: the last one the message quotes
 * (the daemon quotes the marker or the log's last lines), else the last
 * that says an error; a traceback shows from its start. -1: none. */
function errorLine(lines, message) {
  const quoted = i => lines[i].trim().length >= 8 &&
    (message || '').includes(lines[i].trim());
  let at = -1;
  for (let i = lines.length - 1; i >= 0 && at < 0; i--) {
    if (quoted(i)) at = i;
  }
  for (let i = lines.length - 1; i >= 0 && at < 0; i--) {
    if (LOG_ERROR.test(lines[i])) at = i;
  }
  for (let i = at; i > Math.max(0, at - 60); i--) {
    if (/^Traceback/.test(lines[i])) return i;
  }
  return at;
}

/* The log's text with the failure's line marked, scrolled to it once
 * shown (a log opens on its banner otherwise, the error far below), and
 * again whenever its box changes width (lines wrap anew) until the
 * reader scrolls it. */
function logAtError(text, message) {
  const lines = text.replace(/\n$/, '').split('\n');
  const at = errorLine(lines, message);
  const marked = lines.map((l, i) => el('span', {class: i >= at && at >= 0 &&
    (i === at || LOG_ERROR.test(l)) && i < at + 40 ? 'err' : null,
  'data-line': i === at ? 'error' : null}, l + '\n'));
  const pre = el('pre', {class: 'log', tabindex: 0}, marked);
  const seen = new ResizeObserver(() => {
    pre.scrollTop = at >= 0 ? marked[at].offsetTop - 24 : pre.scrollHeight;
  });
  seen.observe(pre);
  for (const ev of ['wheel', 'mousedown', 'keydown', 'touchstart']) {
    pre.addEventListener(ev, () => seen.disconnect(), {once: true});
  }
  return pre;
}

function failure(c) {
  const e = c.error;
  return el('div', {class: 'error'}, el('strong', null, 'failed in ',
    e.phase || c.phase), ': ', e.message,
  e.log_tail ? logAtError(e.log_tail, e.message) : null);
}

/* ---- the glance ---- */

function tile(title, ...body) {
  return el('div', {class: 'tile'}, el('h4', null, title), body);
}

/* Step time of each kind (steady state: without the warm-up). */
function stepsTile(rows) {
  const order = k => ['prefill', 'decode'].indexOf(k) + 1 || 3;
  const kinds = rows.slice().sort((a, b) => order(a.kind) - order(b.kind))
    .slice(0, 3);
  return tile('Step time (steady state)', kinds.length ? el('table',
    {class: 'mini'}, el('tbody', null, kinds.map(s => el('tr', null,
      el('th', null, el('i', {class: 'dot', style: 'background:' +
        kindColor(s.kind)}), s.kind),
      el('td', null, num(s.count), ' steps'),
      el('td', null, 'p50 ', nsCell(s.steady_p50_ns != null
        ? s.steady_p50_ns : s.p50_ns)),
      el('td', null, 'p99 ', nsCell(s.steady_p99_ns != null
        ? s.steady_p99_ns : s.p99_ns)))))) : el('p', {class: 'muted'},
    'No steps: the trace has no run labels (ATOM\'s prefill[...] and ',
    'decode[...]) nor ProfilerStep ranges.'));
}

/* A share bar of parts [{name, ns, title}] of total. */
function shareStack(parts, total) {
  return el('div', {class: 'stack'}, parts.filter(p => p.ns > 0)
    .map(p => el('span', {title: p.title, style: 'background:' +
      colorOf(p.name) + ';width:' + p.ns / total * 100 + '%'})));
}

/* The GPU's busy and idle share over the ranks, idle by cause. */
function gpuTile(ranks, idle) {
  const sum = k => ranks.reduce((a, r) => a + (r[k] || 0), 0);
  const span = sum('span_ns');
  const idleNs = sum('idle_ns');
  return tile('GPU time', el('p', {class: 'big'}, 'busy ',
    el('strong', null, pct(span ? sum('gpu_busy_ns') / span : null, 1)),
    ' \u00b7 idle ', el('strong', {class: 'idle-share'},
      pct(span ? idleNs / span : null, 1))),
  el('p', {class: 'muted'}, 'of ', fmtNs(span), ranks.length > 1
    ? ' (' + ranks.length + ' ranks\' spans)' : ' span'),
  idle.length ? [shareStack(idle.map(r => ({name: r.cause, ns: r.idle_ns,
    title: r.cause + ' ' + fmtNs(r.idle_ns)})), idleNs || 1),
  el('p', {class: 'small'}, 'idle: ', idle.slice(0, 3).map((r, i) => [
    i ? ', ' : '', dot(colorOf(r.cause)), r.cause.replace('_', ' '), ' ',
    pct(r.share, 0)]))] : null);
}

/* The families taking the most device time, coloured by category. */
function familiesTile(rows, cats) {
  const total = cats.reduce((a, r) => a + r.total_ns, 0) || 1;
  return tile('Top kernel families', shareStack(cats.map(r => ({
    name: r.category, ns: r.total_ns, title: r.category + ' ' +
      pct(r.share, 1)})), total),
  rows.length ? el('table', {class: 'mini fams'}, el('tbody', null,
    rows.map(r => el('tr', null, el('td', null, dot(colorOf(r.category)),
      el('span', {class: 'fam', title: r.family + ' (' + r.category + ')'},
        r.family)), el('td', {class: 'num'}, pct(r.share, 1)),
    el('td', {class: 'num'}, nsCell(r.total_ns))))))
    : el('p', {class: 'muted'}, 'No kernels ran.'));
}

/* The benchmark's headline: throughput and the medians of latency. */
function benchTile(b) {
  if (!b) return null;
  return tile('Benchmark', el('p', {class: 'big'}, el('strong', null,
    fmtReal(b.output_throughput)), ' output tok/s'),
  el('p', null, 'TTFT p50 ', fmtMs(b.median_ttft_ms), ' \u00b7 TPOT p50 ',
    fmtMs(b.median_tpot_ms)),
  el('p', {class: 'muted'}, num(b.completed), ' of ', num(b.num_prompts),
    ' prompts in ', fmtReal(b.duration), ' s'));
}

function fmtMs(v) { return v == null ? '\u2013' : fmtReal(v) + ' ms'; }

/* The glance of a done capture: one request per figure, drawn when all
 * have answered. */
function glance(c) {
  const box = el('section', {class: 'glance', id: 'glance'},
    el('p', {class: 'muted'}, 'loading\u2026'));
  const ranks = (c.ranks || []).filter(r => r.status === 'done');
  const ask = (path, q) => get(url(path, {id: c.id}, q));
  Promise.all([ask('/captures/{id}/steps'),
    ask('/captures/{id}/idle'),
    ask('/captures/{id}/families', {limit: GLANCE_FAMILIES}),
    ask('/captures/{id}/categories')]).then(([steps, idle, fams, cats]) =>
    put(box, stepsTile(steps.rows), gpuTile(ranks, idle.rows),
      familiesTile(fams.rows, cats.rows), benchTile(c.bench)),
  e => put(box, errorBox(e)));
  return box;
}

/* ---- the benchmark ---- */

const BENCH_STATS = ['mean', 'median', 'p99', 'std'];
const BENCH_WHAT = {ttft: 'time to first token', tpot: 'time per output ' +
  'token', itl: 'inter-token latency', e2el: 'end-to-end latency'};

/* The bench's result as one table: a row per latency (TTFT, TPOT, ITL,
 * end to end), its mean, median, p99 and std in ms; throughput and the
 * run in a line above; every field of the result under "all fields". */
function benchTable(b) {
  const lat = {};
  const stats = new Set();
  for (const k of Object.keys(b)) {
    const m = /^(mean|median|std|p\d+)_(\w+)_ms$/.exec(k);
    if (!m) continue;
    (lat[m[2]] = lat[m[2]] || {})[m[1]] = b[k];
    stats.add(m[1]);
  }
  const cols = BENCH_STATS.filter(s => stats.has(s)).concat(
    [...stats].filter(s => !BENCH_STATS.includes(s)).sort());
  return el('div', {class: 'bench'}, el('h3', null, 'Benchmark'),
    el('p', {class: 'meta'}, num(b.completed), ' of ', num(b.num_prompts),
      ' prompts in ', fmtReal(b.duration), ' s \u00b7 ',
      fmtReal(b.request_throughput), ' req/s \u00b7 ',
      fmtReal(b.output_throughput), ' output tok/s \u00b7 ',
      fmtReal(b.total_token_throughput), ' tok/s in all \u00b7 concurrency ',
      fmtReal(b.concurrency), b.max_concurrency != null ? ' (max ' +
        num(b.max_concurrency) + ')' : ''),
    Object.keys(lat).length ? el('table', {class: 'grid compact'},
      el('thead', null, el('tr', null, el('th', null, 'latency (ms)'),
        cols.map(s => el('th', {class: 'num'}, s)))),
      el('tbody', null, Object.keys(lat).map(k => el('tr', null,
        el('td', {title: BENCH_WHAT[k] || k}, k.toUpperCase()),
        cols.map(s => el('td', {class: 'num', title: lat[k][s] == null ? null
          : String(lat[k][s])}, fmtReal(lat[k][s]))))))) : null,
    el('details', null, el('summary', null, 'all ',
      String(Object.keys(b).length), ' fields'), kv(b)));
}

/* ---- the ranks ---- */

/* The figures over the ranks indexed. */
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

/* Everything under the head: the failure, the glance, the benchmark and
 * the verdict side by side, the ranks, the logs, the request. */
function captureBody(c) {
  const logs = c.kind === 'capture'
    ? ['server', 'bench', 'launcher', 'stop', 'gpu']
    .map(w => fileLink(url('/captures/{id}/logs', {id: c.id}, {which: w}),
      w + ' log')) : [];
  const extra = {};
  for (const k of Object.keys(c)) if (!OWN.includes(k)) extra[k] = c[k];
  const done = (c.ranks || []).some(r => r.status === 'done');
  return el('div', null, lifecycle(c), progress(c),
    c.error ? failure(c) : null,
    done && FINAL.includes(c.status) ? glance(c) : null,
    el('div', {class: 'pair'}, c.bench ? benchTable(c.bench) : null,
      c.verdict ? verdictBox(c) : null),
    c.ranks && c.ranks.length ? [el('h3', null, 'Ranks'), totals(c.ranks),
      ranksTable(c)] : null,
    el('p', {class: 'links'}, logs),
    el('details', null, el('summary', null, 'request and paths'),
      kv(c.params), kv(extra)));
}

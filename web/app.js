/*
 * traced dashboard: the list of captures (#/), one capture
 * (#/captures/<id>) and a comparison (#/diff/<a>/<b>). Plain ES2017, no
 * build step and nothing fetched from outside: the lab may be offline.
 *
 * Every string from the API reaches the page as a text node (kernel names
 * hold <, > and &): el() never parses HTML. Every API path is written as
 * url('/route/{param}', ...) with the template of api/openapi.yaml, so that
 * tests/test_web.py can check each one against that file. The capture view
 * is in capture.js, its analysis tabs in analysis.js, the pictures (SVG) in
 * charts.js.
 */
'use strict';

/* STATUSES, FINAL and PHASES come from lifecycle.js, which traced makes
 * from its own vocabulary (common/lifecycle.h). */
const PROPS = ['value', 'checked', 'selected', 'disabled'];
/* Captures per page of the list (the API's list_limit, at most
 * list_limit_max). */
const LIST_PAGE = 50;
const nf = new Intl.NumberFormat('en-US');

/* ---- DOM ---- */

function el(tag, attrs, ...kids) {
  const n = document.createElement(tag);
  for (const k of Object.keys(attrs || {})) {
    const v = attrs[k];
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else if (PROPS.includes(k)) n[k] = v;
    else n.setAttribute(k, v === true ? '' : v);
  }
  return add(n, kids);
}

function add(n, ...kids) {
  for (const k of kids) {
    if (k === null || k === undefined || k === false) continue;
    if (Array.isArray(k)) add(n, ...k);
    else n.appendChild(k instanceof Node ? k : document.createTextNode(k));
  }
  return n;
}

function put(n, ...kids) {
  n.textContent = '';
  return add(n, kids);
}

function select(value, options, onchange) {
  return el('select', {onchange: e => onchange(e.target.value)},
    options.map(o => {
      const [v, label] = Array.isArray(o) ? o : [o, o];
      return el('option', {value: v, selected: String(v) === String(value)},
        label);
    }));
}

/* ---- formatting: raw values stay in the title tooltip ---- */

function num(v) {
  return v === null || v === undefined ? '\u2013'
    : typeof v === 'number' ? nf.format(v) : String(v);
}

/* Three significant digits (123, 12.3, 1.23), never fewer than the whole
 * number: what a reader compares at a glance; the exact value is in the
 * tooltip. */
function sig3(x) {
  const a = Math.abs(x);
  if (a >= 100) return nf.format(Math.round(x));
  return a >= 1 ? x.toFixed(a >= 10 ? 1 : 2) : String(Number(x.toPrecision(3)));
}

function fmtNs(v) {
  if (v === null || v === undefined) return '\u2013';
  const a = Math.abs(v);
  if (a < 999.5) return nf.format(Math.round(v)) + ' ns';
  if (a < 999.5e3) return sig3(v / 1e3) + ' \u00b5s';
  if (a < 999.5e6) return sig3(v / 1e6) + ' ms';
  return sig3(v / 1e9) + ' s';
}

/* A measured real (a throughput, a latency in ms): three significant
 * digits; an integer as it is. */
function fmtReal(v) {
  if (v === null || v === undefined || v === '') return '\u2013';
  if (typeof v !== 'number') return String(v);
  return Number.isInteger(v) ? nf.format(v) : sig3(v);
}

function fmtBytes(v) {
  if (v === null || v === undefined) return '\u2013';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let x = v;
  while (Math.abs(x) >= 1024 && i < units.length - 1) { x /= 1024; i++; }
  return i ? sig3(x) + ' ' + units[i] : v + ' B';
}

function nsCell(v) {
  return el('span', {title: v == null ? null : num(v) + ' ns'}, fmtNs(v));
}

function bytesCell(v) {
  return el('span', {title: v == null ? null : num(v) + ' bytes'},
    fmtBytes(v));
}

function pct(v, digits) {
  return v == null ? '\u2013'
    : (v * 100).toFixed(digits === undefined ? 1 : digits) + '%';
}

function shareCell(v) {
  return el('span', {class: 'share', title: pct(v, 4)},
    el('span', {class: 'fill', style: 'width:' + Math.min(100, v * 100) +
      '%'}), pct(v));
}

function dim(v) { return Array.isArray(v) ? v.join('\u00d7') : '\u2013'; }

function when(s) {
  if (!s) return '\u2013';
  const d = new Date(s);
  const p = x => String(x).padStart(2, '0');
  return el('span', {title: s}, d.getFullYear() + '-' + p(d.getMonth() + 1) +
    '-' + p(d.getDate()) + ' ' + p(d.getHours()) + ':' + p(d.getMinutes()) +
    ':' + p(d.getSeconds()));
}

function elapsed(from, to) {
  if (!from) return '\u2013';
  const s = Math.max(0, Math.round(((to ? Date.parse(to) : Date.now()) -
    Date.parse(from)) / 1000));
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' m ' + s % 60 + ' s';
  return Math.floor(s / 3600) + ' h ' + Math.floor(s % 3600 / 60) + ' m';
}

function nameCell(v) { return el('span', {class: 'name', title: v}, v); }

/* A kernel of a top list: its demangled form where its name was mangled
 * (as the kernels table shows it), the name itself on hover. */
function kernelName(k) {
  return el('span', {class: 'name', title: k.name}, k.demangled || k.name);
}

/* The demangled forms of capture id's kernel names, by name: the kernels
 * table's own (the indexer demangles each name once, and the Kernels tab
 * shows them), asked once per capture for its table_limit_max (1000)
 * kernels with the most time, so that every page that names a kernel
 * (the diff, the critical path, the verdict, decode) shows the same
 * form. A name not among them shows as it is. */
const NAMES = new Map();

function kernelNames(id) {
  if (!NAMES.has(id)) {
    NAMES.set(id, get(url('/captures/{id}/kernels', {id}, {limit: 1000}))
      .then(d => new Map(d.rows.filter(r => r.demangled)
        .map(r => [r.name, r.demangled])), () => {
        NAMES.delete(id);
        return new Map();
      }));
  }
  return NAMES.get(id);
}

/* A column formatter showing a kernel name by names (a Map of
 * kernelNames()), the name as traced in the tooltip. */
function readable(names) {
  return v => v == null ? '\u2013' : kernelName({name: String(v),
    demangled: names && names.get(v)});
}

function badge(status) {
  return el('span', {class: 'badge ' + status}, status);
}

/* ---- tables: cols are {h: header, k: key, f: format(value, row)} ---- */

/* w: a text column's widest, in characters (default TEXT_COL_CH). */
const T = (h, k, f, cls, w) => ({h, k, f: f || num, cls, w});
const N = (h, k) => T(h, k, nsCell, 'num');
const C = (h, k) => T(h, k, num, 'num');
const B = (h, k) => T(h, k, bytesCell, 'num');
const S = (h, k) => T(h, k, v => String(v == null || v === '' ? '\u2013' : v));

function cmp(x, y) {
  if (x == null) return y == null ? 0 : 1;
  if (y == null) return -1;
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  return String(x).localeCompare(String(y));
}

/* A text column is at least as wide as its longest value, up to this
 * many characters (a kind, a category never wraps; a long name wraps
 * past it). */
const TEXT_COL_CH = 30;

/* The width a text column asks: its header's and its longest value's, up
 * to its w or TEXT_COL_CH characters. */
function colWidth(c, rows) {
  let most = String(c.h).length;
  for (const r of rows.slice(0, 200)) {
    const v = c.k ? r[c.k] : null;
    if (v != null && typeof v !== 'object') {
      most = Math.max(most, String(v).length);
    }
  }
  return Math.min(most, c.w || TEXT_COL_CH) + 1;
}

/* A table sorted by a click on a header (numbers largest first, then
 * ascending on a second click); rows stay in the API's order until then.
 * empty: what to say when there are no rows (why, and what would fill
 * them). */
function table(cols, rows, rowClass, empty) {
  if (!rows.length) {
    return el('p', {class: 'muted empty'}, empty || 'nothing to show');
  }
  const tbody = el('tbody');
  let key = null;
  let dir = 1;
  const fill = () => {
    const rs = key ? rows.slice().sort((a, b) => dir * cmp(a[key], b[key]))
      : rows;
    put(tbody, rs.map(r => el('tr', {class: rowClass ? rowClass(r) : null},
      cols.map(c => el('td', {class: c.cls}, c.f(c.k ? r[c.k] : r, r))))));
  };
  const head = cols.map(c => el('th', {
    class: c.cls, title: c.k ? 'sort by ' + c.h : null,
    style: c.cls && c.cls.startsWith('num') ? null
      : 'min-width:' + colWidth(c, rows) + 'ch',
    onclick: c.k ? () => {
      dir = key === c.k ? -dir
        : (typeof rows[0][c.k] === 'number' ? -1 : 1);
      key = c.k;
      fill();
    } : null}, c.h));
  fill();
  return el('div', {class: 'hscroll'}, el('table', {class: 'grid'},
    el('thead', null, el('tr', null, head)), tbody));
}

function kv(obj) {
  const rows = Object.keys(obj || {}).map(k => {
    const v = obj[k];
    return el('tr', null, el('th', null, k), el('td', null,
      v !== null && typeof v === 'object' ? el('code', null,
        JSON.stringify(v)) : num(v)));
  });
  return rows.length ? el('table', {class: 'kv'}, el('tbody', null, rows))
    : el('p', {class: 'muted'}, 'none');
}

/* ---- API ---- */

/* tpl is a path template of api/openapi.yaml. The path is made relative
 * so that the dashboard also works behind a reverse proxy's prefix. */
function url(tpl, params, query) {
  const path = tpl.replace(/\{(\w+)\}/g,
    (_, k) => encodeURIComponent(params[k]));
  const qs = Object.keys(query || {})
    .filter(k => query[k] !== null && query[k] !== undefined &&
      query[k] !== '')
    .map(k => encodeURIComponent(k) + '=' + encodeURIComponent(query[k]));
  return path.slice(1) + (qs.length ? '?' + qs.join('&') : '');
}

/* The one place that talks to the API: adds the stored token, if any. */
function withToken(u, method, headers, body) {
  const token = localStorage.getItem('traced_token');
  if (token) headers.Authorization = 'Bearer ' + token;
  return fetch(u, {method, headers, body});
}

async function call(method, u, body) {
  const headers = {Accept: 'application/json'};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await withToken(u, method, headers,
    body === undefined ? undefined : JSON.stringify(body));
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = text; }
  if (r.ok) return data;
  const e = (data && data.error) || {};
  const err = new Error(e.message || r.status + ' ' + r.statusText);
  Object.assign(err, {status: r.status, code: e.code, field: e.field});
  throw err;
}

const get = u => call('GET', u);

/* A link to a file the API serves (a raw trace, a log). A browser sends
 * no bearer header for a plain link, so with a token set the click fetches
 * the file with it and hands the browser the bytes instead. */
function fileLink(href, text, download) {
  const open = ev => {
    if (!localStorage.getItem('traced_token')) return;
    ev.preventDefault();
    withToken(href, 'GET', {})
      .then(r => r.ok ? r.blob()
        : Promise.reject(new Error(r.status + ' ' + r.statusText)))
      .then(blob => {
        const a = el('a', {href: URL.createObjectURL(blob),
          download: download || null, target: download ? null : '_blank'});
        a.click();
        setTimeout(() => URL.revokeObjectURL(a.href), 60000);
      })
      .catch(e => window.alert('cannot fetch ' + href + ': ' + e.message));
  };
  return el('a', {href, download: download || null,
    target: download ? null : '_blank', onclick: open}, text);
}

/* ---- slices: downloaded, or opened in Perfetto ---- */

/* The settings the dashboard acts on (GET /settings), asked once; asked
 * again after a failure (a token set since). */
let settingsAsked = null;
/* perfetto_ui_url once known: "open in Perfetto" shows only then, so that
 * its click can open the window at once (a browser blocks a window opened
 * later than the click). */
let perfettoUi = '';

function settings() {
  if (!settingsAsked) {
    settingsAsked = get(url('/settings', {})).then(s => {
      perfettoUi = s.perfetto_ui_url || '';
      return s;
    }, () => {
      settingsAsked = null;
      return {perfetto_ui_url: ''};
    });
  }
  return settingsAsked;
}

/* Perfetto's window is PINGed this often, this many times at most, until
 * it answers PONG (docs/API.md, "Slices": the hand-off). */
const PING_MS = 100;
const PING_TRIES = 600;

/* Hands the trace bytes (a promise of an ArrayBuffer) to the Perfetto UI
 * in window w (of origin) once it answers PONG: {perfetto: {buffer,
 * title}}, the UI's documented postMessage hand-off. */
function handOver(w, origin, bytes, title) {
  let tries = 0;
  const onMessage = ev => {
    if (ev.source !== w || ev.origin !== origin || ev.data !== 'PONG') return;
    stop();
    bytes.then(buffer => w.postMessage({perfetto: {buffer, title}}, origin,
      [buffer]))
      .catch(e => window.alert('cannot fetch the slice: ' + e.message));
  };
  const timer = setInterval(() => {
    if (w.closed || ++tries > PING_TRIES) stop();
    else w.postMessage('PING', origin);
  }, PING_MS);
  function stop() {
    clearInterval(timer);
    window.removeEventListener('message', onMessage);
  }
  window.addEventListener('message', onMessage);
}

/* Opens perfettoUi in a new window and hands it the slice at href. */
function openInPerfetto(href, title) {
  const ui = new URL(perfettoUi, location.href);
  const w = window.open(ui.href);
  if (!w) {
    window.alert('the browser blocked the Perfetto window: allow pop-ups ' +
      'for this page');
    return;
  }
  const bytes = withToken(href, 'GET', {}).then(r => r.ok ? r.arrayBuffer()
    : Promise.reject(new Error(r.status + ' ' + r.statusText)));
  handOver(w, ui.origin, bytes, title);
}

/* A slice's download link and, when perfetto_ui_url is set, its "open in
 * Perfetto" beside it. */
function sliceLinks(href, text, file) {
  const open = el('button', {type: 'button', class: 'perfetto', hidden: true,
    onclick: () => openInPerfetto(href, file)}, 'open in Perfetto');
  settings().then(() => { open.hidden = !perfettoUi; });
  return el('span', {class: 'slice'}, fileLink(href, text, file), ' ', open);
}

/* The slice of a rank's raw trace over [start, end) ns from its t0 (a
 * step, a phase, a collective): a kineto JSON to open in Perfetto, with
 * traced's steps and idle causes as extra tracks. */
function sliceLink(id, rank, start, end, text) {
  if (rank === '' || rank == null) return null;
  const stop = Math.max(end, start + 1);
  return sliceLinks(url('/captures/{id}/ranks/{r}/slice', {id, r: rank},
    {start_ns: start, end_ns: stop}), text || 'slice',
  'capture' + id + '-rank' + rank + '-' + start + '-' + stop + '.json');
}

/* The capture's t0: its earliest done rank's (an all-ranks slice's window
 * is from it). */
function captureT0(c) {
  const t0s = (c.ranks || []).filter(r => r.status === 'done')
    .map(r => r.t0_ns);
  return t0s.length ? Math.min(...t0s) : null;
}

/* Every rank's window over [start, end) ns from the capture's t0, in one
 * timeline (a step or a collective that spans ranks). */
function ranksSliceLink(c, start, end, text) {
  if ((c.ranks || []).filter(r => r.status === 'done').length < 2)
    return null;
  const from = Math.max(0, Math.floor(start));
  const stop = Math.max(Math.ceil(end), from + 1);
  return sliceLinks(url('/captures/{id}/slice', {id: c.id},
    {start_ns: from, end_ns: stop}), text || 'all ranks',
  'capture' + c.id + '-ranks-' + from + '-' + stop + '.json');
}

/* ranksSliceLink() of [start, end) ns from rank's t0. */
function ranksSliceFrom(c, rank, start, end, text) {
  const r = (c.ranks || []).find(x => x.rank === rank);
  const t0 = captureT0(c);
  if (!r || t0 === null) return null;
  return ranksSliceLink(c, start + r.t0_ns - t0, end + r.t0_ns - t0, text);
}

function errorBox(e) {
  return el('div', {class: 'error'}, el('strong', null,
    e.status ? 'HTTP ' + e.status + (e.code ? ' ' + e.code : '') : 'error'),
  ': ', e.message, e.field ? [' (field ', el('code', null, e.field), ')']
    : null, e.status === 401 ? [' \u2014 ', el('a', {href: '#',
    onclick: askToken}, 'set the API token')] : null);
}

function askToken(ev) {
  ev.preventDefault();
  const t = window.prompt('traced auth token (kept in this browser)');
  if (t !== null) localStorage.setItem('traced_token', t.trim());
  route();
}

/* ---- routing: one view at a time; a timer or a late answer of an old
 * view is dropped by comparing its generation with the current one ---- */

let gen = 0;
let timer = null;

function later(fn, ms) {
  const g = gen;
  clearTimeout(timer);
  timer = setTimeout(() => { if (g === gen) fn(); }, ms);
}

/* Keeps a view's options in the hash (#/diff/1/2?by=step) without a
 * hashchange, so that a pasted link opens the same view. */
function saveOpts(opts) {
  const path = location.hash.replace(/^#/, '').split('?')[0];
  const qs = Object.keys(opts).filter(k => opts[k] !== '' && opts[k] != null)
    .map(k => k + '=' + encodeURIComponent(opts[k])).join('&');
  const h = path + (qs ? '?' + qs : '');
  history.replaceState(null, '', h ? '#' + h : location.pathname);
}

function route() {
  gen++;
  clearTimeout(timer);
  const [path, qs] = location.hash.replace(/^#/, '').split('?');
  const q = new URLSearchParams(qs || '');
  const app = put(document.getElementById('app'));
  let m = new RegExp('^/captures/(' + REF + ')/?$').exec(path);
  if (m) return captureView(app, idOf(m[1]), q);
  m = new RegExp('^/diff/(' + REF + ')/(' + REF + ')/?$').exec(path);
  if (m) return diffView(app, idOf(m[1]), idOf(m[2]), q);
  /* #/sweeps... (sweep.js). */
  if (sweepRoute(app, path)) return;
  /* #/fleet, #/trend (a lab view: fleet.js), #/local (this node's own
   * list, which a lab view does not open on). */
  const view = {fleet: fleetListView, trend: trendView, local: listView}[
    path.replace(/^\/|\/$/g, '')];
  if (view) return view(app, q);
  /* A lab view opens on the fleet's list (fleet.js). */
  const g = gen;
  labView().then(lab => {
    if (g === gen) (lab ? fleetListView : listView)(app, q);
  });
}

/* A capture in a link: this node's id, or a capture of the fleet (a lab
 * view, fleet.js): node:id or its UUID. */
const REF = '\\d+|[\\w.-]+:\\d+|[0-9a-f]{8}-[0-9a-f-]{27}';

function idOf(text) { return /^\d+$/.test(text) ? Number(text) : text; }

/* ---- list view ---- */

function listView(app, q) {
  const g = gen;
  const st = {status: q.get('status') || '', kind: q.get('kind') || '',
    pages: 1, sel: new Set(), rows: [], more: false};
  const box = el('div');
  const compare = el('button', {disabled: true, onclick: () => {
    const [a, b] = Array.from(st.sel).sort((x, y) => x - y);
    location.hash = '#/diff/' + a + '/' + b;
  }}, 'compare');
  const filters = el('div', {class: 'tools'},
    select(st.status, [['', 'any status']].concat(STATUSES),
      v => { st.status = v; load(); }),
    select(st.kind, [['', 'captures and imports'], 'capture', 'import'],
      v => { st.kind = v; load(); }),
    compare, el('span', {class: 'muted'}, 'tick two rows to compare'));
  add(app, el('h2', null, 'Captures'), filters, box,
    el('div', {class: 'forms'}, captureForm(), importForm()));

  function toggle(id, tick) {
    if (tick.checked) st.sel.add(id); else st.sel.delete(id);
    tick.closest('tr').classList.toggle('picked', tick.checked);
    compare.disabled = st.sel.size !== 2;
  }

  const cols = [
    T('', null, c => el('input', {type: 'checkbox', checked: st.sel.has(c.id),
      onchange: e => toggle(c.id, e.target)})),
    T('id', 'id', v => el('a', {href: '#/captures/' + v}, '#' + v), 'num'),
    S('kind', 'kind'), S('label', 'label'),
    T('model or path', null, c => {
      const p = c.params && (c.params.model || c.params.path);
      return p ? el('span', {title: p}, p.split('/').pop()) : '\u2013';
    }),
    T('tp', null, c => num(c.launch ? c.launch.tp : c.params && c.params.tp),
      'num'),
    T('status', 'status', badge), T('verdict', 'verdict', verdictBadge),
    S('phase', 'phase'),
    T('created', 'created_at', when),
    T('duration', null, c => elapsed(c.started_at, c.finished_at), 'num'),
    T('', null, c => el('a', {href: '#/captures/' + c.id}, 'open'))];

  function render() {
    put(box, table(cols, st.rows, c => st.sel.has(c.id) ? 'picked' : null,
      st.status || st.kind ? 'No capture matches these filters.'
        : 'No capture yet: queue one or import a trace below (make run ' +
        'queues a demo capture).'),
      st.more ? el('button', {onclick: () => { st.pages++; load(); }},
        'show more') : null);
  }

  /* The pages shown so far, each LIST_PAGE captures, led on by
   * next_before (the API bounds one page: list_limit_max). */
  async function pages() {
    let rows = [], before = null;
    for (let p = 0; p < st.pages; p++) {
      const data = await get(url('/captures', {}, {status: st.status,
        kind: st.kind, limit: LIST_PAGE, before}));
      rows = rows.concat(data.captures);
      before = data.next_before;
      if (before === null) break;
    }
    return {rows, more: before !== null};
  }

  async function load() {
    saveOpts({status: st.status, kind: st.kind});
    let got;
    try {
      got = await pages();
    } catch (e) {
      if (g === gen) put(box, errorBox(e));
      return;
    }
    if (g !== gen) return;
    st.rows = got.rows;
    st.more = got.more;
    render();
    if (st.rows.some(c => !FINAL.includes(c.status))) later(load, 2000);
  }
  load();
}

/* fields: [name, label, type ('text', 'int', 'bool' or an option list),
 * default]. Posts the non-empty ones; opens the new capture on success,
 * else shows the API's message and marks the field it names. */
function postForm(title, path, fields) {
  const inputs = {};
  const msg = el('div');
  const rows = fields.map(([name, label, type, dflt]) => {
    inputs[name] = Array.isArray(type) ? select(dflt, type, () => {})
      : el('input', {name, type: type === 'int' ? 'number'
        : type === 'bool' ? 'checkbox' : 'text',
      value: type === 'int' ? dflt : null, checked: type === 'bool' && dflt,
      placeholder: type === 'text' ? dflt : null});
    return el('label', null, el('span', null, label), inputs[name]);
  });
  async function submit(ev) {
    ev.preventDefault();
    const body = {};
    for (const [name, , type] of fields) {
      const i = inputs[name];
      i.classList.remove('bad');
      if (type === 'bool') body[name] = i.checked;
      else if (i.value.trim() !== '') {
        body[name] = type === 'int' ? Number(i.value) : i.value.trim();
      }
    }
    put(msg);
    try {
      const c = await call('POST', url(path), body);
      location.hash = '#/captures/' + c.id;
    } catch (e) {
      put(msg, errorBox(e));
      const bad = inputs[String(e.field || '').split('.')[0]];
      if (bad) { bad.classList.add('bad'); bad.focus(); }
    }
  }
  return el('form', {class: 'card', onsubmit: submit}, el('h3', null, title),
    rows, el('button', {type: 'submit'}, title), msg);
}

function captureForm() {
  return postForm('New capture', '/captures', [
    ['model', 'model path', 'text', 'e.g. /data/DeepSeek-V4-Pro'],
    ['tp', 'tp', 'int', 8], ['isl', 'isl', 'int', 1024],
    ['osl', 'osl', 'int', 1024], ['conc', 'concurrency', 'int', 64],
    ['prompt_multiplier', 'prompt multiplier', 'int', 1],
    ['more', 'profiler more (shapes, stacks)', 'bool', false],
    ['label', 'label', 'text', '']]);
}

function importForm() {
  return postForm('Import trace', '/imports', [
    ['path', 'path (under import_roots)', 'text', 'e.g. /traces/run_1'],
    ['label', 'label', 'text', ''],
    ['format', 'format', ['auto', 'kineto', 'mctracer'], 'auto']]);
}

/* ---- diff view ---- */

/* The member naming a row of GET /diff, by its by= (api/openapi.yaml). */
const DIFF_KEY = {kernel: 'name', category: 'category', step: 'kind',
  family: 'family', sequence: 'sequence', module: 'module', layer: 'layer',
  op: 'op'};
/* What launched the kernels (decode.js): one step kind at a time. */
const DIFF_DECODE = ['module', 'layer', 'op'];
const DIFF_LIMIT = 200;

function signed(v, text) {
  return el('span', {class: v > 0 ? 'worse' : v < 0 ? 'better' : null},
    text);
}

/* names: the demangled kernel names of both captures (by=kernel). */
function diffTable(by, rows, names) {
  const most = Math.max(0, ...rows.map(r => Math.abs(r.delta_ns)));
  const key = by === 'kernel' ? readable(names) : by === 'category'
    ? catCell : v => nameCell(String(v));
  /* On a narrow screen the counts give way (class opt, style.css). */
  return table([T(by, DIFF_KEY[by], v => v == null
    ? el('span', {class: 'muted'}, '(none)') : key(v)),
    T('A count', 'a_count', num, 'num opt'),
    T('B count', 'b_count', num, 'num opt'), N('A total', 'a_total_ns'),
    N('B total', 'b_total_ns'),
    T('delta (B\u2212A)', 'delta_ns', v => [deltaBar(v, most),
      signed(v, nsCell(v))], 'num'),
    T('delta %', 'delta_pct', v => v == null ? '\u2013'
      : signed(v, (v > 0 ? '+' : '') + v.toFixed(1) + '%'), 'num'),
    T('status', 'status', badge)], rows, null, 'The two captures have ' +
    'no ' + by + ' rows' + (by === 'step' ? ' (neither has run labels)'
      : DIFF_DECODE.includes(by) ? ' of this step kind' : '') + '.');
}

/* The two captures' device time (their categories summed) and its
 * change, in one line above the rows. */
function diffTotal(d) {
  const sum = k => d.categories.reduce((a, r) => a + r[k], 0);
  const a = sum('a_total_ns'), b = sum('b_total_ns');
  return el('p', {class: 'diff-total'}, 'Device time', d.norm === 'per_step'
    ? ' per step' : '', ': A ', nsCell(a), ', B ', nsCell(b), ' \u00b7 B\u2212A ',
  signed(b - a, [nsCell(b - a), a ? ' (' + (b > a ? '+' : '') +
    (100 * (b - a) / a).toFixed(1) + '%)' : '']), d.rows.every(r =>
    !r.delta_ns) ? el('span', {class: 'muted'}, ' \u00b7 every row is ' +
    'the same in both') : null);
}

/* perStep: shows the figures per step (offered when the two ran a
 * different number of steps and the totals are shown). */
function diffBody(d, names, perStep) {
  const uneven = d.norm === 'none' && d.a_steps && d.b_steps &&
    d.a_steps !== d.b_steps;
  return [diffTotal(d), d.warnings.length ? el('div', {class: 'warnings'},
    el('strong', null, 'Read with care:'), el('ul', null,
      d.warnings.map(w => el('li', {title: w.code}, w.message))),
    uneven ? el('button', {onclick: perStep}, 'compare per step') : null)
    : null,
  d.kind != null ? el('p', {class: 'meta'}, d.kind, ' steps: A ',
    num(d.a_steps), ', B ', num(d.b_steps), d.norm === 'per_step'
      ? ' \u00b7 figures per ' + d.kind + ' step' : '')
    : el('p', {class: 'meta'}, 'real steps (prefill + decode): A ',
      num(d.a_steps), ', B ', num(d.b_steps), d.norm === 'per_step'
        ? ' \u00b7 figures per real step' : ''),
  diffTable(d.by, d.rows, names),
  d.rows.length === DIFF_LIMIT ? el('p', {class: 'muted'}, 'the ' +
    DIFF_LIMIT + ' largest differences') : null,
  d.by !== 'category' && d.categories.length ? [el('h3', null,
    'Per category'), diffTable('category', d.categories)] : null];
}

function diffView(app, a, b, hq) {
  const g = gen;
  const st = {by: hq.get('by') || 'kernel', norm: hq.get('norm') || 'none',
    rank: hq.get('rank') || '', kind: hq.get('kind') || 'decode'};
  const who = el('p', {class: 'meta'});
  const tools = el('div', {class: 'tools'});
  const out = el('div');
  add(app, el('h2', null, 'Compare ', el('a', {href: '#/captures/' + a},
    '#' + a), ' \u2192 ', el('a', {href: '#/captures/' + b}, '#' + b), ' ',
  el('a', {class: 'small', href: '#/diff/' + b + '/' + a}, 'swap')),
  who, tools, out);
  const rankIn = el('input', {type: 'number', min: 0, value: st.rank,
    placeholder: 'all ranks', onchange: () => {
      st.rank = rankIn.value;
      load();
    }});
  const kindIn = el('input', {type: 'text', value: st.kind, size: 12,
    maxlength: 64, onchange: () => { st.kind = kindIn.value; load(); }});
  const kindBox = el('label', null, 'step kind ', kindIn);
  add(tools, select(st.by, Object.keys(DIFF_KEY).map(v => [v, 'by ' + v]),
    v => { st.by = v; load(); }));
  const normIn = select(st.norm, [['none', 'totals'], ['per_step',
    'per step']], v => { st.norm = v; load(); });
  add(tools, normIn, kindBox, el('label', null, 'rank ', rankIn));
  const perStep = () => {
    st.norm = normIn.value = 'per_step';
    load();
  };
  Promise.all([a, b].map(id => get(url('/captures/{id}', {id}))
    .catch(() => null))).then(cs => {
    if (g !== gen) return;
    put(who, cs.map((c, i) => c ? el('span', null, i ? 'B' : 'A', ': ',
      el('a', {href: '#/captures/' + c.id}, '#' + c.id), c.label
        ? ' ' + c.label : '', c.params && c.params.tp ? ' (tp ' +
        c.params.tp + ')' : '', ' ', badge(c.status), ' ') : null));
  });

  async function load() {
    const kind = DIFF_DECODE.includes(st.by) ? st.kind : '';
    kindBox.hidden = !DIFF_DECODE.includes(st.by);
    saveOpts({by: st.by === 'kernel' ? '' : st.by,
      norm: st.norm === 'none' ? '' : st.norm, rank: st.rank, kind});
    put(out, el('p', {class: 'muted'}, 'loading\u2026'));
    let d, na, nb;
    try {
      [d, na, nb] = await Promise.all([get(url('/diff', {}, {a, b,
        by: st.by, norm: st.norm, rank: st.rank, kind, limit: DIFF_LIMIT})),
      kernelNames(a), kernelNames(b)]);
    } catch (e) {
      if (g === gen) put(out, errorBox(e));
      return;
    }
    if (g === gen) put(out, diffBody(d, new Map([...nb, ...na]), perStep));
  }
  load();
}

window.addEventListener('hashchange', route);
/* After every script of the page (capture.js too) has run. */
window.addEventListener('DOMContentLoaded', route);

/*
 * traced dashboard, the lab view (docs/FLEET.md): every node's captures in
 * one list (#/fleet, the front page of a lab view), and the trend of a
 * configuration over time (#/trend?config=...&gpu=...): decode p50, the
 * mean real step and the kernel families taking the most per real step,
 * each point a capture that opens on a click. A capture of the fleet is
 * named node:id, as the API names it (#/captures/n1:5). Uses app.js's
 * el(), table(), url() and charts.js's svg(), figure().
 */
'use strict';

/* Whether this traced is a lab view: /fleet/nodes answers (404 without
 * fleet_view). Asked once. */
let labAsked = null;

function labView() {
  if (labAsked === null) {
    labAsked = get(url('/fleet/nodes')).then(d => d, () => null);
  }
  return labAsked;
}

/* node:id of a capture of the fleet's list (its uuid when a newer capture
 * of that node took its id: a node whose database was made anew). */
function refOf(c) { return c.ref || c.node + ':' + c.id; }

/* The header's links of a lab view. */
labView().then(lab => {
  if (!lab) return;
  const nav = document.querySelector('header.top nav');
  if (nav) {
    add(nav, ' ', el('a', {href: '#/fleet'}, 'fleet'), ' ',
      el('a', {href: '#/trend'}, 'trends'));
  }
});

/* ---- the fleet's list ---- */

function fleetListView(app, q) {
  const g = gen;
  const st = {node: q.get('node') || '', gpu: q.get('gpu') || '',
    model: q.get('model') || '', config: q.get('config') || '',
    since: q.get('since') || '', until: q.get('until') || '',
    rows: [], before: null, sel: new Set()};
  const box = el('div');
  const tools = el('div', {class: 'tools'});
  const compare = el('button', {disabled: true, onclick: () => {
    const [a, b] = Array.from(st.sel);
    location.hash = '#/diff/' + a + '/' + b;
  }}, 'compare');
  add(app, el('h2', null, 'The fleet\'s captures'), tools, box);

  const dateIn = key => el('input', {type: 'date', value: st[key],
    'aria-label': key, onchange: e => { st[key] = e.target.value; load(); }});

  async function filters() {
    const [nodes, configs] = await Promise.all([get(url('/fleet/nodes')),
      get(url('/fleet/configs'))]);
    if (g !== gen) return;
    const uniq = xs => [...new Set(xs.filter(Boolean))].sort();
    const opt = (key, all, values) => select(st[key],
      [['', all]].concat(values), v => { st[key] = v; load(); });
    put(tools, opt('node', 'every node', nodes.nodes.map(n => n.node)),
      opt('gpu', 'every GPU', uniq(configs.configs.map(c => c.gpu))),
      opt('model', 'every model', uniq(configs.configs.map(c => c.model))),
      opt('config', 'every configuration', uniq(configs.configs.map(
        c => c.key)).map(k => [k, configText(JSON.parse(k))])),
      el('label', null, 'from ', dateIn('since')),
      el('label', null, 'before ', dateIn('until')),
      compare, el('span', {class: 'muted'}, 'tick two rows to compare'));
  }

  function toggle(ref, tick) {
    if (tick.checked) st.sel.add(ref); else st.sel.delete(ref);
    compare.disabled = st.sel.size !== 2;
  }

  const cols = [
    T('', null, c => el('input', {type: 'checkbox', checked: st.sel.has(
      refOf(c)), onchange: e => toggle(refOf(c), e.target)})),
    T('node', 'node', v => el('a', {href: '#/fleet?node=' +
      encodeURIComponent(v)}, v)),
    T('id', 'id', (v, c) => el('a', {href: '#/captures/' + refOf(c)},
      c.ref && c.ref.includes(':') ? '#' + v : '#' + v + ' (older)'),
    'num'),
    S('kind', 'kind'), S('label', 'label'),
    T('model or path', null, c => {
      const p = c.params && (c.params.model || c.params.path);
      return p ? el('span', {title: p}, p.split('/').pop()) : '\u2013';
    }),
    S('GPU', 'gpu'),
    T('tp', null, c => num(c.params && c.params.tp), 'num'),
    T('status', 'status', badge), T('verdict', 'verdict', verdictBadge),
    T('created', 'created_at', when),
    T('', null, c => c.config ? el('a', {href: trendHash(c.config, c.gpu)},
      'trend') : null)];

  async function load(more) {
    saveOpts({node: st.node, gpu: st.gpu, model: st.model,
      config: st.config, since: st.since, until: st.until});
    let d;
    try {
      d = await get(url('/fleet/captures', {}, {node: st.node, gpu: st.gpu,
        model: st.model, config: st.config, since: st.since,
        until: st.until, limit: LIST_PAGE, before: more ? st.before : null}));
    } catch (e) {
      if (g === gen) put(box, errorBox(e));
      return;
    }
    if (g !== gen) return;
    st.rows = more ? st.rows.concat(d.captures) : d.captures;
    st.before = d.next_before;
    put(box, table(cols, st.rows, null, 'No capture of the fleet matches ' +
      'these filters (a node publishes each capture when it finishes).'),
    st.before ? el('button',
      {onclick: () => load(true)}, 'show more') : null);
  }
  filters().catch(e => { if (g === gen) put(tools, errorBox(e)); });
  load();
}

/* A configuration [model, tp, isl, osl, conc, variant, more] in words. */
function configText(c) {
  if (!Array.isArray(c)) return String(c);
  return String(c[0]).split('/').pop() + ' tp' + c[1] + ' isl' + c[2] +
    ' osl' + c[3] + ' conc' + c[4] + (c[5] ? ' ' + c[5] : '') +
    (c[6] ? ' more' : '');
}

function trendHash(config, gpu) {
  return '#/trend?config=' + encodeURIComponent(JSON.stringify(config)) +
    (gpu ? '&gpu=' + encodeURIComponent(gpu) : '');
}

/* ---- trends ---- */

/* One line chart over the points: series [{name, color, value(p)}], each
 * point a link to its capture. */
function trendChart(cls, title, points, series) {
  const W = 1000, H = 220, PAD = 30, LEFT = 72;
  const all = [];
  for (const s of series) {
    for (const p of points) {
      const v = s.value(p);
      if (v != null) all.push(v);
    }
  }
  const top = Math.max(1, ...all);
  const x = i => LEFT + (points.length > 1 ? i / (points.length - 1)
    : 0.5) * (W - LEFT - PAD);
  const y = v => H - PAD - v / top * (H - 2 * PAD);
  const shapes = [svg('line', {x1: LEFT, y1: H - PAD, x2: W - PAD,
    y2: H - PAD, class: 'axis'})].concat(timeTicksY(top, y, LEFT, W - PAD));
  if (points.length) {
    shapes.push(svg('text', {x: LEFT, y: H - 8, class: 'tick'},
      String(points[0].finished_at).slice(0, 10)), svg('text', {x: W - PAD,
      y: H - 8, class: 'tick', 'text-anchor': 'end'},
    String(points[points.length - 1].finished_at).slice(0, 10)));
  }
  const words = [];
  for (const s of series) {
    const pts = points.map((p, i) => [i, s.value(p)]).filter(
      ([, v]) => v != null);
    if (pts.length > 1) {
      shapes.push(svg('polyline', {points: pts.map(([i, v]) => x(i) + ',' +
        y(v)).join(' '), fill: 'none', stroke: s.color,
      'stroke-width': 2}));
    }
    for (const [i, v] of pts) {
      const p = points[i];
      shapes.push(svg('a', {href: '#/captures/' + p.ref, class: 'point'},
        svg('circle', {cx: x(i), cy: y(v), r: 6, fill: s.color}),
        svg('title', null, s.name + ': ' + p.ref + ' ' + exactNs(v) + ' (' +
          p.finished_at + ')')));
    }
    words.push(s.name + ': ' + (pts.map(([i, v]) => points[i].ref + ' ' +
      exactNs(v)).join(', ') || 'none'));
  }
  return el('div', {'data-time': ''}, hover(figure('trend ' + cls, W, H,
    title, title + ', oldest first. ' + words.join('. ') + '.',
    [title, ' \u00b7 ', String(points.length), ' captures, oldest first; ',
      'a point opens its capture'], shapes)),
  series.length > 1 ? legend(series.map(s => [s.name, s.color])) : null);
}

/* The families taking the most per real step over the points: the five
 * with the largest sum, each a series. */
function familySeries(points) {
  const sum = {};
  for (const p of points) {
    for (const f of (p.figures && p.figures.families) || []) {
      if (f.per_step_ns != null) {
        sum[f.family] = (sum[f.family] || 0) + f.per_step_ns;
      }
    }
  }
  return Object.keys(sum).sort((a, b) => sum[b] - sum[a]).slice(0, 5)
    .map((name, i) => ({name, color: seriesColor(i), value: p => {
      const f = ((p.figures && p.figures.families) || []).find(
        x => x.family === name);
      return f ? f.per_step_ns : null;
    }}));
}

function trendView(app, q) {
  const g = gen;
  const st = {config: q.get('config') || '', gpu: q.get('gpu') || ''};
  const tools = el('div', {class: 'tools'});
  const out = el('div');
  add(app, el('h2', null, 'Trends'), tools, out);

  async function pick() {
    const d = await get(url('/fleet/configs'));
    if (g !== gen) return;
    if (!st.config && d.configs.length) {
      st.config = d.configs[0].key;
      st.gpu = d.configs[0].gpu || '';
    }
    put(tools, select(st.config + '\n' + st.gpu, d.configs.map(c =>
      [c.key + '\n' + (c.gpu || ''), configText(c.config) + ' on ' +
        (c.gpu || 'an unknown GPU') + ' (' + c.captures + ' captures, ' +
        c.nodes + ' nodes)']), v => {
      [st.config, st.gpu] = v.split('\n');
      load();
    }));
    load();
  }

  async function load() {
    saveOpts({config: st.config, gpu: st.gpu});
    if (!st.config) {
      put(out, el('p', {class: 'muted'}, 'no done capture with a ' +
        'configuration in the fleet yet'));
      return;
    }
    let d;
    try {
      d = await get(url('/fleet/trend', {}, {config: st.config,
        gpu: st.gpu}));
    } catch (e) {
      if (g === gen) put(out, errorBox(e));
      return;
    }
    if (g !== gen) return;
    const pts = d.points;
    put(out, el('p', {class: 'meta'}, configText(JSON.parse(st.config)),
      ' on ', st.gpu || 'an unknown GPU', ': ', String(pts.length),
      ' done captures from ', String(new Set(pts.map(p => p.node)).size),
      ' nodes'),
    trendChart('decode', 'Decode p50 (steady state, slowest rank)', pts,
      [{name: 'decode p50', color: seriesColor(0),
        value: p => p.figures && p.figures.decode_p50_ns}]),
    trendChart('step', 'Mean real step (prefill + decode)', pts,
      [{name: 'step time', color: seriesColor(1),
        value: p => p.figures && p.figures.step_ns}]),
    trendChart('families', 'Top kernel families per real step', pts,
      familySeries(pts)),
    table([T('capture', 'ref', v => el('a', {href: '#/captures/' + v}, v)),
      S('node', 'node'), T('finished', 'finished_at', when),
      T('verdict', 'verdict', v => v ? verdictBadge({verdict: v}) : '\u2013'),
      T('decode p50', null, p => nsCell(p.figures && p.figures.decode_p50_ns),
        'num'),
      T('step', null, p => nsCell(p.figures && p.figures.step_ns), 'num')],
    pts));
  }
  pick().catch(e => { if (g === gen) put(tools, errorBox(e)); });
}

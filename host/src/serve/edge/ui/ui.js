// The page at /ui: reads /toolsets, /contributions, /healthz and /ui/metrics every 2 seconds
// while the tab is visible, with the credentials the viewer gives (kept in this tab only), and
// draws what they report. It builds every element with the DOM API: no report text is parsed
// as HTML.

const POLL_MS = 2000;
const METRICS_WINDOW_MS = 5 * 60 * 1000;
const KEY_ITEM = 'reactor-mcp-server.key';
const SVG = 'http://www.w3.org/2000/svg';

const $ = (id) => document.getElementById(id);

let credentials = sessionStorage.getItem(KEY_ITEM);
let timer = null;
let metricsOn = true;
const samples = [];
const drawn = {};

class Unauthorized extends Error {}

/** An element `tag` with `attrs` (`class`, `data-*`, `aria-*`, properties) and `children`. */
function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class' || name.startsWith('data-') || name.startsWith('aria-') || name === 'role'
        || name === 'for' || name === 'scope') {
      element.setAttribute(name, value === true ? '' : String(value));
    } else {
      element[name] = value;
    }
  }
  append(element, children);
  return element;
}

function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

function svg(tag, attrs = {}, ...children) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  append(element, children);
  return element;
}

async function get(path) {
  const headers = credentials ? { Authorization: `Bearer ${credentials}` } : {};
  const response = await fetch(path, { headers, cache: 'no-store' });
  if (response.status === 401) throw new Unauthorized(path);
  return response;
}

async function getJson(path) {
  const response = await get(path);
  if (!response.ok) throw new Error(`${path} answered ${response.status}`);
  return response.json();
}

/** Replaces the content of `container` with `build()` when `key`'s data changed, keeping which
 * `<details>` are open and where the keyboard focus was. */
function redraw(key, data, container, build) {
  const signature = JSON.stringify(data);
  if (drawn[key] === signature) return;
  drawn[key] = signature;
  const open = new Set([...container.querySelectorAll('details[open]')].map((d) => d.dataset.key));
  const focused = container.contains(document.activeElement)
    ? document.activeElement.closest('[data-key]')?.dataset.key : null;
  container.replaceChildren(...[build()].flat());
  for (const details of container.querySelectorAll('details[data-key]')) {
    if (open.has(details.dataset.key)) details.open = true;
  }
  if (focused) {
    const target = container.querySelector(`[data-key="${CSS.escape(focused)}"]`);
    (target?.querySelector('summary') ?? target)?.focus();
  }
}

function badge(text, kind) {
  return h('span', { class: `badge ${kind ?? ''}`.trim() }, text);
}

function ago(iso) {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (seconds < 90) return `${seconds} s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds / 3600)} h ago`;
}

/** The time of `iso`, with its date unless it is today. */
function when(iso) {
  const date = new Date(iso);
  return date.toDateString() === new Date().toDateString()
    ? date.toLocaleTimeString() : date.toLocaleString();
}

function showStatus(text, kind) {
  const status = $('status');
  status.textContent = text;
  status.className = kind ?? '';
}

// --- Overview -------------------------------------------------------------------------------

function overview(toolsets, contributions, health) {
  const plugins = new Set([...toolsets.toolsets.map((t) => t.plugin),
    ...contributions.tools.flatMap((t) => t.extensions.map((e) => e.plugin)),
    ...contributions.pending.map((p) => p.plugin)]);
  const open = new Set(toolsets.toolsets.filter((t) => t.open).map((t) => t.plugin));
  const generation = toolsets.generation;
  const items = [
    ['Status', health.status],
    ['Generation', generation ? `${generation.number}` : '—'],
    ['Changed', generation ? when(generation.since) : '—'],
    ['Toolsets', toolsets.toolsets.length],
    ['Plugins', plugins.size],
    ['Open', open.size],
    ['Failed to open', (toolsets.failed ?? []).length],
    ['Processes', (toolsets.processes ?? []).length],
  ];
  return items.map(([term, value]) => h('div', {}, h('dt', {}, term), h('dd', {}, value)));
}

// --- Toolsets -------------------------------------------------------------------------------

const HINTS = [
  ['readOnlyHint', 'read-only', 'open'], ['destructiveHint', 'destructive', 'warn'],
  ['idempotentHint', 'idempotent'], ['openWorldHint', 'open world'],
];

function annotationBadges(annotations) {
  const badges = [];
  for (const [hint, text, kind] of HINTS) {
    if (annotations?.[hint] === true) badges.push(badge(text, kind));
    if (annotations?.[hint] === false) badges.push(badge(`not ${text}`));
  }
  return badges;
}

function schema(title, value) {
  if (!value) return null;
  return h('details', {}, h('summary', {}, title), h('pre', {}, JSON.stringify(value, null, 2)));
}

function toolItem(tool, off) {
  const description = (tool.description ?? '').split('\n')[0];
  return h('li', {},
    h('details', { 'data-key': `tool:${tool.name}`, 'data-tool': tool.name },
      h('summary', {}, h('code', {}, tool.name), description ? ' — ' : '',
        h('span', { class: 'tool-desc' }, description)),
      h('p', {}, tool.title ? [h('strong', {}, tool.title), ' '] : null,
        annotationBadges(tool.annotations), off ? badge('turned off by its plugin', 'warn') : null),
      tool.description.includes('\n') ? h('p', {}, tool.description) : null,
      tool.extensions.length
        ? h('p', { class: 'meta' }, 'Extended by ',
          tool.extensions.map((e, i) => [i ? ', ' : '', h('code', {}, e.plugin),
            ` (${e.changes.join(', ')})`]))
        : null,
      schema('Input schema', tool.input_schema)
        ?? h('p', { class: 'meta' }, 'Input schema: known once its plugin is open.'),
      schema('Output schema', tool.output_schema)));
}

function toolsetCard(row, tools, failed, off) {
  const id = `toolset-${row.name}`;
  const state = failed.has(row.plugin) ? badge('failed to open', 'failed')
    : row.open ? badge('open', 'open') : badge('not open');
  const mine = tools.filter((t) => t.toolset === row.name);
  const list = (title, items, render) => items.length
    ? [h('h4', {}, `${title} (${items.length})`), h('ul', {}, items.map(render))] : null;
  return h('article', {
    class: 'toolset', 'aria-labelledby': id, 'data-toolset': row.name,
    'data-plugin': row.plugin, 'data-open': String(row.open),
  },
  h('header', {}, h('h3', { id }, row.name), h('span', { class: 'state' }, state),
    row.always ? badge('always on') : row.default ? badge('on by default') : null),
  h('p', { class: 'meta' }, 'From ', h('code', {}, row.plugin), ` (${row.provider})`),
  row.title && row.title !== row.name ? h('p', {}, h('strong', {}, row.title)) : null,
  row.description ? h('p', {}, row.description) : null,
  list('Tools', mine, (t) => toolItem(t, off.tools.has(t.name))),
  list('Resources', row.resources, (uri) => h('li', {}, h('code', {}, uri),
    off.resources.has(uri) || off.templates.has(uri) ? [' ', badge('turned off', 'warn')] : null)),
  list('Prompts', row.prompts, (name) => h('li', {}, h('code', {}, name),
    off.prompts.has(name) ? [' ', badge('turned off', 'warn')] : null)));
}

function toolsetCards(toolsets, contributions) {
  const failed = new Set((toolsets.failed ?? []).map((f) => f.plugin));
  const off = {
    tools: new Set(toolsets.off?.tools ?? []), prompts: new Set(toolsets.off?.prompts ?? []),
    resources: new Set(toolsets.off?.resources ?? []),
    templates: new Set(toolsets.off?.resource_templates ?? []),
  };
  if (!toolsets.toolsets.length) return h('p', {}, 'No toolset: the plugin folder is empty, or nothing in it is yours to see.');
  return toolsets.toolsets.map((row) => toolsetCard(row, contributions.tools, failed, off));
}

// --- Failures and processes -----------------------------------------------------------------

function failures(toolsets, health) {
  const items = (toolsets.failed ?? []).map((f) => h('li', { 'data-plugin': f.plugin },
    h('strong', {}, f.plugin), ': ', h('span', { class: 'reason' }, f.reason)));
  for (const skipped of health.skipped ?? []) {
    items.push(h('li', { 'data-file': skipped.file }, 'Skipped ', h('code', {}, skipped.file), ': ',
      h('span', { class: 'reason' }, skipped.reason)));
  }
  return items.length ? items : h('li', { class: 'none' }, 'None: every plugin tried opened.');
}

function processRows(toolsets) {
  const processes = toolsets.processes ?? [];
  if (!processes.length) {
    return h('tr', {}, h('td', { colSpan: 6 }, 'No process: no isolated plugin or bridged server is open.'));
  }
  return processes.map((p) => {
    const state = p.parked ? badge('parked', 'failed')
      : p.pid ? badge('running', 'open')
        : p.retry_in_s != null ? badge('waiting to restart', 'warn') : badge('not running');
    return h('tr', { 'data-process': p.plugin },
      h('th', { scope: 'row' }, p.plugin), h('td', {}, p.kind.replace('_', ' ')),
      h('td', { class: 'num' }, p.pid ?? '—'), h('td', {}, state),
      h('td', { class: 'num' }, p.failures),
      h('td', { class: 'num' }, p.retry_in_s != null ? `${p.retry_in_s.toFixed(1)} s` : '—'));
  });
}

// --- Metrics --------------------------------------------------------------------------------

/** The tool-call durations of the metrics text, per tool: count, sum and cumulative buckets. */
function parseMetrics(text) {
  const tools = {};
  for (const line of text.split('\n')) {
    const m = line.match(/^mcp_server_operation_duration_seconds_(bucket|count|sum)\{(.*)\} (\S+)/);
    if (!m) continue;
    const labels = {};
    for (const l of m[2].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    const tool = (tools[labels.gen_ai_tool_name] ??= { count: 0, sum: 0, buckets: new Map() });
    const value = Number(m[3]);
    if (m[1] === 'bucket') {
      const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
      tool.buckets.set(le, (tool.buckets.get(le) ?? 0) + value);
    } else {
      tool[m[1]] += value;
    }
  }
  return tools;
}

/** The `q` quantile of the calls between `base` and `now` (cumulative buckets), in seconds,
 * interpolated within its bucket; `[bound, true]` when beyond the last finite bound. */
function quantile(now, base, q) {
  const bounds = [...now.buckets.keys()].sort((a, b) => a - b);
  const delta = (le) => (now.buckets.get(le) ?? 0) - (base?.buckets.get(le) ?? 0);
  const total = delta(Infinity);
  if (!total) return null;
  const target = q * total;
  let previous = 0;
  let below = 0;
  for (const le of bounds) {
    const count = delta(le);
    if (count >= target) {
      if (le === Infinity) return [previous, true];
      return [previous + (le - previous) * ((target - below) / Math.max(count - below, 1e-9)), false];
    }
    previous = le;
    below = count;
  }
  return null;
}

function duration(value) {
  if (!value) return '—';
  const [seconds, beyond] = value;
  const text = seconds < 1 ? `${(seconds * 1000).toFixed(seconds < 0.01 ? 2 : 1)} ms` : `${seconds.toFixed(2)} s`;
  return beyond ? `> ${text}` : text;
}

function metricRows() {
  const now = samples[samples.length - 1];
  const base = samples.length > 1 ? samples[0] : null;
  const seconds = base ? (now.at - base.at) / 1000 : 0;
  const names = Object.keys(now.tools).sort();
  if (!names.length) return h('tr', {}, h('td', { colSpan: 5 }, 'No tool called yet.'));
  return names.map((name) => {
    const tool = now.tools[name];
    const before = base?.tools[name];
    const calls = tool.count - (before?.count ?? 0);
    return h('tr', { 'data-metric-tool': name },
      h('th', { scope: 'row' }, h('code', {}, name)),
      h('td', { class: 'num' }, seconds ? (calls / seconds).toFixed(2) : '—'),
      h('td', { class: 'num' }, tool.count),
      h('td', { class: 'num' }, duration(quantile(tool, before, 0.5))),
      h('td', { class: 'num' }, duration(quantile(tool, before, 0.99))));
  });
}

async function refreshMetrics() {
  const response = await get('/ui/metrics');
  if (response.status === 404) {
    metricsOn = false;
    return;
  }
  if (!response.ok) return;
  const at = Date.now();
  samples.push({ at, tools: parseMetrics(await response.text()) });
  while (samples.length > 2 && samples[1].at <= at - METRICS_WINDOW_MS) samples.shift();
  $('metrics').hidden = false;
  const minutes = Math.max(1, Math.round((at - samples[0].at) / 60000));
  $('metrics-note').textContent = samples.length > 1
    ? `Over the last ${minutes} min (up to 5): calls per second, and latency estimated from the histogram's buckets; Calls counts every call since the server started.`
    : 'Calls since the server started; rates and latencies once the page has watched for a moment.';
  $('metrics').tBodies[0].replaceChildren(...[metricRows()].flat());
}

// --- The extensions graph -------------------------------------------------------------------

function truncate(text, length) {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

function graph(toolsets, contributions) {
  const extensions = contributions.tools.flatMap((t) => t.extensions.map((e) => ({ ...e, tool: t.name })))
    .concat(contributions.pending.map((p) => ({ ...p, missing: true })));
  const plugins = [...new Set([...toolsets.toolsets.map((t) => t.plugin), ...extensions.map((e) => e.plugin)])];
  const missing = [...new Set(contributions.pending.map((p) => p.tool))];
  const columns = [
    plugins.map((name) => ({ id: `p:${name}`, text: name, kind: 'plugin' })),
    toolsets.toolsets.map((t) => ({ id: `s:${t.name}`, text: t.name, kind: 'toolset' })),
    contributions.tools.map((t) => ({ id: `t:${t.name}`, text: t.name, kind: 'tool' }))
      .concat(missing.map((name) => ({ id: `t:${name}`, text: `${name} (missing)`, kind: 'missing' }))),
  ];
  const [width, height, gap, columnGap] = [190, 26, 10, 130];
  const at = new Map();
  columns.forEach((nodes, column) => nodes.forEach((node, row) => {
    at.set(node.id, { x: 10 + column * (width + columnGap), y: 30 + row * (height + gap), node });
  }));
  const tall = Math.max(1, ...columns.map((c) => c.length));
  const svgHeight = 40 + tall * (height + gap);
  const svgWidth = 20 + 3 * width + 2 * columnGap;
  const edge = (from, to, extension) => {
    const a = at.get(from);
    const b = at.get(to);
    if (!a || !b) return null;
    const [x1, y1, x2, y2] = [a.x + width, a.y + height / 2, b.x, b.y + height / 2];
    const bend = (x2 - x1) / 2;
    const path = svg('path', {
      class: extension ? 'edge extension' : 'edge', 'marker-end': 'url(#arrow)',
      d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`,
    });
    if (!extension) return path;
    return [path, svg('text', { class: 'label', x: x2 - 8, y: y2 - 6, 'text-anchor': 'end' },
      truncate(extension.changes.join(', '), 28))];
  };
  const edges = [
    ...toolsets.toolsets.map((t) => edge(`p:${t.plugin}`, `s:${t.name}`)),
    ...contributions.tools.map((t) => edge(`s:${t.toolset}`, `t:${t.name}`)),
    ...extensions.map((e) => edge(`p:${e.plugin}`, `t:${e.tool}`, e)),
  ];
  const nodes = [...at.values()].map(({ x, y, node }) => svg('g', { class: `node ${node.kind}` },
    svg('title', {}, `${node.kind}: ${node.text}`),
    svg('rect', { x, y, width, height, rx: 5 }),
    svg('text', { x: x + 8, y: y + height / 2 + 4.5 }, truncate(node.text, 26))));
  const headings = ['Plugins', 'Toolsets', 'Tools'].map((text, column) => svg('text',
    { x: 10 + column * (width + columnGap), y: 18, 'font-weight': 'bold' }, text));
  const drawing = svg('svg', {
    width: svgWidth, height: svgHeight, viewBox: `0 0 ${svgWidth} ${svgHeight}`,
    role: 'img', 'aria-labelledby': 'graph-title',
  },
  svg('title', { id: 'graph-title' },
    `${plugins.length} plugins, ${toolsets.toolsets.length} toolsets, ${contributions.tools.length} tools, ${extensions.length} extensions`),
  svg('defs', {}, svg('marker', {
    id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto',
  }, svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: 'currentColor' }))),
  headings, edges.flat().filter(Boolean), nodes);
  const asList = h('details', { 'data-key': 'graph-list' }, h('summary', {}, 'The extensions as a list'),
    extensions.length
      ? h('ul', {}, extensions.map((e) => h('li', {}, h('code', {}, e.plugin), ' extends ',
        h('code', {}, e.tool), e.missing ? ' (no plugin declares it)' : '', `: ${e.changes.join(', ')}`)))
      : h('p', {}, 'No extension.'));
  return [drawing, asList];
}

// --- What a URL gets ------------------------------------------------------------------------

async function ask(event) {
  event.preventDefault();
  const query = $('query').value.trim().replace(/^\?/, '');
  const result = $('query-result');
  try {
    const report = await getJson(`/toolsets${query ? `?${query}` : ''}`);
    const names = (list) => (list?.length ? list.map((n, i) => [i ? ', ' : '', h('code', {}, n)]) : 'none');
    result.replaceChildren(h('dl', {},
      h('dt', {}, 'Active toolsets'), h('dd', { 'data-answer': 'active' }, names(report.active)),
      h('dt', {}, 'Tools'), h('dd', { 'data-answer': 'tools' }, names(report.tools)),
      h('dt', {}, 'Resources'), h('dd', {}, names([...report.resources, ...report.resource_templates])),
      h('dt', {}, 'Prompts'), h('dd', {}, names(report.prompts)),
      report.unknown.length ? [h('dt', {}, 'Unknown names'), h('dd', { class: 'error' }, names(report.unknown))] : null,
      h('dt', {}, 'Filter'), h('dd', {}, h('code', {}, JSON.stringify(report.filter)))));
  } catch (error) {
    if (error instanceof Unauthorized) return askForKey();
    result.replaceChildren(h('p', { class: 'error' }, `The server did not answer: ${error.message}`));
  }
}

// --- Polling and credentials ----------------------------------------------------------------

function schedule() {
  clearTimeout(timer);
  timer = document.hidden ? null : setTimeout(refresh, POLL_MS);
}

function askForKey() {
  clearTimeout(timer);
  timer = null;
  const form = $('login');
  $('login-error').textContent = credentials ? 'That key or token was refused.' : '';
  form.hidden = false;
  showStatus('Credentials needed: this server asks for an API key or a token.', 'down');
  $('key').focus();
}

async function refresh() {
  try {
    const [toolsets, contributions, health] = await Promise.all(
      [getJson('/toolsets'), getJson('/contributions'), getJson('/healthz')]);
    $('login').hidden = true;
    $('version').textContent = health.version;
    redraw('overview', [toolsets.toolsets, toolsets.failed, toolsets.processes?.length, toolsets.generation,
      health.status, contributions], $('overview'), () => overview(toolsets, contributions, health));
    redraw('toolsets', [toolsets.toolsets, toolsets.failed, toolsets.off, contributions.tools],
      $('toolsets'), () => toolsetCards(toolsets, contributions));
    redraw('failed', [toolsets.failed, health.skipped], $('failed'), () => failures(toolsets, health));
    redraw('processes', toolsets.processes ?? [], $('processes').tBodies[0], () => processRows(toolsets));
    redraw('graph', [toolsets.toolsets, contributions], $('graph'), () => graph(toolsets, contributions));
    if (metricsOn) await refreshMetrics();
    const generation = toolsets.generation;
    showStatus(`${health.status === 'ok' ? 'Healthy' : 'Degraded'}; generation ${generation?.number ?? '?'}`
      + `${generation ? `, changed ${ago(generation.since)}` : ''}; updated ${new Date().toLocaleTimeString()}.`,
    health.status);
  } catch (error) {
    if (error instanceof Unauthorized) return askForKey();
    showStatus(`The server does not answer (${error.message}); trying again.`, 'down');
  }
  schedule();
}

$('login').addEventListener('submit', (event) => {
  event.preventDefault();
  credentials = $('key').value.trim();
  sessionStorage.setItem(KEY_ITEM, credentials);
  $('key').value = '';
  for (const key of Object.keys(drawn)) delete drawn[key];
  refresh();
});
$('query-form').addEventListener('submit', ask);
document.addEventListener('visibilitychange', () => {
  if (document.hidden) {
    clearTimeout(timer);
    timer = null;
  } else if (timer === null && $('login').hidden) {
    refresh();
  }
});
refresh();

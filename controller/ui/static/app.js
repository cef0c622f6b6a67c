// dcufleet dashboard: read-only views over /api/v1/ (the FleetService
// messages as JSON), polled every 2 s. Everything is built with DOM calls
// and textContent: no value from the fleet is ever parsed as HTML.
'use strict';

const POLL_MS = 2000;
const GIB = 1024 * 1024 * 1024;
let currentView = 'fleet';
let selectedCell = null;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('data-')) e.setAttribute(k, v);
    else if (k === 'title') e.title = v;
    else if (k === 'onclick') e.addEventListener('click', v);
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return e;
}

// int64 fields arrive as JSON strings (protobuf's JSON mapping).
const num = (v) => (v === undefined || v === null || v === '' ? 0 : Number(v));
const gib = (b) => (b / GIB).toFixed(2) + ' GiB';
const reading = (r) => (r && r.valid ? num(r.bytes) : null);
const shortEnum = (s, prefix) => (s || '').replace(prefix, '');

function token() { return sessionStorage.getItem('dcufleet-token') || ''; }

async function api(path) {
  const headers = {};
  if (token()) headers['Authorization'] = 'Bearer ' + token();
  const r = await fetch('/api/v1/' + path, { headers, cache: 'no-store' });
  if (r.status === 401) {
    document.getElementById('token-form').hidden = false;
    throw new Error('a token is needed');
  }
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || ('HTTP ' + r.status));
  return body;
}

// ---------------------------------------------------------------- fleet

const NODE_STATE = { NODE_READY: 'Ready', NODE_NOT_READY: 'NotReady', NODE_LOST: 'Lost' };
const HOLDER_CLASS = { HOLDER_MANAGED: 'managed', HOLDER_LEFTOVER: 'leftover',
  HOLDER_UNMANAGED: 'unmanaged', HOLDER_ZOMBIE: 'zombie', HOLDER_EXITED: 'exited' };

function deviceRow(nodeName, d) {
  const total = reading(d.total) ?? reading(d.device_total) ?? 0;
  const smiUsed = reading(d.host_used) ?? 0;
  const deviceFree = reading(d.device_free);
  const unreclaimed = num(d.unreclaimed_bytes);
  const pct = (b) => (total > 0 ? Math.max(0, Math.min(100, (100 * b) / total)) : 0);
  const segs = [];
  const seg = (cls, bytes, what) => {
    const s = el('span', { class: cls, title: what + ': ' + gib(bytes) });
    s.style.width = pct(bytes) + '%';
    segs.push(s);
  };
  seg('seg-smi-used', smiUsed, 'used (SMI view)');
  if (unreclaimed > 0) seg('seg-unreclaimed', unreclaimed, 'unreclaimed');
  if (deviceFree !== null) seg('seg-device-free', deviceFree, 'free (device view)');
  const holders = d.holders || [];
  const summary = [
    'total ' + gib(total),
    'used (SMI) ' + gib(smiUsed),
    deviceFree !== null ? 'free (device) ' + gib(deviceFree) : 'device view unavailable',
  ].join(' · ');
  const cls = 'device' + (unreclaimed > 0 ? ' unreclaimed' : '');
  const label = el('div', { class: 'label' },
    el('span', { text: 'device ' + d.index + ' — ' + summary }),
    unreclaimed > 0 ? el('span', { class: 'note', text: gib(unreclaimed) + ' unreclaimed' }) : null);
  const holderTable = el('table', { class: 'holders' });
  holderTable.hidden = true;
  holderTable.appendChild(el('tr', {}, el('th', { text: 'pid' }), el('th', { text: 'class' }),
    el('th', { text: 'memory' }), el('th', { text: 'command' })));
  for (const h of holders) {
    const c = HOLDER_CLASS[h.holder_class] || 'unknown';
    holderTable.appendChild(el('tr', {},
      el('td', { text: String(h.pid) }), el('td', { class: 'cls-' + c, text: c }),
      el('td', { text: num(h.vram_bytes) ? gib(num(h.vram_bytes)) : '' }),
      el('td', { text: h.cmdline || h.comm || '' })));
  }
  if (!holders.length) {
    holderTable.appendChild(el('tr', {}, el('td', { class: 'empty', colspan: '4',
      text: unreclaimed > 0 ? 'no live process holds it: a dead process left it (reset to free)'
                            : 'no holders' })));
  }
  const tip = holders.map((h) => h.pid + ' ' + (HOLDER_CLASS[h.holder_class] || '?') + ' ' +
    (h.comm || '')).join('\n') || (unreclaimed > 0 ? 'held by no live process' : 'no holders');
  const bar = el('div', { class: 'bar', title: tip,
    onclick: () => { holderTable.hidden = !holderTable.hidden; } }, ...segs);
  return el('div', { class: cls, 'data-node': nodeName, 'data-device': String(d.index),
    'data-unreclaimed-bytes': String(unreclaimed), 'data-holders': String(holders.length) },
    label, bar, holderTable);
}

function renderFleet(nodes) {
  const root = document.getElementById('fleet');
  const legend = el('div', { class: 'legend' },
    el('span', {}, el('span', { class: 'swatch seg-smi-used' }), 'used (SMI view)'),
    el('span', {}, el('span', { class: 'swatch seg-unreclaimed' }), 'unreclaimed'),
    el('span', {}, el('span', { class: 'swatch seg-device-free' }), 'free (device view)'),
    el('span', {}, el('span', { class: 'swatch', title: 'rest' }), 'rest of total'),
    el('span', { class: 'hint', text: 'click a bar for its holders' }));
  legend.lastChild.previousSibling.firstChild.style.background = 'var(--other)';
  const grid = el('div', { class: 'nodes' });
  for (const n of nodes) {
    const state = NODE_STATE[n.state] || 'Unknown';
    const devs = (n.inventory && n.inventory.devices) || [];
    const archs = [...new Set(devs.map((d) => d.arch).filter(Boolean))].join(', ') || 'arch unknown';
    const products = [...new Set(devs.map((d) => d.product_name).filter(Boolean))].join(', ');
    // A person's cordon or drain (dcuctl cordon / drain), or the agent's own
    // drain (a Slurm job ending): nothing new goes there.
    const held = n.cordon ? (n.cordon.drain ? 'Drained' : 'Cordoned') : (n.drain ? 'Draining' : '');
    const heldWhy = n.cordon ? n.cordon.reason : (n.drain ? n.drain.reason : '');
    const card = el('div', { class: 'node state-' + state, 'data-node': n.name, 'data-state': state,
      'data-scheduling': held ? 'disabled' : 'enabled' },
      el('h2', {}, el('span', { text: n.name }), el('span', { class: 'badge ' + state, text: state }),
        held ? el('span', { class: 'badge held', text: held, title: heldWhy || 'no reason given' }) : ''),
      el('div', { class: 'meta', text: archs + (products ? ' · ' + products : '') + ' · ' +
        devs.length + ' devices' + (state !== 'Ready' && n.state_reason ? ' · ' + n.state_reason : '') +
        (held && heldWhy ? ' · ' + held.toLowerCase() + ': ' + heldWhy : '') }));
    for (const d of devs) card.appendChild(deviceRow(n.name, d));
    grid.appendChild(card);
  }
  root.replaceChildren(legend, nodes.length ? grid : el('p', { class: 'empty', text: 'no nodes registered' }));
}

// ---------------------------------------------------------------- deployments

function fmtTime(ms) {
  const v = num(ms);
  return v ? new Date(v).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '';
}

function renderDeployment(full) {
  const d = full.deployment;
  const st = d.status || {};
  // replicas 0 (or absent, in a document from before replicas): one, unless
  // the deployment is scaled to zero.
  const desired = st.phase === 'DEPLOYMENT_SCALED_TO_ZERO' ? 0 : (d.spec.replicas || 1);
  const box = el('div', { class: 'deployment', 'data-deployment': d.spec.name },
    el('h2', {}, el('span', { text: d.spec.name + ' ' }),
      el('span', { class: 'phase-' + st.phase, text: shortEnum(st.phase, 'DEPLOYMENT_') }),
      el('span', { class: 'hint', text: '  ' + (d.ready_replicas || 0) + '/' + desired +
        ' ready · model ' + d.spec.model + (st.message ? ' · ' + st.message : '') })));
  const reps = el('table', { class: 'list replicas' },
    el('tr', {}, ...['replica', 'phase', 'node', 'devices', 'endpoint', 'stack', 'restarts']
      .map((h) => el('th', { text: h }))));
  for (const r of d.replicas || []) {
    reps.appendChild(el('tr', {}, el('td', { text: String(r.index) }),
      el('td', { class: 'phase-' + r.phase, text: shortEnum(r.phase, 'DEPLOYMENT_') }),
      el('td', { text: r.node }), el('td', { text: (r.device_indices || []).join(',') }),
      el('td', { text: r.endpoint }), el('td', { text: r.stack_id }),
      el('td', { text: String(r.restarts || 0) })));
  }
  const atts = el('table', { class: 'list attempts' },
    el('tr', {}, ...['attempt', 'stack', 'node', 'devices', 'phase', 'diagnosis', 'remediation']
      .map((h) => el('th', { text: h }))));
  for (const a of st.attempts || []) {
    const f = (a.findings || [])[0];
    const diag = f ? f.failure_class + (f.evidence && f.evidence[0] ? ': ' + f.evidence[0] : '') : '';
    const rem = [f && f.remediation_detail, ...(a.remediations || []), a.config_remediation]
      .filter(Boolean).join('; ');
    atts.appendChild(el('tr', { 'data-attempt': String(a.number) },
      el('td', { text: String(a.number) }), el('td', { text: a.stack_id }),
      el('td', { text: a.placement ? a.placement.node : '' }),
      el('td', { text: a.placement ? (a.placement.device_indices || []).join(',') : '' }),
      el('td', { text: shortEnum(a.phase, 'INSTANCE_') }), el('td', { text: diag }),
      el('td', { text: rem })));
  }
  const tl = el('ul', { class: 'timeline' });
  for (const e of full.events || []) {
    tl.appendChild(el('li', { class: e.type + ' event-' + e.reason, 'data-reason': e.reason },
      el('time', { text: fmtTime(e.at_ms) }), el('span', { class: 'reason', text: e.reason }),
      el('span', { text: e.message })));
  }
  box.append(el('h3', { text: 'Replicas' }), reps, el('h3', { text: 'Attempts' }), atts,
    el('h3', { text: 'Events' }), tl);
  return box;
}

async function renderDeployments(list) {
  const root = document.getElementById('deployments');
  const names = (list.deployments || []).map((d) => d.spec.name).slice(0, 50);
  const details = await Promise.all(names.map((n) => api('deployments/' + encodeURIComponent(n))));
  root.replaceChildren(...(details.length ? details.map(renderDeployment)
    : [el('p', { class: 'empty', text: 'no deployments' })]));
}

// ---------------------------------------------------------------- stacks

function renderStacks(resp) {
  const root = document.getElementById('stacks');
  const stacks = resp.stacks || [];
  const archs = [...new Set(stacks.flatMap((s) => (s.arch_verdicts || []).map((v) => v.arch)))].sort();
  const table = el('table', { class: 'matrix' },
    el('tr', {}, el('th', { text: 'arch \\ stack' }), ...stacks.map((s) => el('th', { text: s.stack.id }))));
  const detail = el('div', { id: 'cell-detail', text: 'click a cell for its recipe and evidence' });
  for (const arch of archs) {
    const row = el('tr', {}, el('th', { text: arch }));
    for (const s of stacks) {
      const v = (s.arch_verdicts || []).find((x) => x.arch === arch);
      const fix = (s.learned_fixes || []).find((x) => x.arch === arch);
      if (!v) { row.appendChild(el('td', { class: 'cell empty', text: '—' })); continue; }
      const words = shortEnum(v.state, 'VERDICT_').toLowerCase();
      const text = words + ' (' + (v.ready_count || 0) + '✓ ' + (v.failed_count || 0) + '✗)' +
        (fix ? ' +fix' : '');
      const info = [
        s.stack.id + ' on ' + arch + ': ' + words,
        v.reason ? 'why: ' + v.reason : '',
        v.failure_class ? 'failure class: ' + v.failure_class : '',
        'evidence: ' + (v.ready_count || 0) + ' ready, ' + (v.failed_count || 0) + ' failed' +
          (v.evidence_ids && v.evidence_ids.length ? ' (' + v.evidence_ids.join(', ') + ')' : ''),
        fix ? 'learned recipe: ' + Object.entries(fix.env || {}).map(([k, x]) => k + '=' + x).join(' ') +
          ((fix.ld_library_path_prefix || []).length ? ' LD_LIBRARY_PATH prefix ' +
            fix.ld_library_path_prefix.join(':') : '') + (fix.evidence_id ? ' (from ' + fix.evidence_id + ')' : '')
          : 'no learned recipe',
      ].filter(Boolean).join('\n');
      const key = s.stack.id + '|' + arch;
      row.appendChild(el('td', { class: 'cell ' + v.state, title: info, 'data-stack': s.stack.id,
        'data-arch': arch, onclick: () => { selectedCell = key; detail.textContent = info; } },
        text));
      if (selectedCell === key) detail.textContent = info;
    }
    table.appendChild(row);
  }
  root.replaceChildren(stacks.length ? table : el('p', { class: 'empty', text: 'no stacks' }), detail);
}

// ---------------------------------------------------------------- loop

function show(view) {
  currentView = ['fleet', 'deployments', 'stacks'].includes(view) ? view : 'fleet';
  for (const s of document.querySelectorAll('.view')) s.hidden = s.id !== currentView;
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.view === currentView);
}

async function refresh() {
  const status = document.getElementById('status');
  try {
    const [nodes, deployments, stacks] = await Promise.all([api('nodes'), api('deployments'),
      api('stacks')]);
    renderFleet(nodes.nodes || []);
    await renderDeployments(deployments);
    renderStacks(stacks);
    status.textContent = 'updated ' + new Date().toLocaleTimeString();
    status.classList.remove('error');
    document.body.dataset.loaded = 'true';
  } catch (e) {
    status.textContent = 'error: ' + e.message;
    status.classList.add('error');
  }
}

document.getElementById('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  sessionStorage.setItem('dcufleet-token', document.getElementById('token').value);
  document.getElementById('token-form').hidden = true;
  refresh();
});
window.addEventListener('hashchange', () => show(location.hash.slice(1)));
show(location.hash.slice(1));
refresh();
setInterval(refresh, POLL_MS);

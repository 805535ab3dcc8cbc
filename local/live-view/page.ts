/**
 * The live view: one self-contained HTML page (inline CSS and JS, no build step). It loads
 * nothing else; state arrives over Server-Sent Events from `/api/stream`:
 * `snapshot` (everything), `resource` (one upsert/delete), `cloudevent` (one delivery).
 * All text from the cluster is inserted with textContent, never as HTML.
 */
export const liveViewPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>bpa live view</title>
<style>
  :root { --bg:#f6f7f9; --card:#fff; --ink:#1d2330; --muted:#6b7385; --line:#e1e4ea;
          --true:#1a7f37; --false:#cf222e; --unknown:#9a6700; --pending:#aab0bc; --accent:#0969da; }
  * { box-sizing: border-box; }
  body { margin:0; font:14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; background:var(--bg); color:var(--ink); }
  header { display:flex; align-items:center; gap:12px; padding:10px 18px; background:#1d2330; color:#fff; }
  header h1 { font-size:16px; margin:0; font-weight:600; }
  header .sub { color:#aab0bc; font-size:12px; }
  #conn { margin-left:auto; font-size:12px; padding:2px 8px; border-radius:10px; background:#444; }
  #conn.live { background:var(--true); }
  main { display:grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1.4fr); gap:16px; padding:16px; }
  h2 { font-size:13px; text-transform:uppercase; letter-spacing:.06em; color:var(--muted); margin:0 0 8px; }
  .card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:12px; margin-bottom:12px; }
  .card .title { display:flex; gap:8px; align-items:baseline; margin-bottom:8px; }
  .card .title b { font-size:15px; }
  .card .title .kind { font-size:11px; color:var(--muted); text-transform:uppercase; }
  .card .title .ns { color:var(--muted); font-size:12px; margin-left:auto; }
  .conds { display:flex; flex-wrap:wrap; gap:6px; margin-bottom:8px; }
  .cond { border-radius:12px; padding:2px 9px; font-size:12px; color:#fff; background:var(--pending); cursor:default; }
  .cond[data-status="True"] { background:var(--true); }
  .cond[data-status="False"] { background:var(--false); }
  .cond[data-status="Unknown"] { background:var(--unknown); }
  .msg { font-size:12px; color:var(--false); margin:4px 0; }
  table { border-collapse:collapse; width:100%; font-size:12px; }
  th, td { text-align:left; padding:3px 6px; border-bottom:1px solid var(--line); white-space:nowrap; }
  th { color:var(--muted); font-weight:500; }
  td.wrap { white-space:normal; }
  #events { table-layout:fixed; }
  #events td { overflow:hidden; text-overflow:ellipsis; }
  #events th:nth-child(1) { width:96px; } #events th:nth-child(2) { width:28%; } #events th:nth-child(4) { width:24%; }
  #events th:nth-child(5) { width:78px; } #events th:nth-child(6) { width:70px; }
  .empty { color:var(--muted); font-style:italic; padding:8px 0; }
  #events-wrap { background:var(--card); border:1px solid var(--line); border-radius:8px; max-height:calc(100vh - 330px); min-height:200px; overflow:auto; }
  #events tr.event { cursor:pointer; }
  #events tr.event:hover { background:#eef4ff; }
  #events tr.event.selected { background:#dbe9ff; }
  .st-ok { color:var(--true); font-weight:600; } .st-bad { color:var(--false); font-weight:600; }
  #details { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:10px; margin-top:12px; }
  #details pre { margin:4px 0 8px; font-size:12px; background:#f3f4f7; padding:8px; border-radius:6px; max-height:240px; overflow:auto; }
  code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size:12px; }
</style>
</head>
<body>
<header>
  <h1>bpa live view</h1><span class="sub">Provisioning and Software resources, and the CloudEvents that move them</span>
  <span id="conn">connecting…</span>
</header>
<main>
  <section>
    <h2>Resources</h2>
    <div id="resources"><div class="empty">No Provisioning or Software resources yet.</div></div>
  </section>
  <section>
    <h2>CloudEvents <span id="count"></span></h2>
    <div id="events-wrap">
      <table id="events">
        <thead><tr><th>time</th><th>type</th><th>subject</th><th>trigger</th><th>status</th><th>latency</th></tr></thead>
        <tbody></tbody>
      </table>
    </div>
    <div id="details"><span class="empty">Click an event to see its attributes and data.</span></div>
  </section>
</main>
<script>
(() => {
  const conditionOrder = {
    Provisioning: ['HostsResolved', 'InventoryRendered', 'JobLaunched', 'KudInstalled', 'Ready'],
    Software: ['Installed', 'Ready'],
  };
  const resources = new Map();
  const events = new Map();
  let selected = null;
  const cache = new Map();

  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null) continue;
      if (k === 'class') node.className = v; else if (k === 'text') node.textContent = v; else node.setAttribute(k, v);
    }
    for (const c of children) if (c) node.append(c);
    return node;
  };
  // ApiServerSource subjects start with /apis/<group>/<version>/; the rest says what it is.
  const shortSubject = (s) => s.replace(new RegExp('^/apis/(?:[^/]+/)?v[0-9][^/]*/'), '');
  const key = (r) => r.kind + '/' + r.namespace + '/' + r.name;
  const shortType = (t) => t.replace(/^org\\.akraino\\.icn\\.bpa\\./, '').replace(/^dev\\.knative\\./, 'knative.');
  const table = (head, rows) => el('table', {}, el('thead', {}, el('tr', {}, ...head.map((h) => el('th', { text: h })))),
    el('tbody', {}, ...rows.map((cells) => el('tr', {}, ...cells.map((c) => el('td', { text: c === undefined || c === null ? '' : String(c), class: String(c).length > 40 ? 'wrap' : undefined }))))));

  function renderResource(r) {
    const obj = r.object || {};
    const status = obj.status || {};
    const conds = status.conditions || [];
    const byType = new Map(conds.map((c) => [c.type, c]));
    const types = [...(conditionOrder[r.kind] || []), ...conds.map((c) => c.type).filter((t) => !(conditionOrder[r.kind] || []).includes(t))];
    const card = el('div', { class: 'card', 'data-resource': key(r) },
      el('div', { class: 'title' }, el('span', { class: 'kind', text: r.kind }), el('b', { text: r.name }),
        el('span', { class: 'ns', text: 'cluster ' + ((obj.metadata && obj.metadata.labels && obj.metadata.labels.cluster) || '?') + ' · ' + r.namespace })));
    const chips = el('div', { class: 'conds' });
    for (const t of types) {
      const c = byType.get(t);
      chips.append(el('span', { class: 'cond', 'data-condition': t, 'data-status': c ? c.status : 'Pending',
        'data-reason': c ? c.reason || '' : '',
        title: c ? (c.reason || '') + (c.message ? ': ' + c.message : '') : 'not reported yet',
        // A condition that is not True shows its reason (ClusterNameInUse, JobMissing, Cancelled...).
        text: t + (c ? ' ' + c.status + (c.status !== 'True' && c.reason ? ' · ' + c.reason : '') : '') }));
    }
    card.append(chips);
    for (const c of conds) if (c.status === 'False' && c.message) card.append(el('div', { class: 'msg', text: c.type + ': ' + c.message }));
    if (r.kind === 'Provisioning' && (status.nodes || []).length)
      // With each node's progress in the installer's run (its phase, and the task it is at or failed at).
      card.append(table(['node', 'roles', 'mac', 'ip', 'source', 'install'], status.nodes.map((n) => [n.label, (n.roles || []).join(','), n.mac, n.ip, n.source, n.phase ? n.phase + (n.task ? ' · ' + n.task : '') : ''])));
    if (r.kind === 'Provisioning' && status.jobName) {
      // The KUD Job's progress (status.job): its pod, phase, why it waits, time to its deadline.
      const job = status.job || {};
      const parts = ['Job ' + status.jobName];
      if (job.pod) parts.push('pod ' + job.pod + (job.phase ? ' ' + job.phase : ''));
      if (job.waitingReason) parts.push('waiting: ' + job.waitingReason + (job.waitingMessage ? ' (' + job.waitingMessage + ')' : ''));
      if (typeof job.secondsLeft === 'number') parts.push(job.secondsLeft + ' s before the deadline');
      card.append(el('div', { class: 'sub', 'data-job-progress': '' }, el('small', { text: parts.join(' · ') })));
    }
    if (r.kind === 'Provisioning' && status.kubeconfigSecret)
      card.append(el('div', { class: 'sub' }, el('small', { text: 'kubeconfig in Secret ' + status.kubeconfigSecret })));
    if (r.kind === 'Software' && (status.hosts || []).length)
      card.append(table(['host', 'ip', 'packages', 'exit', 'time', 'error'], status.hosts.map((h) =>
        [h.node, h.ip, (h.packages || []).join(' '), h.exitCode === null ? '—' : h.exitCode, Math.round(h.durationMs || 0) + ' ms', h.error || ''])));
    return card;
  }

  function renderResources() {
    const box = document.getElementById('resources');
    const list = [...resources.values()].sort((a, b) => (a.kind === b.kind ? key(a).localeCompare(key(b)) : a.kind === 'Provisioning' ? -1 : 1));
    box.replaceChildren(...(list.length ? list.map(renderResource) : [el('div', { class: 'empty', text: 'No Provisioning or Software resources yet.' })]));
  }

  function eventRow(e) {
    const ok = typeof e.status === 'number' && e.status >= 200 && e.status < 300;
    const row = el('tr', { class: 'event', 'data-seq': String(e.seq), 'data-type': e.type, 'data-trigger': e.trigger, 'data-status': String(e.status) },
      el('td', { text: new Date(e.at).toLocaleTimeString() }),
      el('td', {}, el('code', { text: shortType(e.type), title: e.type })),
      el('td', { text: shortSubject(e.subject || ''), title: e.subject || '' }),
      el('td', { text: e.trigger, title: e.subscriber || '' }),
      el('td', { class: ok || e.status === 'received' ? 'st-ok' : 'st-bad', text: String(e.status) + (e.outcome && e.outcome !== 'delivered' && e.outcome !== 'received' ? ' ' + e.outcome : '') }),
      el('td', { text: e.latencyMs === undefined ? '' : e.latencyMs.toFixed(1) + ' ms' }));
    row.addEventListener('click', () => select(e.seq));
    return row;
  }

  function addEvent(e) {
    events.set(e.seq, e);
    const body = document.querySelector('#events tbody');
    body.prepend(eventRow(e));
    while (body.children.length > 500) body.lastChild.remove();
    document.getElementById('count').textContent = '(' + events.size + ')';
  }

  async function select(seq) {
    selected = seq;
    for (const row of document.querySelectorAll('#events tr.event')) row.classList.toggle('selected', row.dataset.seq === String(seq));
    const e = events.get(seq);
    if (!e) return;
    const details = document.getElementById('details');
    const delivery = { trigger: e.trigger, subscriber: e.subscriber, status: e.status, outcome: e.outcome, reason: e.reason,
      attempt: e.attempt, latencyMs: e.latencyMs, at: e.at };
    const show = (stored) => details.replaceChildren(
      el('b', { text: e.type }),
      el('div', { class: 'sub', text: 'delivery' }), el('pre', { id: 'details-delivery', text: JSON.stringify(delivery, null, 2) }),
      el('div', { class: 'sub', text: 'attributes' }), el('pre', { id: 'details-attributes',
        text: stored ? JSON.stringify(stored.attributes, null, 2) : JSON.stringify({ id: e.id, type: e.type, source: e.source, subject: e.subject }, null, 2) + ' (full attributes not kept)' }),
      el('div', { class: 'sub', text: 'data' }), el('pre', { id: 'details-data',
        text: !stored ? '(not kept)' : stored.data === undefined ? '(none)' : JSON.stringify(stored.data, null, 2) }));
    show(cache.get(e.id));
    if (cache.has(e.id)) return;
    try {
      const response = await fetch('api/events/' + encodeURIComponent(e.id));
      if (response.ok) { cache.set(e.id, await response.json()); if (selected === seq) show(cache.get(e.id)); }
    } catch (_) { /* keep the summary */ }
  }

  function connect() {
    const conn = document.getElementById('conn');
    const source = new EventSource('api/stream');
    source.addEventListener('open', () => { conn.textContent = 'live'; conn.className = 'live'; });
    source.addEventListener('error', () => { conn.textContent = 'reconnecting…'; conn.className = ''; });
    source.addEventListener('snapshot', (m) => {
      const snap = JSON.parse(m.data);
      resources.clear();
      for (const r of snap.resources) resources.set(key(r), r);
      renderResources();
      events.clear();
      document.querySelector('#events tbody').replaceChildren();
      for (const e of snap.events) addEvent(e);
      if (selected !== null) select(selected);
    });
    source.addEventListener('resource', (m) => {
      const change = JSON.parse(m.data);
      if (change.action === 'upsert') resources.set(key(change.resource), change.resource);
      else resources.delete(change.kind + '/' + change.namespace + '/' + change.name);
      renderResources();
    });
    source.addEventListener('cloudevent', (m) => addEvent(JSON.parse(m.data)));
  }
  connect();
})();
</script>
</body>
</html>
`;

// Timeline of the recorded window on canvas. The server summarised each
// track row into a bounded number of boxes (events narrower than a pixel
// merged into density boxes), so drawing cost is bounded by the summary,
// not by the trace. Drag to pan, wheel to scroll rows (Ctrl/Alt+wheel or
// the buttons to zoom), double-click to zoom in. Under `bottleneck serve`
// a zoomed window is re-summarised by the server at full detail.
import { el, hiDPICanvas, colorFor, ellipsize, tooltip, fmtNs } from './dom.js';

const ROWH = 15, HEAD = 6, LABEL = 190, AXIS = 20;

function decode(tl) {
  const rows = new Map();
  for (const r of tl.rows) {
    const n = r.s.length, s = new Float64Array(n), w = new Float64Array(n), c = new Int32Array(n), f = new Int16Array(n);
    let t = tl.start, di = 0;
    for (let i = 0; i < n; i++) {
      t += r.s[i]; s[i] = t; w[i] = r.w[i];
      if (r.n[i] < 0) { c[i] = r.c ? r.c[di] : 1; f[i] = r.f ? r.f[di] : 500; di++; }
    }
    rows.set(r.t + ':' + r.d, { s, w, n: r.n, c, f, len: n });
  }
  return { tl, rows };
}

export function timelineView(tl, live) {
  const base = decode(tl);
  let detail = null, pending = null, fetchTimer = 0;
  // Layout: y offset of each track.
  const layout = [];
  let y = 0;
  tl.tracks.forEach((t, i) => { const rows = Math.max(t.rows, 1); layout.push({ y, rows, t, i }); y += HEAD + rows * ROWH; });
  const contentH = y;
  const viewH = Math.min(contentH, 560);
  let vs = tl.start, ve = tl.end, scrollY = 0, width = 900;
  const canvas = el('canvas', { class: 'timeline', role: 'img', 'aria-label': 'timeline' });
  const status = el('span', { class: 'count' });
  const btn = (text, fn) => el('button', { type: 'button', text, onclick: fn });
  const tools = el('div', { class: 'table-tools' },
    btn('Zoom in', () => zoom(0.5, 0.5)), btn('Zoom out', () => zoom(2, 0.5)), btn('Reset', () => { vs = tl.start; ve = tl.end; scrollY = 0; changed(); }), status);
  const wrap = el('div', { class: 'timeline-wrap' }, tools, canvas);
  const tip = tooltip();
  const X = (t) => LABEL + (t - vs) / (ve - vs) * (width - LABEL);

  function source() {
    if (detail && detail.tl.start <= vs && detail.tl.end >= ve) return detail;
    return base;
  }
  function draw() {
    width = Math.max(wrap.clientWidth || 900, 400);
    const h = viewH + AXIS;
    const ctx = hiDPICanvas(canvas, width, h);
    ctx.clearRect(0, 0, width, h);
    ctx.font = '10px sans-serif';
    ctx.textBaseline = 'middle';
    // Time axis (relative to the window start of the whole trace).
    ctx.fillStyle = '#555';
    ctx.strokeStyle = '#e5e5e5';
    const span = ve - vs;
    const tick = Math.pow(10, Math.floor(Math.log10(span / 6)));
    const stepT = tick * (span / tick > 30 ? 5 : span / tick > 12 ? 2 : 1);
    ctx.textAlign = 'center';
    for (let t = Math.ceil(vs / stepT) * stepT; t <= ve; t += stepT) {
      const x = X(t);
      ctx.fillText(fmtNs(t - tl.start), x, AXIS / 2);
      ctx.beginPath(); ctx.moveTo(x + 0.5, AXIS); ctx.lineTo(x + 0.5, h); ctx.stroke();
    }
    ctx.textAlign = 'left';
    ctx.save();
    ctx.beginPath(); ctx.rect(0, AXIS, width, viewH); ctx.clip();
    ctx.translate(0, AXIS - scrollY);
    const src = source();
    let drawn = 0;
    for (const L of layout) {
      if (L.y + HEAD + L.rows * ROWH < scrollY || L.y > scrollY + viewH) continue;
      ctx.fillStyle = L.i % 2 ? '#fafafa' : '#f2f4f7';
      ctx.fillRect(0, L.y, width, HEAD + L.rows * ROWH);
      for (let d = 0; d < L.rows; d++) {
        const row = src.rows.get(L.i + ':' + d);
        if (!row) continue;
        const ry = L.y + HEAD + d * ROWH;
        let lastPx = -1;
        for (let i = 0; i < row.len; i++) {
          const s = row.s[i], e = s + row.w[i];
          if (e < vs || s > ve) continue;
          const x0 = Math.max(X(s), LABEL), x1 = Math.min(X(e), width);
          let pw = x1 - x0;
          if (pw < 1) { if (Math.floor(x0) === lastPx) continue; pw = 1; }
          lastPx = Math.floor(x0);
          const ni = row.n[i];
          if (ni < 0) {
            ctx.fillStyle = `rgba(90,100,120,${0.25 + 0.6 * row.f[i] / 1000})`;
            ctx.fillRect(x0, ry, pw, ROWH - 1);
          } else {
            const name = src.tl.names[ni];
            ctx.fillStyle = L.t.kind === 'steps' ? (i % 2 ? '#9bb7d4' : '#b7cde3') : colorFor(name);
            ctx.fillRect(x0, ry, pw, ROWH - 1);
            if (pw > 24) { ctx.fillStyle = '#111'; ctx.fillText(ellipsize(ctx, name, pw - 4), x0 + 2, ry + ROWH / 2); }
          }
          drawn++;
        }
      }
      // Track label column.
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, L.y, LABEL, HEAD + L.rows * ROWH);
      ctx.fillStyle = L.t.kind === 'gpu' ? '#7a3e00' : '#223';
      ctx.fillText(ellipsize(ctx, L.t.label, LABEL - 8), 4, L.y + HEAD + ROWH / 2);
      ctx.strokeStyle = '#ddd';
      ctx.beginPath(); ctx.moveTo(0, L.y + 0.5); ctx.lineTo(width, L.y + 0.5); ctx.stroke();
    }
    ctx.restore();
    status.textContent = `${fmtNs(ve - vs)} shown of ${fmtNs(tl.end - tl.start)}; ${tl.events.toLocaleString('en-US')} events summarised into ${src.tl.boxes.toLocaleString('en-US')} boxes` +
      (src === detail ? ' (detail from server)' : '') + (pending ? ', loading detail…' : '');
    canvas.dataset.drawn = String(drawn);
  }
  function zoom(f, at) {
    const span = ve - vs, c = vs + span * at;
    const ns = Math.max(Math.min(span * f, tl.end - tl.start), 1000);
    vs = Math.max(tl.start, c - ns * at); ve = Math.min(tl.end, vs + ns); vs = Math.max(tl.start, ve - ns);
    changed();
  }
  function changed() {
    draw();
    if (!live) return;
    clearTimeout(fetchTimer);
    const pxNs = (ve - vs) / (width - LABEL);
    if (pxNs >= tl.pixel_ns * 0.75) { detail = null; return; }
    if (detail && detail.tl.start <= vs && detail.tl.end >= ve && detail.tl.pixel_ns <= pxNs * 1.5) return;
    fetchTimer = setTimeout(() => {
      const pad = (ve - vs) * 0.5;
      const s = Math.max(tl.start, Math.floor(vs - pad)), e = Math.min(tl.end, Math.ceil(ve + pad));
      const px = Math.min(8000, Math.round((width - LABEL) * (e - s) / (ve - vs)));
      const url = `api/timeline?view=${live.view}&start=${s}&end=${e}&pixels=${px}`;
      pending = url; draw();
      fetch(url).then((r) => r.ok ? r.json() : Promise.reject(new Error(r.statusText))).then((d) => {
        if (pending === url) { detail = decode(d); pending = null; draw(); }
      }).catch(() => { pending = null; draw(); });
    }, 200);
  }
  function hit(ev) {
    const r = canvas.getBoundingClientRect();
    const px = ev.clientX - r.left, py = ev.clientY - r.top - AXIS + scrollY;
    if (px < LABEL) return null;
    const t = vs + (px - LABEL) / (width - LABEL) * (ve - vs), tol = (ve - vs) / (width - LABEL);
    for (const L of layout) {
      if (py < L.y + HEAD || py >= L.y + HEAD + L.rows * ROWH) continue;
      const d = Math.floor((py - L.y - HEAD) / ROWH);
      const src = source();
      const row = src.rows.get(L.i + ':' + d);
      if (!row) return null;
      for (let i = 0; i < row.len; i++) if (row.s[i] - tol <= t && t <= row.s[i] + row.w[i] + tol) return { L, row, i, src };
    }
    return null;
  }
  let drag = null;
  canvas.addEventListener('mousedown', (ev) => { drag = { x: ev.clientX, y: ev.clientY, vs, ve, sy: scrollY }; });
  window.addEventListener('mouseup', () => { if (drag) { drag = null; changed(); } });
  canvas.addEventListener('mousemove', (ev) => {
    if (drag) {
      const dt = (ev.clientX - drag.x) / (width - LABEL) * (drag.ve - drag.vs);
      const span = drag.ve - drag.vs;
      vs = Math.min(Math.max(tl.start, drag.vs - dt), tl.end - span); ve = vs + span;
      scrollY = Math.min(Math.max(0, drag.sy - (ev.clientY - drag.y)), Math.max(0, contentH - viewH));
      draw();
      return;
    }
    const h = hit(ev);
    if (!h) { tip.hide(); return; }
    const { row, i, src } = h;
    const lines = row.n[i] < 0
      ? [`${row.c[i]} events merged`, `${fmtNs(row.w[i])} span, ${(row.f[i] / 10).toFixed(0)}% busy`, 'zoom in for detail']
      : [src.tl.names[row.n[i]], `start ${fmtNs(row.s[i] - tl.start)}`, `duration ${fmtNs(row.w[i])}`];
    tip.show(ev.clientX, ev.clientY, [h.L.t.label, ...lines]);
  });
  canvas.addEventListener('mouseleave', () => tip.hide());
  canvas.addEventListener('dblclick', (ev) => {
    const r = canvas.getBoundingClientRect();
    zoom(0.4, Math.max(0, (ev.clientX - r.left - LABEL) / (width - LABEL)));
  });
  canvas.addEventListener('wheel', (ev) => {
    const r = canvas.getBoundingClientRect();
    if (ev.ctrlKey || ev.altKey || contentH <= viewH) {
      ev.preventDefault();
      zoom(ev.deltaY > 0 ? 1.25 : 0.8, Math.max(0, (ev.clientX - r.left - LABEL) / (width - LABEL)));
    } else {
      const ny = Math.min(Math.max(0, scrollY + ev.deltaY), contentH - viewH);
      if (ny !== scrollY) { ev.preventDefault(); scrollY = ny; draw(); }
    }
  }, { passive: false });
  requestAnimationFrame(draw);
  window.addEventListener('resize', draw);
  const note = tl.dropped_deep ? el('p', { class: 'muted', text: `${tl.dropped_deep.toLocaleString('en-US')} events nested deeper than the rows shown are left out.` }) : null;
  return el('div', null, wrap, note);
}

// Timeline of the recorded window on canvas. The server summarised each
// track row into a bounded number of boxes (events narrower than a pixel
// merged into density boxes), so drawing cost is bounded by the summary,
// not by the trace. Drag to pan, wheel to scroll rows (Ctrl/Alt+wheel or
// the buttons to zoom), double-click to zoom in. Under `bottleneck serve`
// a zoomed window is re-summarised by the server at full detail.
//
// Launch links: the summary ties device boxes (kernel, memcpy, memset) to
// the boxes of the runtime/driver calls that launched them, when both are
// real boxes (tl.links: box ids, delta-encoded). Hovering either end draws
// the arrow and highlights both; the "Launch links" button draws every
// link in view (at most MAX_LINKS).
import { el, hiDPICanvas, colorFor, ellipsize, tooltip, fmtNs } from './dom.js';

const ROWH = 15, HEAD = 6, LABEL = 190, AXIS = 20, MAX_LINKS = 2000;

function decode(tl) {
  const rows = new Map(), order = [];
  for (const r of tl.rows) {
    const n = r.s.length, s = new Float64Array(n), w = new Float64Array(n), c = new Int32Array(n), f = new Int16Array(n);
    let t = tl.start, di = 0;
    for (let i = 0; i < n; i++) {
      t += r.s[i]; s[i] = t; w[i] = r.w[i];
      if (r.n[i] < 0) { c[i] = r.c ? r.c[di] : 1; f[i] = r.f ? r.f[di] : 500; di++; }
    }
    const row = { s, w, n: r.n, c, f, len: n, t: r.t, d: r.d, launch: null, launched: null };
    rows.set(r.t + ':' + r.d, row);
    order.push(row);
  }
  return { tl, rows, links: decodeLinks(tl, order) };
}

// decodeLinks resolves tl.links (box ids: indexes into all rows' boxes in
// order) to { kr, ki, lr, li, o }: device row and box, launch row and box,
// operator name index. Each row gets launch (box -> its link) and launched
// (box -> links it launched).
function decodeLinks(tl, order) {
  const out = [], L = tl.links;
  if (!L || !L.k || !L.l || !L.o) return out;
  const first = [];
  let g = 0;
  for (const row of order) { first.push(g); g += row.len; }
  const at = (id) => {
    if (!(id >= 0 && id < g)) return null;
    let lo = 0, hi = first.length - 1;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (first[mid] <= id) lo = mid; else hi = mid - 1; }
    return [order[lo], id - first[lo]];
  };
  let k = 0, l = 0;
  const n = Math.min(L.k.length, L.l.length, L.o.length);
  for (let j = 0; j < n; j++) {
    k += L.k[j]; l += L.l[j];
    const a = at(k), b = at(l);
    if (!a || !b) continue;
    const link = { kr: a[0], ki: a[1], lr: b[0], li: b[1], o: L.o[j] };
    out.push(link);
    (link.kr.launch || (link.kr.launch = new Map())).set(link.ki, link);
    const m = link.lr.launched || (link.lr.launched = new Map());
    if (!m.has(link.li)) m.set(link.li, []);
    m.get(link.li).push(link);
  }
  return out;
}

// linksOf lists the links of one box: its launch, or what it launched.
function linksOf(row, i) {
  const out = [];
  const up = row.launch && row.launch.get(i);
  if (up) out.push(up);
  const down = row.launched && row.launched.get(i);
  if (down) out.push(...down);
  return out;
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
  // hover: the box under the mouse ({ src, row, i }); showLinks: the toggle.
  let hover = null, showLinks = false;
  const linksBtn = tl.tracks.some((t) => t.kind === 'gpu')
    ? el('button', { type: 'button', class: 'toggle', text: 'Launch links', 'aria-pressed': 'false',
      title: 'Draw an arrow from each launch call to the kernel, memcpy or memset it launched', onclick: () => {
        showLinks = !showLinks; linksBtn.setAttribute('aria-pressed', String(showLinks)); draw();
      } })
    : null;
  const tools = el('div', { class: 'table-tools' },
    btn('Zoom in', () => zoom(0.5, 0.5)), btn('Zoom out', () => zoom(2, 0.5)), btn('Reset', () => { vs = tl.start; ve = tl.end; scrollY = 0; changed(); }), linksBtn, status);
  const wrap = el('div', { class: 'timeline-wrap' }, tools, canvas);
  const tip = tooltip();
  const X = (t) => LABEL + (t - vs) / (ve - vs) * (width - LABEL);

  function source() {
    if (detail && detail.tl.start <= vs && detail.tl.end >= ve) return detail;
    return base;
  }
  // Box geometry in content coordinates (before the vertical scroll).
  const boxY = (row) => layout[row.t].y + HEAD + row.d * ROWH;
  const inView = (row, i) => row.s[i] + row.w[i] >= vs && row.s[i] <= ve;
  function outline(ctx, row, i) {
    const x0 = Math.max(X(row.s[i]), LABEL), x1 = Math.max(Math.min(X(row.s[i] + row.w[i]), width), x0 + 1);
    ctx.strokeRect(x0 - 1, boxY(row) - 1, x1 - x0 + 2, ROWH + 1);
  }
  // An arrow from the launch call's box to the device box.
  function arrow(ctx, k) {
    const lx = Math.min(Math.max(X(k.lr.s[k.li]), LABEL + 1), width - 1), kx = Math.min(Math.max(X(k.kr.s[k.ki]), LABEL + 1), width - 1);
    const ly0 = boxY(k.lr), ky0 = boxY(k.kr), down = ky0 >= ly0;
    const ly = down ? ly0 + ROWH - 1 : ly0, ky = down ? ky0 : ky0 + ROWH - 1;
    const bend = Math.max(12, Math.abs(ky - ly) / 2) * (down ? 1 : -1);
    ctx.beginPath(); ctx.moveTo(lx, ly); ctx.bezierCurveTo(lx, ly + bend, kx, ky - bend, kx, ky); ctx.stroke();
    const a = 5, dir = down ? -1 : 1;
    ctx.beginPath(); ctx.moveTo(kx, ky); ctx.lineTo(kx - a * 0.7, ky + dir * a); ctx.lineTo(kx + a * 0.7, ky + dir * a); ctx.closePath(); ctx.fill();
  }
  // drawLinks draws the toggled links in view and the hovered box's links
  // over the boxes; returns how many arrows it drew.
  function drawLinks(ctx, src) {
    let n = 0;
    ctx.save();
    ctx.beginPath(); ctx.rect(LABEL, scrollY, width - LABEL, viewH); ctx.clip();
    ctx.lineWidth = 1;
    if (showLinks) {
      ctx.strokeStyle = 'rgba(40,60,160,0.55)'; ctx.fillStyle = 'rgba(40,60,160,0.75)';
      for (const k of src.links) {
        if (n >= MAX_LINKS) break;
        if (!inView(k.kr, k.ki) && !inView(k.lr, k.li)) continue;
        arrow(ctx, k); n++;
      }
    }
    if (hover && hover.src === src) {
      const ks = linksOf(hover.row, hover.i);
      ctx.lineWidth = 2; ctx.strokeStyle = '#c2185b'; ctx.fillStyle = '#c2185b';
      for (const k of ks) { arrow(ctx, k); n++; }
      ctx.strokeStyle = '#111';
      outline(ctx, hover.row, hover.i);
      for (const k of ks) { outline(ctx, k.kr, k.ki); outline(ctx, k.lr, k.li); }
    }
    ctx.restore();
    return n;
  }
  // Test hook (web/test): the links whose device box is on screen, with
  // the centres of both boxes in CSS pixels from the canvas's top left.
  canvas.bnLinks = () => {
    const src = source(), out = [];
    const cx = (row, i) => (Math.max(X(row.s[i]), LABEL) + Math.min(X(row.s[i] + row.w[i]), width)) / 2;
    const cy = (row) => AXIS - scrollY + boxY(row) + ROWH / 2;
    for (const k of src.links) {
      const ky = cy(k.kr);
      if (!inView(k.kr, k.ki) || ky < AXIS || ky > AXIS + viewH) continue;
      out.push({ kx: cx(k.kr, k.ki), ky, lx: cx(k.lr, k.li), ly: cy(k.lr), kernel: src.tl.names[k.kr.n[k.ki]] });
    }
    return out;
  };
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
    const arrows = drawLinks(ctx, src);
    ctx.restore();
    let linkNote = '';
    if (src.links.length || src.tl.links_dropped) {
      linkNote = `; ${src.links.length.toLocaleString('en-US')} launch links` +
        (src.tl.links_dropped ? ` (${src.tl.links_dropped.toLocaleString('en-US')} left out for size)` : '');
    } else if (showLinks) {
      linkNote = '; no launch links at this zoom (launch calls narrower than a pixel): zoom in';
    }
    if (showLinks && arrows >= MAX_LINKS) linkNote += `, first ${MAX_LINKS} drawn`;
    status.textContent = `${fmtNs(ve - vs)} shown of ${fmtNs(tl.end - tl.start)}; ${tl.events.toLocaleString('en-US')} events summarised into ${src.tl.boxes.toLocaleString('en-US')} boxes` +
      (src === detail ? ' (detail from server)' : '') + linkNote + (pending ? ', loading detail…' : '');
    canvas.dataset.drawn = String(drawn);
    canvas.dataset.links = String(arrows);
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
  const setHover = (h) => {
    const next = h ? { src: h.src, row: h.row, i: h.i } : null;
    if (next === hover || next && hover && next.src === hover.src && next.row === hover.row && next.i === hover.i) return;
    const before = hover && linksOf(hover.row, hover.i).length, after = next && linksOf(next.row, next.i).length;
    hover = next;
    if (before || after) draw(); // the highlight only matters for linked boxes
  };
  canvas.addEventListener('mousedown', (ev) => { setHover(null); drag = { x: ev.clientX, y: ev.clientY, vs, ve, sy: scrollY }; });
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
    setHover(h);
    if (!h) { tip.hide(); return; }
    const { row, i, src } = h;
    const names = src.tl.names;
    const lines = row.n[i] < 0
      ? [`${row.c[i]} events merged`, `${fmtNs(row.w[i])} span, ${(row.f[i] / 10).toFixed(0)}% busy`, 'zoom in for detail']
      : [names[row.n[i]], `start ${fmtNs(row.s[i] - tl.start)}`, `duration ${fmtNs(row.w[i])}`];
    const up = row.launch && row.launch.get(i);
    if (up) lines.push(`launched by ${names[up.lr.n[up.li]]}` + (up.o >= 0 ? ` (${names[up.o]})` : ''));
    const down = row.launched && row.launched.get(i);
    if (down) {
      const op = down[0].o >= 0 ? ` (${names[down[0].o]})` : '';
      lines.push(`launched ${names[down[0].kr.n[down[0].ki]]}` + (down.length > 1 ? ` and ${down.length - 1} more` : '') + op);
    }
    tip.show(ev.clientX, ev.clientY, [h.L.t.label, ...lines]);
  });
  canvas.addEventListener('mouseleave', () => { tip.hide(); setHover(null); });
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

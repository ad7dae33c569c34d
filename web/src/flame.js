// Icicle flame graph on canvas, drawn straight from the wire format (names
// table + one integer array per level of 4-tuples: x delta, total, self,
// name index), so no object per node is built. Click a frame to zoom,
// click the top frame (or Reset) to zoom out, type to highlight matches.
import { el, hiDPICanvas, colorFor, ellipsize, tooltip, fmtNs } from './dom.js';

const ROW = 18;

export function flameGraph(fg) {
  const wire = fg.wire;
  const period = wire.period_ns || 1;
  const fmtW = wire.unit === 'samples'
    ? (v) => `${v.toLocaleString('en-US')} samples (${fmtNs(v * period)})`
    : (v) => fmtNs(v * period);
  // Decode absolute x once per level (typed arrays; cheap even at 20k nodes).
  const levels = wire.levels.map((arr) => {
    const n = arr.length / 4, x = new Float64Array(n), tot = new Float64Array(n), self = new Float64Array(n), name = new Int32Array(n);
    let end = 0;
    for (let i = 0; i < n; i++) {
      x[i] = end + arr[4 * i]; tot[i] = arr[4 * i + 1]; self[i] = arr[4 * i + 2]; name[i] = arr[4 * i + 3];
      end = x[i] + tot[i];
    }
    return { n, x, tot, self, name };
  });
  let focus = { level: 0, x: 0, w: wire.total || 1 };
  let query = '';
  const canvas = el('canvas', { class: 'flame', role: 'img', 'aria-label': fg.title });
  const search = el('input', { type: 'search', class: 'filter', placeholder: 'search frames…', 'aria-label': 'search ' + fg.title });
  const info = el('span', { class: 'count' });
  const reset = el('button', { type: 'button', text: 'Reset zoom' });
  const wrap = el('div', { class: 'flame-wrap' }, el('div', { class: 'table-tools' }, search, reset, info), el('div', { class: 'flame-scroll' }, canvas));
  const tip = tooltip();
  let width = 800;
  function draw() {
    width = Math.max(wrap.clientWidth || 800, 300);
    const h = levels.length * ROW + 2;
    const ctx = hiDPICanvas(canvas, width, h);
    ctx.clearRect(0, 0, width, h);
    ctx.font = '11px sans-serif';
    ctx.textBaseline = 'middle';
    const scale = width / focus.w;
    let matched = 0;
    levels.forEach((lv, d) => {
      for (let i = 0; i < lv.n; i++) {
        let x0 = lv.x[i], x1 = x0 + lv.tot[i];
        if (d < focus.level) { // ancestors of the focus span the width
          if (x1 <= focus.x || x0 >= focus.x + focus.w) continue;
          x0 = Math.max(x0, focus.x); x1 = Math.min(x1, focus.x + focus.w);
        }
        if (x1 <= focus.x || x0 >= focus.x + focus.w) continue;
        const px = (x0 - focus.x) * scale, pw = (x1 - x0) * scale;
        if (pw < 0.4) continue;
        const name = wire.names[lv.name[i]];
        const hit = query && name.toLowerCase().includes(query);
        if (hit) matched++;
        ctx.fillStyle = query ? (hit ? '#e8589c' : '#ddd') : (d < focus.level ? '#bbb' : colorFor(name, 60, 68));
        ctx.fillRect(px, d * ROW, Math.max(pw - 0.5, 0.5), ROW - 1);
        if (pw > 20) {
          ctx.fillStyle = '#111';
          ctx.fillText(ellipsize(ctx, name, pw - 6), px + 3, d * ROW + ROW / 2);
        }
      }
    });
    canvas.dataset.focus = `${focus.level}:${focus.x}`;
    info.textContent = `total ${fmtW(wire.total)}` + (query ? `, ${matched} visible matches` : '') +
      (fg.merged ? `; ${fg.merged.toLocaleString('en-US')} of ${fg.nodes.toLocaleString('en-US')} frames merged into "(other)"` : '');
  }
  function hitTest(ev) {
    const r = canvas.getBoundingClientRect();
    const d = Math.floor((ev.clientY - r.top) / ROW);
    const lv = levels[d];
    if (!lv) return null;
    const x = focus.x + (ev.clientX - r.left) / width * focus.w;
    for (let i = 0; i < lv.n; i++) if (x >= lv.x[i] && x < lv.x[i] + lv.tot[i]) return { d, i, lv };
    return null;
  }
  canvas.addEventListener('click', (ev) => {
    const h = hitTest(ev);
    if (!h || h.d === 0) focus = { level: 0, x: 0, w: wire.total || 1 };
    else focus = { level: h.d, x: h.lv.x[h.i], w: h.lv.tot[h.i] || 1 };
    draw();
  });
  canvas.addEventListener('mousemove', (ev) => {
    const h = hitTest(ev);
    if (!h) { tip.hide(); return; }
    const tot = h.lv.tot[h.i], self = h.lv.self[h.i];
    tip.show(ev.clientX, ev.clientY, [wire.names[h.lv.name[h.i]], `total ${fmtW(tot)} (${(100 * tot / (wire.total || 1)).toFixed(1)}%)`, `self ${fmtW(self)}`]);
  });
  canvas.addEventListener('mouseleave', () => tip.hide());
  search.addEventListener('input', () => { query = search.value.toLowerCase(); draw(); });
  reset.addEventListener('click', () => { focus = { level: 0, x: 0, w: wire.total || 1 }; draw(); });
  requestAnimationFrame(draw);
  window.addEventListener('resize', draw);
  return wrap;
}


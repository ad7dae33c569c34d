// Small canvas charts: stacked bars (step-time breakdown) and line series
// (GPU utilization, memory over time), with hover tooltips.
import { el, hiDPICanvas, tooltip } from './dom.js';

const PAD = { l: 64, r: 12, t: 10, b: 34 };

function axes(ctx, w, h, yMax, yFmt, xLabels) {
  ctx.strokeStyle = '#ccc';
  ctx.fillStyle = '#555';
  ctx.font = '11px sans-serif';
  ctx.lineWidth = 1;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  for (let i = 0; i <= 4; i++) {
    const y = PAD.t + (h - PAD.t - PAD.b) * (1 - i / 4);
    ctx.beginPath(); ctx.moveTo(PAD.l, y + 0.5); ctx.lineTo(w - PAD.r, y + 0.5); ctx.stroke();
    ctx.fillText(yFmt(yMax * i / 4), PAD.l - 4, y);
  }
  ctx.textAlign = 'center';
  ctx.textBaseline = 'top';
  for (const [x, label] of xLabels) ctx.fillText(label, x, h - PAD.b + 4);
}

// series: [{label, color}], bars: [{label, values: []}]
export function stackedBars(series, bars, yFmt, height = 240) {
  const canvas = el('canvas', { class: 'chart', role: 'img', 'aria-label': 'stacked bar chart' });
  const legend = el('div', { class: 'legend' }, series.map((s) =>
    el('span', { class: 'key' }, el('i', { style: { background: s.color } }), s.label)));
  const wrap = el('div', { class: 'chart-wrap' }, canvas, legend);
  const tip = tooltip();
  let geom = null;
  function draw() {
    const w = Math.max(wrap.clientWidth || 800, 300), h = height;
    const ctx = hiDPICanvas(canvas, w, h);
    ctx.clearRect(0, 0, w, h);
    const yMax = Math.max(1e-9, ...bars.map((b) => b.values.reduce((a, v) => a + (v || 0), 0))) * 1.05;
    const n = bars.length, pw = w - PAD.l - PAD.r, ph = h - PAD.t - PAD.b;
    const bw = Math.max(1, Math.min(60, pw / n * 0.75)), step = pw / n;
    const every = Math.ceil(n / Math.max(1, Math.floor(pw / 50)));
    axes(ctx, w, h, yMax, yFmt, bars.map((b, i) => [PAD.l + step * (i + 0.5), b.label]).filter((_, i) => i % every === 0));
    geom = { step, bw, yMax, ph };
    bars.forEach((b, i) => {
      let y = PAD.t + ph;
      const x = PAD.l + step * (i + 0.5) - bw / 2;
      b.values.forEach((v, j) => {
        const hh = (v || 0) / yMax * ph;
        ctx.fillStyle = series[j].color;
        ctx.fillRect(x, y - hh, bw, hh);
        y -= hh;
      });
    });
  }
  canvas.addEventListener('mousemove', (ev) => {
    if (!geom) return;
    const r = canvas.getBoundingClientRect();
    const i = Math.floor((ev.clientX - r.left - PAD.l) / geom.step);
    if (i < 0 || i >= bars.length) { tip.hide(); return; }
    const b = bars[i];
    const total = b.values.reduce((a, v) => a + (v || 0), 0);
    tip.show(ev.clientX, ev.clientY, [b.title || b.label, 'total ' + yFmt(total),
      ...series.map((s, j) => `${s.label}: ${yFmt(b.values[j] || 0)}`).filter((_, j) => b.values[j])]);
  });
  canvas.addEventListener('mouseleave', () => tip.hide());
  requestAnimationFrame(draw);
  window.addEventListener('resize', draw);
  return wrap;
}

// lines: [{label, color, xs: [], ys: []}] sharing one x axis.
export function lineChart(lines, xFmt, yFmt, opts = {}) {
  const height = opts.height || 200;
  const canvas = el('canvas', { class: 'chart', role: 'img', 'aria-label': opts.label || 'line chart' });
  const legend = el('div', { class: 'legend' }, lines.map((s) =>
    el('span', { class: 'key' }, el('i', { style: { background: s.color } }), s.label)));
  const wrap = el('div', { class: 'chart-wrap' }, canvas, legend);
  const tip = tooltip();
  let xMin = Infinity, xMax = -Infinity, yMax = opts.yMax || 0;
  for (const s of lines) {
    for (const x of s.xs) { if (x < xMin) xMin = x; if (x > xMax) xMax = x; }
    if (!opts.yMax) for (const y of s.ys) if (y > yMax) yMax = y;
  }
  if (!(xMax > xMin)) { xMax = xMin + 1; }
  if (!(yMax > 0)) yMax = 1;
  if (!opts.yMax) yMax *= 1.05;
  let w = 800;
  const X = (x) => PAD.l + (x - xMin) / (xMax - xMin) * (w - PAD.l - PAD.r);
  const Y = (y) => PAD.t + (1 - y / yMax) * (height - PAD.t - PAD.b);
  function draw() {
    w = Math.max(wrap.clientWidth || 800, 300);
    const ctx = hiDPICanvas(canvas, w, height);
    ctx.clearRect(0, 0, w, height);
    const labels = [];
    for (let i = 0; i <= 5; i++) { const x = xMin + (xMax - xMin) * i / 5; labels.push([X(x), xFmt(x)]); }
    axes(ctx, w, height, yMax, yFmt, labels);
    for (const s of lines) {
      ctx.strokeStyle = s.color;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      s.xs.forEach((x, i) => {
        const px = X(x), py = Y(s.ys[i]);
        if (i === 0) ctx.moveTo(px, py);
        else if (s.step) { ctx.lineTo(px, Y(s.ys[i - 1])); ctx.lineTo(px, py); } else ctx.lineTo(px, py);
      });
      ctx.stroke();
      if (s.fill) {
        ctx.lineTo(X(s.xs[s.xs.length - 1]), Y(0)); ctx.lineTo(X(s.xs[0]), Y(0)); ctx.closePath();
        ctx.globalAlpha = 0.15; ctx.fillStyle = s.color; ctx.fill(); ctx.globalAlpha = 1;
      }
    }
  }
  canvas.addEventListener('mousemove', (ev) => {
    const r = canvas.getBoundingClientRect();
    const x = xMin + (ev.clientX - r.left - PAD.l) / (w - PAD.l - PAD.r) * (xMax - xMin);
    if (x < xMin || x > xMax) { tip.hide(); return; }
    const out = [xFmt(x)];
    for (const s of lines) {
      let lo = 0, hi = s.xs.length - 1;
      while (lo < hi) { const m = (lo + hi + 1) >> 1; if (s.xs[m] <= x) lo = m; else hi = m - 1; }
      if (s.xs.length) out.push(`${s.label}: ${yFmt(s.ys[lo])}`);
    }
    tip.show(ev.clientX, ev.clientY, out);
  });
  canvas.addEventListener('mouseleave', () => tip.hide());
  requestAnimationFrame(draw);
  window.addEventListener('resize', draw);
  return wrap;
}

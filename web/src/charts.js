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

// Roofline, log-log: points [{x: FLOP/byte, y: TFLOP/s, color, lines: [tooltip
// text]}] under the memory roof (y = x * bandwidth) and the compute roof
// (y = peak), which meet at the ridge point.
export function rooflineChart(points, peakTFLOPS, bandwidthGBs, opts = {}) {
  const height = opts.height || 300;
  const canvas = el('canvas', { class: 'chart roofline', role: 'img', 'aria-label': 'roofline chart' });
  const legend = el('div', { class: 'legend' },
    el('span', { class: 'key' }, el('i', { style: { background: '#333' } }), `roofs: ${bandwidthGBs} GB/s memory, ${peakTFLOPS} TFLOP/s ${opts.dtype || ''} peak`),
    el('span', { class: 'key' }, el('i', { style: { background: COLOR_POINT } }), 'ops (FLOP/byte, achieved TFLOP/s)'));
  const wrap = el('div', { class: 'chart-wrap' }, canvas, legend);
  const tip = tooltip();
  const ridge = peakTFLOPS * 1e3 / bandwidthGBs;
  const memRoof = (x) => x * bandwidthGBs / 1e3;
  const xs = points.map((p) => p.x).concat([ridge]);
  const ys = points.map((p) => p.y).concat([peakTFLOPS, memRoof(Math.min(...xs))]);
  const lx0 = Math.floor(Math.log10(Math.min(...xs) / 2)), lx1 = Math.ceil(Math.log10(Math.max(...xs) * 2));
  const ly0 = Math.floor(Math.log10(Math.min(...ys) / 2)), ly1 = Math.ceil(Math.log10(Math.max(...ys) * 2));
  let w = 800;
  const X = (x) => PAD.l + (Math.log10(x) - lx0) / (lx1 - lx0) * (w - PAD.l - PAD.r);
  const Y = (y) => PAD.t + (1 - (Math.log10(y) - ly0) / (ly1 - ly0)) * (height - PAD.t - PAD.b);
  const fmt = (e) => (e >= 0 && e <= 3 ? String(10 ** e) : `1e${e}`);
  function draw() {
    w = Math.max(wrap.clientWidth || 800, 300);
    const ctx = hiDPICanvas(canvas, w, height);
    ctx.clearRect(0, 0, w, height);
    ctx.strokeStyle = '#ccc'; ctx.fillStyle = '#555'; ctx.font = '11px sans-serif'; ctx.lineWidth = 1;
    ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    for (let e = ly0; e <= ly1; e++) {
      const y = Y(10 ** e);
      ctx.beginPath(); ctx.moveTo(PAD.l, y + 0.5); ctx.lineTo(w - PAD.r, y + 0.5); ctx.stroke();
      ctx.fillText(fmt(e), PAD.l - 4, y);
    }
    ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    for (let e = lx0; e <= lx1; e++) ctx.fillText(fmt(e), X(10 ** e), height - PAD.b + 4);
    ctx.fillText('FLOP/byte', (PAD.l + w - PAD.r) / 2, height - PAD.b + 18);
    ctx.save(); ctx.translate(12, (PAD.t + height - PAD.b) / 2); ctx.rotate(-Math.PI / 2); ctx.fillText('TFLOP/s', 0, 0); ctx.restore();
    // The two roofs.
    ctx.strokeStyle = '#333'; ctx.lineWidth = 2;
    ctx.beginPath();
    ctx.moveTo(X(10 ** lx0), Y(memRoof(10 ** lx0)));
    ctx.lineTo(X(ridge), Y(peakTFLOPS));
    ctx.lineTo(X(10 ** lx1), Y(peakTFLOPS));
    ctx.stroke();
    for (const p of points) {
      ctx.fillStyle = p.color || COLOR_POINT;
      ctx.beginPath(); ctx.arc(X(p.x), Y(p.y), 5, 0, 2 * Math.PI); ctx.fill();
    }
  }
  canvas.addEventListener('mousemove', (ev) => {
    const r = canvas.getBoundingClientRect();
    const mx = ev.clientX - r.left, my = ev.clientY - r.top;
    let best = null, bd = 100;
    for (const p of points) {
      const d = (X(p.x) - mx) ** 2 + (Y(p.y) - my) ** 2;
      if (d < bd) { bd = d; best = p; }
    }
    if (best) tip.show(ev.clientX, ev.clientY, best.lines); else tip.hide();
  });
  canvas.addEventListener('mouseleave', () => tip.hide());
  requestAnimationFrame(draw);
  window.addEventListener('resize', draw);
  return wrap;
}

const COLOR_POINT = '#e15759';

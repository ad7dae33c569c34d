// DOM helpers. Every piece of text goes through textContent: names come
// from traces and are untrusted (never innerHTML anywhere in this code).

export function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = String(v);
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'style') Object.assign(e.style, v);
      else e.setAttribute(k, String(v));
    }
  }
  for (const k of kids.flat()) {
    if (k === undefined || k === null || k === false) continue;
    e.appendChild(typeof k === 'object' ? k : document.createTextNode(String(k)));
  }
  return e;
}

export function section(id, title, ...kids) {
  return el('section', { id, class: 'card' }, el('h2', { text: title }), ...kids);
}

// The formatters mirror internal/units: three significant digits, a
// space before the unit, IEC units for bytes.
function scaled(v, step, names) {
  let i = 0;
  while (i < names.length - 1 && Math.abs(v) >= step - 0.5) { v /= step; i++; }
  const a = Math.abs(v);
  return v.toFixed(a < 9.995 ? 2 : a < 99.95 ? 1 : 0) + ' ' + names[i];
}

export function fmtUs(us) {
  if (us === undefined || us === null || !isFinite(us)) return '';
  if (us === 0) return '0';
  return scaled(us, 1000, ['µs', 'ms', 's']);
}

export function fmtNs(ns) { return fmtUs(ns / 1e3); }

export function fmtBytes(b) {
  if (b === undefined || b === null || !isFinite(b)) return '';
  if (Math.abs(b) < 1024) return b.toFixed(0) + ' B';
  return scaled(b / 1024, 1024, ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB']);
}

export function fmtPct(p) {
  if (p === undefined || p === null || !isFinite(p)) return '';
  return p.toFixed(1) + '%';
}

export function fmtNum(n) {
  if (n === undefined || n === null) return '';
  if (typeof n !== 'number') return String(n);
  if (Number.isInteger(n)) return n.toLocaleString('en-US');
  return n.toFixed(2);
}

// Stable colour for a name (FNV-1a hash to a hue).
export function colorFor(name, sat = 55, light = 62) {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) { h ^= name.charCodeAt(i); h = Math.imul(h, 16777619); }
  return `hsl(${(h >>> 0) % 360},${sat}%,${light}%)`;
}

// A canvas sized for the device pixel ratio; returns [canvas, ctx, width, height].
export function hiDPICanvas(canvas, cssW, cssH) {
  const r = window.devicePixelRatio || 1;
  canvas.width = Math.max(1, Math.round(cssW * r));
  canvas.height = Math.max(1, Math.round(cssH * r));
  canvas.style.width = cssW + 'px';
  canvas.style.height = cssH + 'px';
  const ctx = canvas.getContext('2d');
  ctx.setTransform(r, 0, 0, r, 0, 0);
  return ctx;
}

export function ellipsize(ctx, text, w) {
  if (w < 12) return '';
  if (ctx.measureText(text).width <= w) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(text.slice(0, mid) + '…').width <= w) lo = mid; else hi = mid - 1;
  }
  return lo > 0 ? text.slice(0, lo) + '…' : '';
}

export function tooltip() {
  let tip = document.getElementById('bn-tip');
  if (!tip) {
    tip = el('div', { id: 'bn-tip', class: 'tip' });
    document.body.appendChild(tip);
  }
  return {
    show(x, y, lines) {
      tip.replaceChildren(...lines.map((l, i) => el('div', { class: i === 0 ? 'tip-title' : '' , text: l })));
      tip.style.display = 'block';
      const w = tip.offsetWidth, h = tip.offsetHeight;
      tip.style.left = Math.min(x + 12, window.innerWidth - w - 8) + 'px';
      tip.style.top = Math.min(y + 12, window.innerHeight - h - 8) + 'px';
    },
    hide() { tip.style.display = 'none'; },
  };
}

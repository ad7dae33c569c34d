// bottleneck's report page. Data comes from the inline JSON block (the
// self-contained HTML file) or from data.json (`bottleneck serve`).
import { el, section, fmtUs, fmtBytes, fmtPct, fmtNum, fmtNs } from './dom.js';
import { dataTable } from './table.js';
import { stackedBars, lineChart, rooflineChart } from './charts.js';
import { flameGraph } from './flame.js';
import { timelineView } from './timeline.js';

const BREAKDOWN = [
  ['kernel_us', 'Kernel', '#4e79a7'], ['memcpy_us', 'Memcpy', '#f28e2b'], ['memset_us', 'Memset', '#edc948'],
  ['communication_us', 'Communication', '#e15759'], ['runtime_us', 'Runtime', '#76b7b2'],
  ['dataloader_us', 'DataLoader', '#59a14f'], ['cpu_exec_us', 'CPU exec', '#b07aa1'], ['other_us', 'Other', '#bab0ac'],
];
const COLORS = ['#4e79a7', '#e15759', '#59a14f', '#f28e2b', '#b07aa1', '#76b7b2', '#edc948', '#9c755f'];

async function loadData() {
  const block = document.getElementById('bottleneck-data');
  if (block) return JSON.parse(block.textContent);
  const r = await fetch('data.json');
  if (!r.ok) throw new Error('data.json: ' + r.status);
  return r.json();
}

function main(data) {
  const app = document.getElementById('app');
  const report = data.report || {};
  const views = data.views || [];
  document.title = data.title || 'bottleneck report';
  let cur = 0;
  const body = el('main');
  const header = el('header', null, el('h1', { text: data.title || 'bottleneck report' }));
  if (views.length > 1) {
    const sel = el('select', { id: 'rank-select', 'aria-label': 'rank' }, views.map((v, i) =>
      el('option', { value: i, text: `rank ${v.rank >= 0 ? v.rank : '?'}: ${v.path}` })));
    sel.addEventListener('change', () => { cur = Number(sel.value); render(); });
    header.appendChild(el('label', { class: 'rank-select' }, 'Trace: ', sel));
  }
  const nav = el('nav');
  header.appendChild(nav);
  app.replaceChildren(header, body);
  function render() {
    const secs = buildSections(data, report, views, cur);
    body.replaceChildren(...secs);
    nav.replaceChildren(...secs.map((s) => el('a', { href: '#' + s.id, text: s.querySelector('h2').textContent })));
  }
  render();
}

function buildSections(data, report, views, cur) {
  const tr = (report.traces || [])[cur];
  const view = views[cur] || {};
  const out = [verdict(report, tr)];
  if (!tr) {
    out.push(section('inputs', 'Inputs', el('p', { text: 'No trace was analysed.' }), problems(report)));
  } else {
    out.push(inputs(report, cur));
    out.push(stepBreakdown(tr));
    out.push(gpuSection(tr, view));
    out.push(memorySection(tr));
    out.push(opsSection(tr));
    out.push(kernelsSection(tr));
    out.push(flopsSection(tr));
  }
  if (data.tried && data.tried.length) out.push(triedSection(data.tried));
  if (data.repro && data.repro.length) {
    out.push(section('repro', 'Repro scripts',
      el('p', { class: 'muted', text: 'Each script rebuilds one hot op from its recorded shapes; python3 SCRIPT times it as recorded and under its variants (docs/repro.md).' }),
      el('ul', null, data.repro.map((p) => el('li', null, el('a', { href: p, text: p }))))));
  }
  const steps = pickByRank(data.steps || [], view.rank);
  if (steps) out.push(runStepsSection(steps));
  const py = pickByRank(data.python || [], view.rank);
  if (py) out.push(pythonSection(py));
  out.push(flameSection(py, view));
  if (view.timeline) out.push(section('timeline', 'Timeline', timelineView(view.timeline, data.live ? { view: cur } : null)));
  if (views.length > 1) out.push(ranksSection(report));
  if (data.env) out.push(section('env', 'Environment', jsonTree(data.env, 0)));
  return out.filter(Boolean);
}

// Every step of the run (bottleneck run): the series, the profiled window
// drawn over it, and what stands out (warm-up, outliers, drift).
function runStepsSection(st) {
  const s = section('run-steps', 'Step times over the run');
  const all = st.steps || [];
  const win = all.filter((x) => x[3]);
  const lines = [{ label: `every step (${all.length})`, color: COLORS[0], xs: all.map((x) => x[0]), ys: all.map((x) => x[2] * 1e6) }];
  if (win.length) lines.push({ label: 'profiled window', color: COLORS[1], xs: win.map((x) => x[0]), ys: win.map((x) => x[2] * 1e6) });
  s.appendChild(lineChart(lines, (x) => 'step ' + Math.round(x), fmtUs, { label: 'step times' }));
  const sum = st.summary || {};
  s.appendChild(el('p', { class: 'muted', text: `${st.tag}: median step ${fmtUs((sum.median_s || 0) * 1e6)}` }));
  if (st.notes && st.notes.length) s.appendChild(el('ul', null, st.notes.map((n) => el('li', { text: n }))));
  return s;
}

// What `run --verify` tried: each change's measured speed-up (mean step,
// 95% interval) beside the first run's prediction, and both runs' steps.
function triedSection(tried) {
  const s = section('tried', 'Tried: measured against predicted');
  const x = (v) => (v > 0 ? v.toFixed(2) + 'x' : '—');
  const rows = tried.map((c) => {
    const what = c.args && c.args.length && !Object.keys(c.set || {}).length
      ? c.args.join(' ') + " (the program's own option)"
      : Object.keys(c.set || {}).sort().map((k) => k + '=' + c.set[k]).join(', ');
    const set = what + (c.changes_numerics ? ' (changes numerics)' : '');
    let measured = c.error ? 'not measured: ' + c.error : `${fmtUs(c.mean_base_us)} → ${fmtUs(c.mean_new_us)}, ${x(c.mean_speedup)}`;
    if (!c.error && c.mean_low > 0) measured += c.significant ? ` (95% ${x(c.mean_low)} to ${x(c.mean_high)})` : ` — no significant change (95% ${x(c.mean_low)} to ${x(c.mean_high)})`;
    // steps of different work (an L-BFGS step's closure calls): a call of the model compares with the prediction
    const w = c.work;
    if (!c.error && w) measured = `a call of the model ${fmtUs(w.base_us)} → ${fmtUs(w.change_us)}, ${x(w.speedup)}` +
      (w.speedup_low > 0 ? ` (95% ${x(w.speedup_low)} to ${x(w.speedup_high)})` : '') +
      `; the steps did different work (${w.base_per_step.toFixed(1)} ${w.unit} a step as it is, ${w.change_per_step.toFixed(1)} changed): ${measured}`;
    return el('tr', null, el('td', { text: set }), el('td', { text: c.rule }), el('td', { text: measured }),
      el('td', { text: `${x(c.predicted_speedup)} (${Math.round(c.predicted_saving_pct)}%, ${c.predicted_method || 'share'})` }),
      el('td', { text: c.base_verdict === c.new_verdict ? c.base_verdict || '' : `${c.base_verdict} → ${c.new_verdict}` }));
  });
  s.appendChild(el('table', { class: 'data' },
    el('thead', null, el('tr', null, ['change', 'finding', 'measured (mean step; a call where the steps differ)', 'predicted', 'verdict'].map((h) => el('th', { text: h })))),
    el('tbody', null, rows)));
  for (const c of tried) {
    if (!c.base_steps_us || !c.new_steps_us) continue;
    const line = (label, ys, i) => ({ label, color: COLORS[i], xs: ys.map((_, j) => j + 1), ys });
    s.appendChild(lineChart([line('as it is', c.base_steps_us, 0), line('changed', c.new_steps_us, 1)],
      (v) => 'step ' + Math.round(v), fmtUs, { label: 'steps compared' }));
  }
  if (tried.some((c) => c.host_ahead)) s.appendChild(el('p', { class: 'muted', text: 'The host ran ahead of the device: the last timed step of each run holds the wait for it, so only the mean step is the device\'s.' }));
  return s;
}

// pickByRank: the process entry (Python profile, step times) of the rank
// shown, else the first.
function pickByRank(list, rank) {
  if (!list.length) return null;
  return list.find((p) => p.tag === 'rank' + rank) || list[0];
}

// --- verdict ---------------------------------------------------------------

function verdict(report, tr) {
  const s = section('verdict', 'Verdict');
  const runDiag = report.diagnosis;
  const diag = tr && tr.diagnosis;
  if (runDiag && runDiag.verdict) s.appendChild(diagnosis(runDiag, `Across ${(runDiag.per_rank || []).length} ranks`));
  if (diag && diag.verdict) s.appendChild(diagnosis(diag, runDiag ? `This trace (rank ${tr.rank})` : ''));
  if (!(runDiag && runDiag.verdict) && !(diag && diag.verdict)) {
    s.appendChild(el('p', { class: 'muted', text: 'This report carries no diagnosis; the key numbers:' }));
  }
  if (tr) s.appendChild(el('details', { open: !(diag && diag.verdict) }, el('summary', { text: 'Key numbers' }), keyNumbers(tr)));
  return s;
}

function fmtEvidence(e) {
  const v = e.unit === 'us' ? fmtUs(e.value) : e.unit === 'pct' || e.unit === '%' ? fmtPct(e.value) : e.unit === 'bytes' ? fmtBytes(e.value) : `${fmtNum(e.value)} ${e.unit || ''}`;
  return `${e.what}: ${v}` + (e.source ? ` (${e.source})` : '');
}

function diagnosis(d, label) {
  const v = d.verdict;
  const box = el('div', { class: 'diagnosis' });
  if (label) box.appendChild(el('h3', { text: label }));
  box.appendChild(el('p', { class: 'headline' }, el('span', { class: 'verdict-class', text: v.primary }),
    v.share_pct ? ` ${fmtPct(v.share_pct)} of step time` : '', v.confidence ? ` (${v.confidence} confidence)` : ''));
  if (v.detail) box.appendChild(el('p', { text: v.detail }));
  if (d.window) box.appendChild(windowNote(d.window));
  if (v.why) box.appendChild(el('p', { class: 'muted', text: v.why }));
  if (v.secondary && v.secondary.length) box.appendChild(el('p', { text: 'Also: ' + v.secondary.join(', ') }));
  if (d.per_rank && d.per_rank.length) {
    box.appendChild(dataTable('verdict-ranks-table', [
      { key: 'rank', label: 'rank', num: true }, { key: 'primary', label: 'verdict' }, { key: 'share_pct', label: 'share', num: true, fmt: fmtPct },
      { key: 'confidence', label: 'confidence' }, { key: 'step_us', label: 'step', num: true, fmt: fmtUs }, { key: 'comm_pct', label: 'communication', num: true, fmt: fmtPct }],
    d.per_rank, { sortKey: 'rank', desc: false }));
  }
  const findings = d.findings || [];
  if (findings.length) {
    box.appendChild(el('ol', { class: 'findings' }, findings.map((f) => el('li', { class: 'finding' },
      el('div', null, el('strong', { text: f.title || f.rule }), f.class ? el('span', { class: 'tag', text: f.class }) : null),
      f.change ? el('p', { class: 'change' }, el('b', { text: 'Change: ' }), f.change) : null,
      (f.alternatives || []).map((a) => el('p', { class: 'change alternative' }, el('b', { text: a.kind === 'then' ? 'Then: ' : 'Or: ' }), a.change)),
      (f.saving_us_per_step || f.at_stake_us_per_step) ? el('p', { class: 'muted', text:
        `At stake ${fmtUs(f.at_stake_us_per_step)} per step (${fmtPct(f.at_stake_pct)}); expected saving ${fmtUs(f.saving_us_per_step)} per step (${fmtPct(f.saving_pct)})` +
        (f.confidence ? `, ${f.confidence} confidence` : '') }) : null,
      (f.where && f.where.length) ? el('ul', { class: 'where' }, f.where.map((w) => el('li', null,
        el('code', { text: w.file ? `${w.file}:${w.line || ''}` : w.name }), w.file && w.name ? ` ${w.name}` : '',
        w.share_pct ? ` (${fmtPct(w.share_pct)})` : '', w.note ? ` — ${w.note}` : '', w.inside ? `; ${w.inside}` : ''))) : null,
      (f.measured && f.measured.length) ? el('details', null, el('summary', { text: 'measured' }),
        el('ul', null, f.measured.map((e) => el('li', { text: fmtEvidence(e) })))) : null))));
  }
  if (d.not_measurable && d.not_measurable.length) {
    box.appendChild(el('p', { class: 'muted', text: 'Not measurable from this input: ' + d.not_measurable.map((u) => `${u.class} (${u.why})`).join('; ') }));
  }
  return box;
}

// stepRanges writes step numbers with consecutive runs as N-M.
function stepRanges(steps) {
  const parts = [];
  for (let i = 0; i < steps.length;) {
    let j = i;
    while (j + 1 < steps.length && Number(steps[j + 1]) === Number(steps[j]) + 1) j++;
    parts.push(j > i + 1 ? `${steps[i]}-${steps[j]}` : steps.slice(i, j + 1).join(', '));
    i = j + 1;
  }
  return parts.join(', ');
}

// leftOut names the left-out steps with their reasons, or, past 8, how
// many were left out for each kind of reason (as the text report does).
function leftOut(ex) {
  if (ex.length <= 8) return ex.map((e) => `${e.step} (${e.reason})`).join(', ');
  const kinds = new Map();
  for (const e of ex) {
    const k = e.reason.split(':')[0];
    if (!kinds.has(k)) kinds.set(k, []);
    kinds.get(k).push(e.step);
  }
  return [...kinds].map(([k, steps]) => `${steps.length} steps (${k}: ${steps.slice(0, 3).join(', ')}${steps.length > 3 ? ` and ${steps.length - 3} more` : ''})`).join(', ');
}

// The window check: which steps the verdict uses, whether the window is
// steady state, and how to re-profile when it is not.
function windowNote(w) {
  const used = w.used_steps || [];
  const ranges = stepRanges(used);
  let steps = 'no step';
  if (w.whole_trace) steps = 'the whole trace (no ProfilerStep marks)';
  else if ((ranges.match(/,/g) || []).length >= 8) steps = `${used.length} steps of ${used[0]}-${used[used.length - 1]}`;
  else if (used.length) steps = `steps ${ranges}`;
  steps += used.length ? ' used' : ' usable';
  const left = w.excluded_steps || [];
  const box = el('div', { class: w.steady_state ? 'window' : 'window warn' },
    el('p', null, el('b', { text: w.steady_state ? 'Steady-state window: ' : 'Not a steady-state window: ' }), steps,
      left.length && !w.whole_trace ? `; left out: ${leftOut(left)}` : ''));
  if (w.notes && w.notes.length) box.appendChild(el('ul', null, w.notes.map((n) => el('li', { text: n }))));
  if (w.reprofile) box.appendChild(el('p', { class: 'change', text: w.reprofile }));
  return box;
}

function keyNumbers(tr) {
  const items = [];
  const bd = tr.step_breakdown;
  if (bd && bd.average && bd.average.total_us) {
    const a = bd.average;
    items.push(['mean step time', fmtUs(a.total_us)]);
    const top = BREAKDOWN.map(([k, l]) => [l, a[k] || 0]).sort((x, y) => y[1] - x[1])[0];
    items.push(['largest share of step time', `${top[0]} ${fmtPct(100 * top[1] / a.total_us)}`]);
  }
  const gpu = tr.gpu;
  if (gpu && gpu.devices) for (const d of gpu.devices) items.push([`GPU ${d.device} utilization`, fmtPct(d.utilization_pct)]);
  const ip = tr.input_pipeline;
  if (ip && ip.step_us) items.push(['DataLoader share of steps', fmtPct(ip.dataloader_pct)]);
  const sy = tr.synchronization;
  if (sy && sy.count) items.push(['blocking syncs', `${sy.count} (${fmtUs(sy.blocked_us)} blocked)`]);
  const kl = tr.kernel_launches;
  if (kl && kl.launched) items.push(['kernels launched', `${fmtNum(kl.launched)} (${fmtNum(kl.short_kernels)} shorter than their launch)`]);
  const cp = tr.critical_path;
  if (cp && cp.bound_by) items.push(['critical path bound by', cp.bound_by]);
  return el('dl', { class: 'kv key-numbers' }, items.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v })]));
}

// --- inputs ------------------------------------------------------------------

function inputs(report, cur) {
  const inp = (report.inputs || []);
  const tr = report.traces[cur];
  const i = inp.find((x) => x.path === tr.path) || {};
  const dev = (i.devices || []).map((d) => d.name).filter(Boolean).join(', ');
  return section('inputs', 'Inputs',
    el('dl', { class: 'kv' }, [
      ['trace', i.path], ['rank', i.rank >= 0 ? i.rank : 'unknown'], ['size', fmtBytes(i.uncompressed_bytes)],
      ['events', fmtNum(i.events)], ['span', fmtUs(i.span_us)], ['steps', (i.steps || []).join(', ') || 'none (whole trace is one step)'],
      ['devices', dev || 'none'],
    ].flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: v ?? '' })])),
    problems(report, i));
}

function problems(report, input) {
  const ps = [];
  for (const p of (input && input.problems) || []) ps.push(`${p.what}${p.detail ? ': ' + p.detail : ''} (×${p.count}, byte ${p.byte_offset})`);
  for (const f of report.unreadable_files || []) ps.push(`unreadable: ${f.path}: ${f.error}`);
  if (!ps.length) return null;
  return el('div', { class: 'problems' }, el('h3', { text: 'Problems reading the input' }), el('ul', null, ps.map((p) => el('li', { text: p }))));
}

// --- charts ------------------------------------------------------------------

function stepBreakdown(tr) {
  const bd = tr.step_breakdown;
  const s = section('steps', 'Step-time breakdown');
  if (!bd || !bd.steps || !bd.steps.length) { s.appendChild(el('p', { class: 'muted', text: errText(tr, 'step_breakdown') || 'No steps.' })); return s; }
  const series = BREAKDOWN.map(([, l, c]) => ({ label: l, color: c }));
  const bars = bd.steps.map((st) => ({ label: String(st.name), title: 'step ' + st.name, values: BREAKDOWN.map(([k]) => (st[k] || 0) / 1e3) }));
  s.appendChild(stackedBars(series, bars, (v) => v.toFixed(v >= 10 ? 0 : 2) + ' ms'));
  s.appendChild(dataTable('steps-table', [
    { key: 'name', label: 'step' }, ...BREAKDOWN.map(([k, l]) => ({ key: k, label: l, num: true, fmt: fmtUs })),
    { key: 'total_us', label: 'total', num: true, fmt: fmtUs }], bd.steps, { limit: 100 }));
  return s;
}

function gpuSection(tr, view) {
  const s = section('gpu', 'GPU utilization over time');
  const u = view.gpu_utilization;
  if (u && u.devices && u.devices.length) {
    const lines = u.devices.map((d, i) => ({
      label: `GPU ${d.device} (mean ${fmtPct(d.mean_pct)})`, color: COLORS[i % COLORS.length], step: true, fill: true,
      xs: d.pct.map((_, b) => b * u.bin_ns / 1e3), ys: d.pct,
    }));
    s.appendChild(lineChart(lines, (x) => fmtUs(x), (y) => y.toFixed(0) + '%', { yMax: 100, label: 'GPU utilization' }));
    s.appendChild(el('p', { class: 'muted', text: `Share of each ${fmtNs(u.bin_ns)} bin with at least one kernel running.` }));
  } else {
    s.appendChild(el('p', { class: 'muted', text: 'No kernels in this trace.' }));
  }
  const g = tr.gpu;
  if (g && g.devices && g.devices.length) {
    s.appendChild(dataTable('gpu-table', [
      { key: 'device', label: 'GPU', num: true }, { key: 'name', label: 'name' },
      { key: 'utilization_pct', label: 'utilization', num: true, fmt: fmtPct },
      { key: 'sm_efficiency_pct', label: 'est. SM efficiency', num: true, fmt: fmtPct },
      { key: 'occupancy_pct', label: 'est. occupancy', num: true, fmt: fmtPct },
      { key: 'tensor_core_pct', label: 'tensor-core time', num: true, fmt: fmtPct },
      { key: 'kernel_count', label: 'kernels', num: true, fmt: fmtNum },
      { key: 'memcpy_bytes', label: 'memcpy', num: true, fmt: fmtBytes }], g.devices));
  }
  return s;
}

function memorySection(tr) {
  const s = section('memory', 'Memory over time');
  const m = tr.memory;
  const devs = ((m && m.devices) || []).filter((d) => d.timeline && d.timeline.length);
  if (!devs.length) { s.appendChild(el('p', { class: 'muted', text: 'No memory events (record with profile_memory=True).' })); return s; }
  const lines = [];
  devs.forEach((d, i) => {
    lines.push({ label: `${d.device} allocated (peak ${fmtBytes(d.peak_allocated_bytes)})`, color: COLORS[(2 * i) % COLORS.length], step: true,
      xs: d.timeline.map((p) => p.ts_us), ys: d.timeline.map((p) => p.allocated_bytes) });
    if (d.peak_reserved_bytes) lines.push({ label: `${d.device} reserved`, color: COLORS[(2 * i + 1) % COLORS.length], step: true,
      xs: d.timeline.map((p) => p.ts_us), ys: d.timeline.map((p) => p.reserved_bytes) });
  });
  s.appendChild(lineChart(lines, (x) => fmtUs(x), fmtBytes, { label: 'memory' }));
  if (m.top_ops && m.top_ops.length) {
    s.appendChild(el('h3', { text: 'Operators allocating the most' }));
    s.appendChild(dataTable('memory-ops-table', [
      { key: 'name', label: 'operator' }, { key: 'device', label: 'device' }, { key: 'allocs', label: 'allocations', num: true, fmt: fmtNum },
      { key: 'alloc_bytes', label: 'allocated', num: true, fmt: fmtBytes }, { key: 'largest_bytes', label: 'largest', num: true, fmt: fmtBytes }], m.top_ops));
  }
  return s;
}

// --- tables ------------------------------------------------------------------

function opsSection(tr) {
  const t = tr.operators;
  const s = section('operators', 'Operators');
  if (!t || !t.rows) { s.appendChild(el('p', { class: 'muted', text: 'No operators.' })); return s; }
  const cols = [{ key: 'name', label: 'operator' }];
  if (t.rows.some((r) => r.input_shapes)) cols.push({ key: 'input_shapes', label: 'input shapes' });
  if (t.rows.some((r) => r.stack)) cols.push({ key: 'stack', label: 'stack' });
  cols.push({ key: 'calls', label: 'calls', num: true, fmt: fmtNum },
    { key: 'host_self_us', label: 'host self', num: true, fmt: fmtUs }, { key: 'host_total_us', label: 'host total', num: true, fmt: fmtUs },
    { key: 'device_self_us', label: 'device self', num: true, fmt: fmtUs }, { key: 'device_total_us', label: 'device total', num: true, fmt: fmtUs },
    { key: 'device_self_pct', label: 'device self %', num: true, fmt: fmtPct });
  s.appendChild(dataTable('ops-table', cols, t.rows, { sortKey: t.sort_by ? t.sort_by + '_us' : null }));
  if (t.total_rows > t.rows.length) s.appendChild(el('p', { class: 'muted', text: `${t.rows.length} of ${t.total_rows} rows (use --top 0 for all).` }));
  return s;
}

function kernelsSection(tr) {
  const t = tr.kernels;
  const s = section('kernels', 'Kernels');
  if (!t || !t.rows || !t.rows.length) { s.appendChild(el('p', { class: 'muted', text: 'No kernels.' })); return s; }
  s.appendChild(dataTable('kernels-table', [
    { key: 'name', label: 'kernel' }, { key: 'calls', label: 'calls', num: true, fmt: fmtNum },
    { key: 'total_us', label: 'total', num: true, fmt: fmtUs }, { key: 'mean_us', label: 'mean', num: true, fmt: fmtUs },
    { key: 'max_us', label: 'max', num: true, fmt: fmtUs }, { key: 'total_pct', label: '% of kernel time', num: true, fmt: fmtPct },
    { key: 'est_achieved_occupancy_pct', label: 'occupancy', num: true, fmt: fmtPct },
    { key: 'top_op', label: 'launched by' }], t.rows, { sortKey: 'total_us' }));
  if (t.total_rows > t.rows.length) s.appendChild(el('p', { class: 'muted', text: `${t.rows.length} of ${t.total_rows} rows.` }));
  return s;
}

// FLOPs: achieved rate, step MFU and the roofline of the ops whose shapes
// were recorded (absent when no op has FLOPs).
function flopsSection(tr) {
  const f = tr.flops;
  if (!f || !f.available) return null;
  const s = section('roofline', 'FLOPs and roofline');
  const n = (v, d = 1) => Number(v).toFixed(d);
  const peakDtype = f.tf32 ? 'tf32' : f.peak_dtype; // fp32 faster than the CUDA-core peak ran as TF32
  const lines = [`${fmtNum(f.flops - f.cpu_only_flops)} FLOP in ${fmtUs(f.device_us)} of device time: ${n(f.tflops, 2)} TFLOP/s on ${f.device || 'an unknown device'}` +
    (f.peak_tflops > 0 ? ` (${n(f.peak_pct)}% of the ${peakDtype} peak, ${f.peak_tflops} TFLOP/s)` : ' (peak unknown)')];
  if (f.step) lines.push(`Per step: ${n(f.step.tflops, 2)} TFLOP/s over ${fmtUs(f.step.step_us)}` + (f.step.mfu_pct > 0 ? `, MFU ${n(f.step.mfu_pct)}%` : ', MFU unknown (no peak for this device)'));
  for (const l of lines) s.appendChild(el('p', { text: l }));
  const pts = (f.ops || []).filter((o) => o.flop_per_byte > 0 && o.tflops > 0).map((o) => ({
    x: o.flop_per_byte, y: o.tflops,
    lines: [o.name, `${o.dtype || '?'}${o.tf32 ? ' (ran as tf32)' : ''}, ${fmtNum(o.calls)} calls`, `${n(o.flop_per_byte)} FLOP/byte, ${n(o.tflops, 2)} TFLOP/s`,
      o.roof_tflops > 0 ? `${n(o.roof_pct)}% of its roof (${o.bound} bound)` : 'roof unknown'],
  }));
  if (pts.length && f.peak_tflops > 0 && f.bandwidth_gbs > 0) {
    s.appendChild(rooflineChart(pts, f.peak_tflops, f.bandwidth_gbs, { dtype: peakDtype }));
  } else {
    s.appendChild(el('p', { class: 'muted', text: 'No roofline: it needs input shapes (record_shapes=True) and a device in the peak table.' }));
  }
  s.appendChild(dataTable('flops-table', [
    { key: 'name', label: 'op' }, { key: 'dtype', label: 'dtype' }, { key: 'calls', label: 'calls', num: true, fmt: fmtNum },
    { key: 'device_us', label: 'device', num: true, fmt: fmtUs }, { key: 'tflops', label: 'TFLOP/s', num: true, fmt: (v) => n(v, 2) },
    { key: 'peak_pct', label: 'of peak', num: true, fmt: fmtPct }, { key: 'flop_per_byte', label: 'FLOP/byte', num: true, fmt: (v) => n(v) },
    { key: 'roof_pct', label: 'of roof', num: true, fmt: fmtPct }, { key: 'bound', label: 'bound' }], f.ops || [], { sortKey: 'device_us' }));
  return s;
}

function pythonSection(py) {
  const s = section('python', `Python functions (${py.tag}, ${py.profiler})`);
  s.appendChild(dataTable('python-table', [
    { key: 'func', label: 'function' }, { key: 'file', label: 'file' }, { key: 'line', label: 'line', num: true },
    { key: 'self_s', label: 'self', num: true, fmt: (v) => fmtUs(v * 1e6) }, { key: 'total_s', label: 'total', num: true, fmt: (v) => fmtUs(v * 1e6) },
    ...(py.functions.some((f) => f.calls) ? [{ key: 'calls', label: 'calls', num: true, fmt: fmtNum }] : [])], py.functions, { sortKey: 'self_s' }));
  return s;
}

function flameSection(py, view) {
  const s = section('flame', 'Flame graphs');
  let any = false;
  if (py && py.flame) { s.appendChild(el('h3', { text: `${py.flame.title}: ${py.tag}` })); s.appendChild(flameGraph(py.flame)); any = true; }
  for (const g of view.ops_flames || []) { s.appendChild(el('h3', { text: g.title })); s.appendChild(flameGraph(g)); any = true; }
  if (!any) s.appendChild(el('p', { class: 'muted', text: 'No stacks: no Python profile and no host events with durations.' }));
  return s;
}

function ranksSection(report) {
  const s = section('ranks', 'Ranks side by side');
  const rows = (report.traces || []).map((t) => {
    const a = (t.step_breakdown && t.step_breakdown.average) || {};
    const g = (t.gpu && t.gpu.devices && t.gpu.devices[0]) || {};
    return {
      rank: t.rank, path: t.path, step_us: a.total_us, kernel_us: a.kernel_us, comm_us: a.communication_us,
      dl_us: a.dataloader_us, util: g.utilization_pct, syncs: t.synchronization ? t.synchronization.count : null,
      launched: t.kernel_launches ? t.kernel_launches.launched : null,
    };
  });
  s.appendChild(dataTable('ranks-table', [
    { key: 'rank', label: 'rank', num: true }, { key: 'path', label: 'trace' },
    { key: 'step_us', label: 'mean step', num: true, fmt: fmtUs }, { key: 'kernel_us', label: 'kernel', num: true, fmt: fmtUs },
    { key: 'comm_us', label: 'communication', num: true, fmt: fmtUs }, { key: 'dl_us', label: 'DataLoader', num: true, fmt: fmtUs },
    { key: 'util', label: 'GPU util', num: true, fmt: fmtPct }, { key: 'syncs', label: 'syncs', num: true, fmt: fmtNum },
    { key: 'launched', label: 'kernels launched', num: true, fmt: fmtNum }], rows, { sortKey: 'rank', desc: false }));
  const rk = report.ranks;
  if (rk) {
    s.appendChild(el('p', { text: `Slowest rank ${rk.slowest_rank}, imbalance ${fmtPct(rk.imbalance_pct)} of the median step ${fmtUs(rk.median_step_us)}` +
      (rk.straggler >= 0 && rk.straggler !== undefined ? `; straggler: rank ${rk.straggler}` : '') + '.' }));
    if (rk.ranks) s.appendChild(dataTable('ranks-comm-table', [
      { key: 'rank', label: 'rank', num: true }, { key: 'steps', label: 'steps', num: true },
      { key: 'mean_step_us', label: 'mean step', num: true, fmt: fmtUs }, { key: 'compute_us', label: 'compute', num: true, fmt: fmtUs },
      { key: 'comm_us', label: 'communication', num: true, fmt: fmtUs }, { key: 'comm_pct', label: 'comm % of step', num: true, fmt: fmtPct },
      { key: 'overlap_pct', label: 'comm overlapped', num: true, fmt: fmtPct }, { key: 'last_arrivals', label: 'last to collectives', num: true },
      { key: 'comm_wait_us', label: 'waiting in collectives', num: true, fmt: fmtUs }], rk.ranks, { sortKey: 'rank', desc: false }));
  }
  return s;
}

// --- generic JSON ------------------------------------------------------------

function jsonTree(v, depth) {
  if (v === null || typeof v !== 'object') return el('span', { text: String(v) });
  if (Array.isArray(v)) {
    if (v.every((x) => x === null || typeof x !== 'object')) return el('span', { text: v.join(', ') });
    return el('ol', { class: 'json' }, v.map((x) => el('li', null, jsonTree(x, depth + 1))));
  }
  const dl = el('dl', { class: 'kv json' });
  for (const [k, x] of Object.entries(v)) {
    dl.appendChild(el('dt', { text: k }));
    if (x && typeof x === 'object' && depth >= 1 && Object.keys(x).length > 6) {
      dl.appendChild(el('dd', null, el('details', null, el('summary', { text: `${Object.keys(x).length} entries` }), jsonTree(x, depth + 1))));
    } else dl.appendChild(el('dd', null, jsonTree(x, depth + 1)));
  }
  return dl;
}

function errText(tr, name) { return tr.analysis_errors && tr.analysis_errors[name]; }

loadData().then(main).catch((e) => {
  const app = document.getElementById('app');
  app.replaceChildren(el('p', { class: 'error', text: 'Could not load the report: ' + e.message }));
  console.error(e);
});

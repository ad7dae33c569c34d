// A sortable (click a header), filterable (text box) table. Rows render
// lazily: only the first `limit` matching rows are in the DOM.
import { el } from './dom.js';

// columns: [{key, label, fmt?(v,row), num?: bool, title?}]
export function dataTable(id, columns, rows, opts = {}) {
  const limit = opts.limit || 200;
  let sortKey = opts.sortKey || null, desc = opts.desc !== undefined ? opts.desc : true;
  let filter = '';
  const tbody = el('tbody');
  const count = el('span', { class: 'count' });
  const heads = columns.map((c) => {
    const th = el('th', { class: c.num ? 'num sortable' : 'sortable', title: c.title || 'click to sort', 'data-key': c.key, text: c.label });
    th.addEventListener('click', () => {
      if (sortKey === c.key) desc = !desc; else { sortKey = c.key; desc = !!c.num; }
      render();
    });
    return th;
  });
  const input = el('input', { type: 'search', class: 'filter', placeholder: 'filter…', 'aria-label': 'filter ' + id });
  input.addEventListener('input', () => { filter = input.value.toLowerCase(); render(); });
  const table = el('table', { class: 'data', id }, el('thead', null, el('tr', null, heads)), tbody);
  function render() {
    let rs = rows;
    if (filter) rs = rs.filter((r) => columns.some((c) => !c.num && String(r[c.key] ?? '').toLowerCase().includes(filter)));
    if (sortKey) {
      const col = columns.find((c) => c.key === sortKey);
      rs = rs.slice().sort((a, b) => {
        const x = a[sortKey], y = b[sortKey];
        let d;
        if (col && col.num) d = (x ?? -Infinity) - (y ?? -Infinity);
        else d = String(x ?? '').localeCompare(String(y ?? ''));
        return desc ? -d : d;
      });
    }
    for (const th of heads) {
      th.classList.toggle('sorted', th.dataset.key === sortKey);
      th.classList.toggle('desc', th.dataset.key === sortKey && desc);
      th.setAttribute('aria-sort', th.dataset.key === sortKey ? (desc ? 'descending' : 'ascending') : 'none');
    }
    const shown = rs.slice(0, limit);
    tbody.replaceChildren(...shown.map((r) => el('tr', null, columns.map((c) =>
      el('td', { class: c.num ? 'num' : 'name', title: c.num ? undefined : String(r[c.key] ?? ''), text: c.fmt ? c.fmt(r[c.key], r) : (r[c.key] ?? '') })))));
    count.textContent = rs.length === rows.length ? `${rows.length} rows` : `${rs.length} of ${rows.length} rows`;
    if (rs.length > limit) count.textContent += ` (first ${limit} shown)`;
  }
  render();
  return el('div', { class: 'table-wrap' }, el('div', { class: 'table-tools' }, input, count), el('div', { class: 'scroll' }, table));
}

/** A few lines of DOM building, so the widgets need no UI framework. */

type Child = Node | string | null | undefined | false;

export function h(
  tag: string,
  attrs: Record<string, string | undefined> = {},
  ...children: Child[]
): HTMLElement {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value !== undefined) {
      node.setAttribute(name, value);
    }
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) {
      node.append(child);
    }
  }
  return node;
}

/**
 * A table with a header row; *numeric* columns are right-aligned. A row's *note* goes in
 * a row of its own beneath it, across the table (a narrow panel has no room for a column).
 */
export function table(
  name: string,
  headers: string[],
  rows: Array<{ cells: Child[]; mark?: boolean; key?: string; note?: Child }>,
  numeric: number[] = [],
  empty = 'none'
): HTMLElement {
  if (rows.length === 0) {
    return h('p', { class: 'gpuwb-empty', 'data-gpuwb': name }, empty);
  }
  const head = h('tr', {}, ...headers.map((text, i) => h('th', numeric.includes(i) ? { class: 'gpuwb-num' } : {}, text)));
  const body = rows.flatMap(row => {
    const noted = row.note !== null && row.note !== undefined && row.note !== false;
    const classes = [row.mark ? 'gpuwb-you' : '', noted ? 'gpuwb-noted' : ''].filter(c => c).join(' ');
    const tr = h(
      'tr',
      { class: classes || undefined, 'data-key': row.key },
      ...row.cells.map((cell, i) => h('td', numeric.includes(i) ? { class: 'gpuwb-num' } : {}, cell))
    );
    if (!noted) {
      return [tr];
    }
    const note = h('td', { colspan: String(headers.length) }, row.note);
    return [tr, h('tr', { class: 'gpuwb-note-row', 'data-note-of': row.key }, note)];
  });
  return h('table', { class: 'gpuwb-table', 'data-gpuwb': name }, h('thead', {}, head), h('tbody', {}, ...body));
}

/**
 * The per-user shares of one device over the last minutes, as a small SVG line chart:
 * the pool's history (device seconds per user per second) summed into slices, each
 * user's part of the device time used in that slice. Slices with no use are gaps.
 */
import { History } from './api';

const SVG = 'http://www.w3.org/2000/svg';
export const COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];

export interface Shares {
  starts: number[];
  shares: Record<string, Array<number | null>>;
}

export function sliceShares(history: History, slice = 5): Shares {
  const users = Object.keys(history.users).sort();
  const per = Math.max(1, Math.round(slice / (history.step || 1)));
  const n = Math.max(0, ...users.map(u => history.users[u].length));
  const count = Math.ceil(n / per);
  const starts: number[] = [];
  const shares: Record<string, Array<number | null>> = {};
  users.forEach(u => (shares[u] = []));
  for (let i = 0; i < count; i++) {
    starts.push(history.t0 + i * per * history.step);
    const sums = users.map(u => history.users[u].slice(i * per, (i + 1) * per).reduce((a, b) => a + b, 0));
    const total = sums.reduce((a, b) => a + b, 0);
    users.forEach((u, j) => shares[u].push(total > 0 ? sums[j] / total : null));
  }
  return { starts, shares };
}

function svg(tag: string, attrs: Record<string, string | number>): SVGElement {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) {
    node.setAttribute(name, String(value));
  }
  return node;
}

/**
 * An SVG of the shares as stacked columns, one per slice (a column is the device time
 * used in that slice, split by user; idle slices are empty), *you* outlined.
 */
export function shareChart(history: History | undefined, you: string, width = 230, height = 100): Element {
  const { starts, shares } = history ? sliceShares(history) : { starts: [], shares: {} };
  const users = Object.keys(shares);
  const root = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, class: 'gpuwb-chart', role: 'img' });
  const pad = { left: 30, right: 4, top: 6, bottom: 16 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  for (const level of [0, 0.5, 1]) {
    const y = pad.top + h * (1 - level);
    root.append(svg('line', { x1: pad.left, x2: pad.left + w, y1: y, y2: y, class: 'gpuwb-grid' }));
    const label = svg('text', { x: pad.left - 4, y: y + 3, 'text-anchor': 'end', class: 'gpuwb-axis' });
    label.textContent = `${level * 100}%`;
    root.append(label);
  }
  const axis = svg('text', { x: pad.left, y: height - 3, class: 'gpuwb-axis' });
  const span = starts.length ? (starts.length * (history?.step ?? 1) * Math.max(1, Math.round(5 / (history?.step || 1)))) : 0;
  axis.textContent = starts.length ? `last ${Math.round(span / 60)} min, 5 s columns` : 'no history';
  root.append(axis);
  const column = starts.length ? w / starts.length : w;
  let drawn = 0;
  starts.forEach((_, i) => {
    let base = pad.top + h;
    users.forEach((user, k) => {
      const value = shares[user][i];
      if (!value) {
        return;
      }
      const height_ = h * value;
      base -= height_;
      root.append(
        svg('rect', {
          x: (pad.left + i * column).toFixed(1),
          y: base.toFixed(1),
          width: Math.max(1, column - 0.5).toFixed(1),
          height: height_.toFixed(1),
          fill: COLOURS[k % COLOURS.length],
          class: user === you ? 'gpuwb-bar gpuwb-bar-you' : 'gpuwb-bar',
          'data-user': user
        })
      );
      drawn += 1;
    });
  });
  if (drawn === 0) {
    const note = svg('text', { x: pad.left + w / 2, y: pad.top + h / 2, 'text-anchor': 'middle', class: 'gpuwb-axis' });
    note.textContent = 'no device time used';
    root.append(note);
  }
  return root;
}

/**
 * Small SVG charts, no chart library. The per-user shares of one device over the last
 * minutes (stacked columns): the pool's history (device seconds per user per second)
 * summed into slices, each user's part of the device time used in that slice; slices
 * with no use are gaps. And a device's samples over time (lines): how busy it was, its
 * memory, NVML's utilisation on a GPU.
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

interface Pad {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** Lines at 0, half and all of the scale, labelled at the left. */
function grid(root: SVGElement, pad: Pad, w: number, h: number, label: (level: number) => string): void {
  for (const level of [0, 0.5, 1]) {
    const y = pad.top + h * (1 - level);
    root.append(svg('line', { x1: pad.left, x2: pad.left + w, y1: y, y2: y, class: 'gpuwb-grid' }));
    const text = svg('text', { x: pad.left - 4, y: y + 3, 'text-anchor': 'end', class: 'gpuwb-axis' });
    text.textContent = label(level);
    root.append(text);
  }
}

/** A line of a {@link lineChart}: values every step (null: none), in the chart's units. */
export interface Series {
  name: string;
  values: Array<number | null>;
  colour: string;
}

/**
 * Lines of evenly spaced samples (the pool's, every 2 s) across the width, against 0 to
 * *max* (the left axis labelled by *label*); a null breaks its line. *axis* says what the
 * x axis spans.
 */
export function lineChart(
  series: Series[],
  max: number,
  label: (level: number) => string,
  axis: string,
  width = 230,
  height = 80
): Element {
  const root = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, class: 'gpuwb-chart', role: 'img' });
  const pad = { left: 30, right: 4, top: 6, bottom: 16 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  grid(root, pad, w, h, label);
  const note = svg('text', { x: pad.left, y: height - 3, class: 'gpuwb-axis' });
  note.textContent = axis;
  root.append(note);
  const n = Math.max(0, ...series.map(s => s.values.length));
  const x = (i: number) => pad.left + (n > 1 ? (i * w) / (n - 1) : w);
  const y = (v: number) => pad.top + h * (1 - Math.min(1, Math.max(0, v / (max || 1))));
  for (const line of series) {
    let run: Array<[number, number]> = []; // the points since the last gap
    const draw = () => {
      const [first] = run;
      if (run.length > 1) {
        const points = run.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(' ');
        root.append(svg('polyline', { points, fill: 'none', stroke: line.colour, 'stroke-width': 1.5, 'data-series': line.name }));
      } else if (first) {   // a lone sample between gaps: a dot
        root.append(svg('circle', { cx: first[0].toFixed(1), cy: first[1].toFixed(1), r: 1.5, fill: line.colour, 'data-series': line.name }));
      }
      run = [];
    };
    line.values.forEach((v, i) => {
      if (v === null || v === undefined) {
        draw();
      } else {
        run.push([x(i), y(v)]);
      }
    });
    draw();
  }
  return root;
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
  grid(root, pad, w, h, level => `${level * 100}%`);
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

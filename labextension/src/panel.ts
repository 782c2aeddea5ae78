/**
 * The side panel: the pool's devices, the per-user shares of your device over the last
 * minutes (a live chart), the users with weights, targets and measured shares, and your
 * sessions. It shows why when there is no pool to show.
 */
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { PoolStatus } from './api';
import { COLOURS, shareChart } from './chart';
import { h, table } from './dom';
import { deviceName, gib, percent, seconds, summarize, yourDevice } from './format';
import { PoolModel } from './model';

export class PoolPanel extends Widget {
  constructor(private readonly model: PoolModel, private readonly openCatalog: () => void) {
    super();
    this.id = 'gpuwb-pool-panel';
    this.addClass('gpuwb-panel');
    this.title.caption = 'GPU pool';
    model.changed.connect(this.render, this);
    this.render();
  }

  /** The chart's history is asked for only while the panel is shown. */
  protected onAfterShow(msg: Message): void {
    this.model.wantHistory = true;
    this.render();
  }

  protected onAfterHide(msg: Message): void {
    this.model.wantHistory = false;
  }

  render(): void {
    if (!this.isVisible) {
      return; // drawn when shown
    }
    const { body, error } = this.model;
    const summary = summarize(body, error);
    const header = h(
      'div',
      { class: 'gpuwb-header' },
      h('h2', {}, 'GPU pool'),
      h('div', { class: 'gpuwb-summary', 'data-gpuwb': 'panel-summary', 'data-state': summary.state }, summary.text),
      h('button', { class: 'jp-mod-styled jp-mod-accept gpuwb-catalog-button', 'data-gpuwb': 'open-catalog' }, 'Research catalogue')
    );
    (header.querySelector('button') as HTMLElement).onclick = this.openCatalog;
    const focused = this.node.contains(document.activeElement)
      ? (document.activeElement as HTMLElement).dataset.gpuwb
      : undefined;
    const status = body?.status ?? body?.last_status;
    const parts: Array<Node> = [header];
    if (summary.state !== 'ok' || status === undefined) {
      parts.push(h('p', { class: 'gpuwb-reason', 'data-gpuwb': 'reason' }, summary.title));
    }
    if (status !== undefined) {
      parts.push(...this.sections(status, body?.pool ?? ''));
    }
    this.node.replaceChildren(...parts);
    if (focused) {   // the redraw keeps the keyboard where it was
      (this.node.querySelector(`[data-gpuwb="${focused}"]`) as HTMLElement | null)?.focus();
    }
  }

  private sections(status: PoolStatus, pool: string): Node[] {
    const you = status.you;
    const device = yourDevice(status);
    const devices = table(
      'devices',
      ['Device', 'Sessions', 'GiB'],
      status.devices.map(d => ({
        key: d.device,
        mark: d.device === device?.device,
        cells: [
          h('span', { title: d.device }, deviceName(d)),
          String(d.sessions),
          d.info.memory_total ? `${gib(d.memory_used)} / ${gib(d.info.memory_total)}` : gib(d.memory_used, 2)
        ]
      })),
      [1, 2]
    );
    const history = device ? status.history?.[device.device] : undefined;
    const users = status.users.filter(u => u.device === device?.device);
    const legend = Object.keys(history?.users ?? {})
      .sort()
      .map((u, k) => h('span', { class: 'gpuwb-legend' }, h('i', { style: `background:${COLOURS[k % COLOURS.length]}` }), u === you ? `${u} (you)` : u));
    const userTable = table(
      'users',
      ['User', 'Weight', 'Share (target)', 'Queue', 'GiB'],
      users.map(u => ({
        key: u.user,
        mark: u.user === you,
        cells: [
          u.user === you ? `${u.user} (you)` : u.user,
          String(u.weight),
          h(
            'span',
            { title: 'measured over the last 10 s (the target by weight, among users with work)' },
            `${percent(u.share)} (${percent(u.target_share)})`
          ),
          h('span', { title: 'ops waiting for the device' }, String(u.waiting)),
          u.memory_quota === null ? gib(u.memory_used, 2) : `${gib(u.memory_used, 2)}/${gib(u.memory_quota)}`
        ]
      })),
      [1, 2, 3, 4],
      'no users on this device'
    );
    const mine = status.sessions.filter(s => s.user === you);
    const sessions = table(
      'sessions',
      ['Session', 'GiB', 'Arrays', 'Ops', 'Device time'],
      mine.map(s => ({
        key: s.session,
        cells: [
          h(
            'span',
            { title: `${s.session} from ${s.client} on ${s.device}, open ${seconds(s.age)}, idle ${seconds(s.idle)}` },
            s.session.slice(0, 8)
          ),
          gib(s.memory_used, 2),
          String(s.arrays),
          h('span', { 'data-gpuwb': 'ops' }, String(s.ops)),
          seconds(s.device_seconds)
        ]
      })),
      [1, 2, 3, 4],
      'no sessions of yours: run a cell on the "Python 3 (remote GPU)" kernel'
    );
    return [
      h('p', { class: 'gpuwb-meta' }, `${pool} · policy ${status.policy} · you are ${you}`),
      h('h3', {}, 'Devices'),
      devices,
      h('h3', {}, `Shares of ${device ? deviceName(device) : 'the device'}`),
      h('div', { 'data-gpuwb': 'chart' }, shareChart(history, you), h('div', {}, ...legend)),
      h('h3', {}, 'Users'),
      userTable,
      h('h3', {}, 'Your sessions'),
      sessions
    ];
  }

  dispose(): void {
    this.model.changed.disconnect(this.render, this);
    super.dispose();
  }
}

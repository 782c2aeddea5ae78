/**
 * The side panel: the pool's devices and their utilisation and memory over time, the
 * per-user shares of your device over the last minutes, the users with weights, targets
 * and measured shares, with the part of their time each waited for other users' turns,
 * and your sessions (what opened each, how long idle, how much of it is swapped out and
 * where, an End button). When the pool is down or the server does not answer it keeps
 * showing the last status it had, marked stale with the time it is from; it shows why
 * when there is nothing to show.
 */
import { Dialog, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { PoolStatus, SessionRow, UserRow, endSession } from './api';
import { COLOURS, shareChart } from './chart';
import { devicePlots } from './devices';
import { h, table } from './dom';
import {
  NEAR_LIMIT,
  OOM_SHOWN_S,
  SWAPPED_MEANS,
  Shown,
  clock,
  deviceName,
  gib,
  memoryPressure,
  percent,
  seconds,
  sessionFraction,
  sessionName,
  shownStatus,
  summarize,
  swappedWhere,
  PARKED_MEANS,
  waitedText,
  yourAccount,
  yourDevice
} from './format';
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
    const { body, error, receivedAt } = this.model;
    const summary = summarize(body, error, receivedAt);
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
    const shown = shownStatus(body, error, receivedAt);
    const parts: Array<Node> = [header];
    if (shown === undefined || (!shown.stale && !['ok', 'warn', 'oom'].includes(summary.state))) {
      parts.push(h('p', { class: 'gpuwb-reason', 'data-gpuwb': 'reason' }, summary.title));
    }
    if (shown !== undefined) {
      if (shown.stale) {
        parts.push(
          h(
            'p',
            { class: 'gpuwb-stale-note', 'data-gpuwb': 'stale' },
            `Not live: ${shown.why}. Shown as of ${clock(shown.asOf)} (${seconds(shown.ago)} ago).`
          )
        );
      }
      const sections = h('div', { class: shown.stale ? 'gpuwb-stale' : undefined, 'data-gpuwb': 'sections' });
      sections.append(...this.sections(shown, body?.pool ?? ''));
      parts.push(sections);
    }
    this.node.replaceChildren(...parts);
    if (focused) {   // the redraw keeps the keyboard where it was
      (this.node.querySelector(`[data-gpuwb="${focused}"]`) as HTMLElement | null)?.focus();
    }
  }

  private sections(shown: Shown, pool: string): Node[] {
    const status = shown.status;
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
    const plots = status.devices.map(d => {
      const open = this._open.get(d.device) ?? d.device === device?.device;
      const details = devicePlots(d, status.device_history?.[d.device], open);
      details.addEventListener('toggle', () => this._open.set(d.device, (details as HTMLDetailsElement).open));
      return details;
    });
    const history = device ? status.history?.[device.device] : undefined;
    const legend = Object.keys(history?.users ?? {})
      .sort()
      .map((u, k) => h('span', { class: 'gpuwb-legend' }, h('i', { style: `background:${COLOURS[k % COLOURS.length]}` }), u === you ? `${u} (you)` : u));
    const pressure = memoryPressure(status, device);
    return [
      h('p', { class: 'gpuwb-meta' }, `${pool} · policy ${status.policy} · you are ${you}`),
      h('h3', {}, 'Devices'),
      devices,
      h('div', { 'data-gpuwb': 'device-history' }, ...plots),
      h('h3', {}, `Shares of ${device ? deviceName(device) : 'the device'}`),
      h('div', { 'data-gpuwb': 'chart' }, shareChart(history, you), h('div', {}, ...legend)),
      h('h3', {}, 'Users'),
      this.users(status, device?.device),
      h('h3', {}, 'Your sessions'),
      pressure.level === 'ok'
        ? null
        : h('p', { class: `gpuwb-memory-note gpuwb-${pressure.level}`, 'data-gpuwb': 'memory-note', 'data-level': pressure.level }, pressure.note),
      this.sessions(status, shown.stale)
    ].filter((n): n is HTMLElement => n !== null);
  }

  /** The users on your device; you too before your first session (your weight, no share). */
  private users(status: PoolStatus, device: string | undefined): HTMLElement {
    const you = status.you;
    const rows: UserRow[] = status.users.filter(u => u.device === device);
    const account = yourAccount(status);
    if (account && !rows.some(u => u.user === you)) {
      rows.push({
        user: you, device: device ?? '', weight: account.weight, target_share: 0, share: 0, sessions: 0,
        waiting: 0, memory_used: 0, memory_quota: account.memory_quota
      });
    }
    return table(
      'users',
      ['User', 'Weight', 'Share (target)', 'Queue', 'GiB'],
      rows.map(u => ({
        key: u.user,
        mark: u.user === you,
        cells: [
          u.user === you ? `${u.user} (you)` : u.user,
          h('span', { 'data-gpuwb': 'weight' }, String(u.weight)),
          this.share(u),
          h('span', { title: 'ops waiting for the device' }, String(u.waiting)),
          u.memory_quota === null ? gib(u.memory_used, 2) : `${gib(u.memory_used, 2)}/${gib(u.memory_quota)}`
        ]
      })),
      [1, 2, 3, 4],
      'no users on this device'
    );
  }

  /**
   * A user's share over the last 10 s (its target), and beneath it the users' side of it:
   * the part of the time their work spent in the pool that it waited for other users'
   * turns (older pools: the share only).
   */
  private share(u: UserRow): HTMLElement {
    const share = h(
      'span',
      { 'data-gpuwb': 'share', title: 'measured over the last 10 s (the target by weight, among users with work)' },
      `${percent(u.share)} (${percent(u.target_share)})`
    );
    if (u.waited === undefined) {
      return share;
    }
    const waited = waitedText(u);
    return h('span', {}, share, h('span', { class: 'gpuwb-waited', 'data-gpuwb': 'waited', title: waited.title }, waited.text));
  }

  /**
   * Your sessions: what opened each (a notebook, a script), how long idle, and End; a
   * swapped-out one has a line beneath it saying how much of it is swapped out and where.
   */
  private sessions(status: PoolStatus, stale: boolean): HTMLElement {
    const mine = status.sessions.filter(s => s.user === status.you);
    return table(
      'sessions',
      ['Session', 'Idle', 'GiB', 'Ops', ''],
      mine.map(s => {
        const full = (sessionFraction(s) ?? 0) >= NEAR_LIMIT;
        const oom = s.oom_ago !== null && s.oom_ago !== undefined && s.oom_ago <= OOM_SHOWN_S;
        const end = h(
          'button',
          {
            class: 'jp-mod-styled gpuwb-end',
            'data-gpuwb': 'end-session',
            'data-session': s.session,
            title: stale ? 'the pool cannot be reached now' : `end this session: its arrays are freed`
          },
          'End'
        ) as HTMLButtonElement;
        end.disabled = stale;
        end.onclick = () => void this.end(s);
        const swapped = swappedWhere(s);
        return {
          key: s.session,
          note: swapped
            ? h(
                'span',
                { class: 'gpuwb-swapped', 'data-gpuwb': 'swapped', title: SWAPPED_MEANS + (s.parked ? PARKED_MEANS : '') },
                swapped
              )
            : null,
          cells: [
            h(
              'span',
              {
                'data-gpuwb': 'session-label',
                title:
                  `${s.label || '(no label)'}\nsession ${s.session} from ${s.client} on ${s.device}, ` +
                  `open ${seconds(s.age)}, ${s.arrays} arrays, ${seconds(s.device_seconds)} of device time`
              },
              sessionName(s)
            ),
            h('span', { 'data-gpuwb': 'idle', title: 'since its last op' }, seconds(s.idle)),
            h(
              'span',
              {
                class: oom ? 'gpuwb-oom' : full ? 'gpuwb-warn' : undefined,
                title:
                  `on the device, of its limit ${gib(s.memory_limit, 2)} GiB` +
                  (swapped ? `; ${swapped}` : '') +
                  (oom ? `; out of memory ${seconds(s.oom_ago as number)} ago` : '')
              },
              gib(s.memory_used, 2)
            ),
            h('span', { 'data-gpuwb': 'ops' }, String(s.ops)),
            end
          ]
        };
      }),
      [1, 2, 3],
      'no sessions of yours: run a cell on the "Python 3 (remote GPU)" kernel'
    );
  }

  /** Ask, then end one of your sessions (the pool refuses anyone else's). */
  private async end(s: SessionRow): Promise<void> {
    const answer = await showDialog({
      title: `End session ${sessionName(s)}?`,
      body:
        `Its ${s.arrays} arrays (${gib(s.memory_used, 2)} GiB` +
        (swappedWhere(s) ? ` on the device, ${swappedWhere(s)}` : '') +
        ') are freed and its device time stops. ' +
        `${s.label ? `Its kernel (${s.label})` : 'Its program'} is told its session has ended; a ` +
        'remote-GPU kernel opens a new one at its next cell.',
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'End session' })]
    });
    if (!answer.button.accept) {
      return;
    }
    try {
      await endSession(s.session);
    } catch (exc) {
      await showErrorMessage('The session was not ended', exc instanceof Error ? exc.message : String(exc));
    }
    await this.model.refresh();
  }

  dispose(): void {
    this.model.changed.disconnect(this.render, this);
    super.dispose();
  }

  /** Which devices' plots the user opened or closed (kept across redraws). */
  private _open = new Map<string, boolean>();
}

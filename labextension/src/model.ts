/**
 * The pool's status as the page knows it: one poll of /gpuwb/api/status for the whole
 * page, shared by the status-bar item and the side panel (the server extension polls the
 * pool once for all pages). Every 2 s while the page is visible, backing off to 30 s
 * while the server does not answer; the per-user history (for the panel's chart) is asked
 * for only while the panel is shown.
 */
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { StatusBody, getJSON } from './api';

const STATES = new Set(['ok', 'starting', 'down', 'none']);

export class PoolModel {
  constructor(interval = 2000) {
    this._poll = new Poll({
      factory: () => this._ask(),
      frequency: { interval, backoff: true, max: 30 * 1000 },
      standby: 'when-hidden',
      name: 'gpu-workbench:status'
    });
  }

  /** The last answer, or null before the first. It stays while the server does not
   * answer (the panel then shows it marked stale). */
  body: StatusBody | null = null;
  /** When the last answer came (Date.now()): how old its figures are since. */
  receivedAt = 0;
  /** Why the last request failed (the server is gone, the extension is not enabled). */
  error: string | null = null;

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Whether to ask for the per-user history (the panel is shown). */
  set wantHistory(value: boolean) {
    if (value !== this._history) {
      this._history = value;
      if (value) {
        void this.refresh();
      }
    }
  }

  /** The first request now (then every interval). */
  start(): void {
    void this.refresh();
  }

  /** Ask now (the panel was opened) rather than at the next tick. */
  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  dispose(): void {
    this._poll.dispose();
    Signal.clearData(this);
  }

  /** One request; a rejection makes the poll back off, and is shown as the error. */
  private async _ask(): Promise<void> {
    const serial = ++this._serial;
    let body: StatusBody | null = null;
    let error: string | null = null;
    try {
      const reply = await getJSON<StatusBody & { message?: string }>(
        ['status'],
        this._history ? { history: '1' } : {}
      );
      if ((reply.status === 200 || reply.status === 503) && STATES.has(reply.body?.state)) {
        body = reply.body;
      } else {
        error = reply.body?.message ?? `the server answered HTTP ${reply.status}`;
      }
    } catch (exc) {
      error = exc instanceof Error ? exc.message : String(exc);
    }
    if (serial !== this._serial) {
      return; // a newer request has answered or will
    }
    if (body !== null) {
      this.body = body;
      this.receivedAt = Date.now();
    }
    this.error = error;
    this._changed.emit();
    if (error !== null) {
      throw new Error(error); // back off
    }
  }

  private _changed = new Signal<this, void>(this);
  private _poll: Poll;
  private _history = false;
  private _serial = 0;
}

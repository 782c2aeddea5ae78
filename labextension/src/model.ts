/**
 * The pool's status as the page knows it: one poll of /gpuwb/api/status every few
 * seconds for the whole page, shared by the status-bar item and the side panel (the
 * server extension polls the pool once for all pages).
 */
import { ISignal, Signal } from '@lumino/signaling';

import { StatusBody, getJSON } from './api';

export class PoolModel {
  constructor(readonly interval = 2000) {}

  /** The last answer, or null before the first. */
  body: StatusBody | null = null;
  /** Why the last request failed (the server is gone, the extension is not enabled). */
  error: string | null = null;
  /** How many answers have arrived (the browser test waits on it). */
  updates = 0;

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  start(): void {
    if (this._timer === null) {
      void this._tick();
    }
  }

  /** Ask now (after a cell ran, say) rather than at the next tick. */
  async refresh(): Promise<void> {
    try {
      const { body } = await getJSON<StatusBody>(['status'], { history: '1' });
      this.body = body;
      this.error = null;
    } catch (exc) {
      this.error = exc instanceof Error ? exc.message : String(exc);
    }
    this.updates += 1;
    this._changed.emit();
  }

  dispose(): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    Signal.clearData(this);
  }

  private async _tick(): Promise<void> {
    await this.refresh();
    this._timer = window.setTimeout(() => void this._tick(), this.interval);
  }

  private _changed = new Signal<this, void>(this);
  private _timer: number | null = null;
}

/** The status-bar item: "GPU: H100 · share 34% · 2.1/16 GiB"; a click opens the panel. */
import { Widget } from '@lumino/widgets';

import { summarize } from './format';
import { PoolModel } from './model';

export class PoolStatusItem extends Widget {
  constructor(private readonly model: PoolModel, onClick: () => void) {
    super();
    this.addClass('gpuwb-statusbar');
    this.node.dataset.gpuwb = 'status-item';
    this.node.setAttribute('role', 'button');
    this.node.tabIndex = 0;
    this.node.addEventListener('click', onClick);
    this.node.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        onClick();
      }
    });
    model.changed.connect(this.render, this);
    this.render();
  }

  render(): void {
    const summary = summarize(this.model.body, this.model.error, this.model.receivedAt);
    this.node.textContent = summary.text;
    this.node.title = summary.title;
    this.node.dataset.state = summary.state;
  }

  dispose(): void {
    this.model.changed.disconnect(this.render, this);
    super.dispose();
  }
}

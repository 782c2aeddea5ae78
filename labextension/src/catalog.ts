/**
 * The research catalogue in a Lab tab: a search box (the catalogue's own ranked search),
 * filters by category and kind, the list, and a card for the chosen system with its
 * links. The whole catalogue is small (tens of systems): it is fetched once, searches
 * ask the server.
 */
import { Widget } from '@lumino/widgets';

import { CatalogBody, System, getJSON } from './api';
import { h } from './dom';

export class CatalogBrowser extends Widget {
  constructor() {
    super();
    this.id = 'gpuwb-catalog';
    this.addClass('gpuwb-catalog');
    this.title.label = 'GPU systems catalogue';
    this.title.closable = true;
    this.search = h('input', { type: 'search', placeholder: 'Search: preemption, MIG, remoting…', 'data-gpuwb': 'catalog-search', class: 'jp-mod-styled' }) as HTMLInputElement;
    this.category = h('select', { 'data-gpuwb': 'catalog-category', class: 'jp-mod-styled' }) as HTMLSelectElement;
    this.kind = h('select', { 'data-gpuwb': 'catalog-kind', class: 'jp-mod-styled' }) as HTMLSelectElement;
    this.list = h('div', { class: 'gpuwb-catalog-list', 'data-gpuwb': 'catalog-list' });
    this.card = h('div', { class: 'gpuwb-card', 'data-gpuwb': 'catalog-card' }, 'Choose a system.');
    this.message = h('p', { class: 'gpuwb-reason' });
    this.node.append(
      h('div', { class: 'gpuwb-catalog-bar' }, this.search, this.category, this.kind),
      this.message,
      h('div', { class: 'gpuwb-catalog-body' }, this.list, this.card)
    );
    this.search.addEventListener('input', () => {
      window.clearTimeout(this.debounce);
      this.debounce = window.setTimeout(() => void this.refresh(), 200);
    });
    this.category.addEventListener('change', () => void this.refresh());
    this.kind.addEventListener('change', () => void this.refresh());
    void this.load();
  }

  private async load(): Promise<void> {
    try {
      const { status, body } = await getJSON<CatalogBody & { error?: string }>(['catalog']);
      if (status !== 200) {
        throw new Error(body.error ?? `the server answered ${status}`);
      }
      this.all = body.systems;
    } catch (exc) {
      this.message.textContent = `The catalogue cannot be read: ${exc instanceof Error ? exc.message : exc}`;
      return;
    }
    fill(this.category, 'every category', this.all.map(s => s.category));
    fill(this.kind, 'every kind', this.all.map(s => s.kind));
    await this.refresh();
  }

  /** The list for the current search and filters . */
  private async refresh(): Promise<void> {
    const query = this.search.value.trim();
    let systems = this.all;
    this.message.textContent = '';
    if (query) {
      try {
        const { status, body } = await getJSON<CatalogBody & { error?: string }>(['catalog'], { q: query });
        if (query !== this.search.value.trim()) {
          return; // a newer search is on its way
        }
        systems = status === 200 ? body.systems : [];
        this.message.textContent = status === 200 ? '' : (body.error ?? `the server answered ${status}`);
      } catch (exc) {
        systems = [];
        this.message.textContent = `The search failed: ${exc instanceof Error ? exc.message : exc}`;
      }
    }
    systems = systems.filter(
      s => (!this.category.value || s.category === this.category.value) && (!this.kind.value || s.kind === this.kind.value)
    );
    this.list.replaceChildren(
      h('p', { class: 'gpuwb-meta', 'data-gpuwb': 'catalog-count' }, `${systems.length} of ${this.all.length} systems`),
      ...systems.map(s => {
        const row = h(
          'button',
          { class: 'gpuwb-system', 'data-key': s.key },
          h('b', {}, s.name),
          ` ${s.year ?? ''} · ${s.category}`
        );
        row.onclick = () => this.showSystem(s);
        return row;
      })
    );
  }

  showSystem(system: System): void {
    const links = system.links.map(link =>
      h(
        'li',
        {},
        webAddress(link.url)
          ? h('a', { href: link.url, target: '_blank', rel: 'noopener noreferrer', title: link.url }, link.kind)
          : link.kind,
        ` · ${host(link.url)}`,
        link.note ? ` — ${link.note}` : ''
      )
    );
    const field = (name: string, value: string | null | undefined) =>
      value ? h('div', { class: 'gpuwb-field' }, h('span', {}, name), value) : '';
    this.card.replaceChildren(
      h('h2', {}, system.name),
      system.title ? h('p', { class: 'gpuwb-title' }, system.title) : '',
      field('Venue', [system.venue, system.year].filter(Boolean).join(' ')),
      field('Category', system.category),
      field('Kind', system.kind),
      field('Mechanisms', system.mechanisms.join(', ')),
      field('Institutions', system.institutions.join('; ')),
      field('Code', system.code_public === null ? null : system.code_public ? 'public' : 'not public'),
      system.ideas.length ? h('div', {}, h('h3', {}, 'Ideas'), h('ul', {}, ...system.ideas.map(i => h('li', {}, i)))) : '',
      system.results.length ? h('div', {}, h('h3', {}, 'Results'), h('ul', {}, ...system.results.map(r => h('li', {}, r)))) : '',
      system.relation ? h('div', {}, h('h3', {}, 'Beside gpu-workbench'), h('p', {}, system.relation)) : '',
      links.length ? h('div', {}, h('h3', {}, 'Links'), h('ul', { 'data-gpuwb': 'catalog-links' }, ...links)) : ''
    );
    this.card.dataset.key = system.key;
  }

  private all: System[] = [];
  private debounce = 0;
  private readonly search: HTMLInputElement;
  private readonly category: HTMLSelectElement;
  private readonly kind: HTMLSelectElement;
  private readonly list: HTMLElement;
  private readonly card: HTMLElement;
  private readonly message: HTMLElement;
}

/** Only http(s) addresses become links (the catalogue checks them too). */
function webAddress(url: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(url).protocol);
  } catch {
    return false;
  }
}

function host(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

function fill(select: HTMLSelectElement, all: string, values: string[]): void {
  const unique = [...new Set(values)].sort();
  select.replaceChildren(h('option', { value: '' }, all), ...unique.map(v => h('option', { value: v }, v)));
}

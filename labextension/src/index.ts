/**
 * gpu-workbench in JupyterLab: the pool's status in the status bar, a side panel with
 * its devices, per-user shares and your sessions, and the research catalogue in a tab.
 * Everything comes from the server extension's /gpuwb/api endpoints.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget } from '@jupyterlab/apputils';
import { IStatusBar } from '@jupyterlab/statusbar';
import { LabIcon } from '@jupyterlab/ui-components';

import { CatalogBrowser } from './catalog';
import { PoolModel } from './model';
import { PoolPanel } from './panel';
import { PoolStatusItem } from './statusbar';

const gpuIcon = new LabIcon({
  name: 'gpu-workbench:gpu',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M4 7h16v10H4zM2 9h2v2H2zm0 4h2v2H2zm18-4h2v2h-2zm0 4h2v2h-2zM7 4h2v3H7zm4 0h2v3h-2zm4 0h2v3h-2zM7 17h2v3H7zm4 0h2v3h-2zm4 0h2v3h-2z"/>' +
    '<path fill="#fff" d="M7 10h10v4H7z"/></g></svg>'
});

const COMMANDS = { panel: 'gpuwb:open-pool-panel', catalog: 'gpuwb:open-catalog' };

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'gpu-workbench:plugin',
  description: 'The GPU pool and the research catalogue in JupyterLab',
  autoStart: true,
  optional: [IStatusBar, ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    statusBar: IStatusBar | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const model = new PoolModel();
    let catalog: MainAreaWidget<CatalogBrowser> | null = null;
    app.commands.addCommand(COMMANDS.catalog, {
      label: 'GPU Workbench: Research Catalogue',
      execute: () => {
        if (catalog === null || catalog.isDisposed) {
          const tab = new MainAreaWidget({ content: new CatalogBrowser() });
          tab.id = 'gpuwb-catalog-tab';
          tab.title.label = 'GPU systems';
          tab.title.icon = gpuIcon;
          app.shell.add(tab, 'main');
          catalog = tab;
        }
        app.shell.activateById(catalog.id);
      }
    });
    const panel = new PoolPanel(model, () => void app.commands.execute(COMMANDS.catalog));
    panel.title.icon = gpuIcon;
    app.shell.add(panel, 'left', { rank: 900 });
    restorer?.add(panel, panel.id);   // open again after a reload if it was open
    app.commands.addCommand(COMMANDS.panel, {
      label: 'GPU Workbench: Show the GPU Pool',
      execute: () => app.shell.activateById(panel.id)
    });
    if (palette) {
      palette.addItem({ command: COMMANDS.panel, category: 'GPU Workbench' });
      palette.addItem({ command: COMMANDS.catalog, category: 'GPU Workbench' });
    }
    if (statusBar) {
      const item = new PoolStatusItem(model, () => void app.commands.execute(COMMANDS.panel));
      statusBar.registerStatusItem('gpu-workbench:status', { item, align: 'left', rank: 100 });
    }
    model.start();
  }
};

export default plugin;

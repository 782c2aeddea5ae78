/**
 * Each device's utilisation and memory over the last minutes, as jupyterlab-nvdashboard's
 * users expect to watch them: two small line charts per device from the pool's samples
 * (status.device_history, asked for while the panel is shown). On a GPU where the pool
 * reads NVML, NVML's utilisation and memory in use (every process's); everywhere, how
 * busy the pool's accounting says the device was (device time its workers measured) and
 * the memory its sessions hold. The NumPy device has no utilisation to read: the busy
 * line is all it has, and the plot says so.
 */
import { DeviceRow, DeviceSamples } from './api';
import { COLOURS, Series, lineChart } from './chart';
import { h } from './dom';
import { deviceName, gib } from './format';

function span(samples: DeviceSamples): string {
  const seconds = samples.busy.length * samples.step;
  return seconds >= 90 ? `last ${Math.round(seconds / 60)} min` : `last ${Math.round(seconds)} s`;
}

function legend(series: Series[]): HTMLElement {
  return h(
    'div',
    {},
    ...series.map(s => h('span', { class: 'gpuwb-legend' }, h('i', { style: `background:${s.colour}` }), s.name))
  );
}

/** The two plots of one device, with their legends and what the figures are. */
export function devicePlots(device: DeviceRow, samples: DeviceSamples | undefined, open: boolean): HTMLElement {
  const body: Node[] = [];
  if (samples === undefined || samples.busy.length === 0) {
    body.push(h('p', { class: 'gpuwb-empty' }, 'no samples yet (the pool takes one every 2 s)'));
  } else {
    const load: Series[] = [];
    if (samples.utilization) {
      load.push({ name: 'GPU utilisation (NVML)', values: samples.utilization, colour: COLOURS[0] });
    }
    load.push({ name: "busy (pool's accounting)", values: samples.busy, colour: COLOURS[1] });
    const memory: Series[] = [];
    if (samples.nvml_memory) {
      memory.push({ name: 'in use (NVML)', values: samples.nvml_memory, colour: COLOURS[2] });
    }
    memory.push({ name: "sessions' arrays", values: samples.memory, colour: COLOURS[4] });
    const seen = Math.max(0, ...memory.flatMap(s => s.values.filter((v): v is number => v !== null)));
    const top = samples.memory_total ?? Math.max(seen * 1.25, 64 * 1024 ** 2);
    body.push(
      h(
        'div',
        { 'data-gpuwb': 'plot-load' },
        lineChart(load, 1, level => `${level * 100}%`, span(samples)),
        legend(load)
      ),
      h(
        'div',
        { 'data-gpuwb': 'plot-memory' },
        lineChart(
          memory,
          top,
          level => gib(level * top),
          `GiB${samples.memory_total ? ` of ${gib(samples.memory_total)}` : ''}, ${span(samples)}`
        ),
        legend(memory)
      )
    );
    if (samples.nvml !== 'ok') {
      body.push(h('p', { class: 'gpuwb-empty', 'data-gpuwb': 'nvml-note' }, `no NVML figures: ${samples.nvml}`));
    }
  }
  return h(
    'details',
    { class: 'gpuwb-device-plots', 'data-gpuwb': 'device-plots', 'data-device': device.device, open: open ? '' : undefined },
    h('summary', {}, `${deviceName(device)} (${device.device})`),
    ...body
  );
}

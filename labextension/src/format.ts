/** Numbers as the status bar and the panel show them, and the one-line summary. */
import { DeviceRow, PoolStatus, StatusBody, UserRow } from './api';

const GiB = 1024 ** 3;

export function gib(bytes: number | null | undefined, digits = 1): string {
  if (bytes === null || bytes === undefined) {
    return '–';
  }
  const value = bytes / GiB;
  if (value === 0) {
    return '0';
  }
  const text = value.toFixed(value < 0.1 ? Math.max(digits, 2) : digits); // 32 MiB is 0.03
  return Number(text) >= 10 ? value.toFixed(0) : text; // 9.96 is 10, not 10.0
}

export function percent(fraction: number | null | undefined): string {
  return fraction === null || fraction === undefined ? '–' : `${Math.round(fraction * 100)}%`;
}

export function seconds(value: number): string {
  if (value < 60) {
    return `${value.toFixed(value < 10 ? 1 : 0)} s`;
  }
  if (value < 3600) {
    return `${Math.floor(value / 60)} min`;
  }
  return `${(value / 3600).toFixed(1)} h`;
}

/** A device's name, or its id until its worker has said hello. */
export function deviceName(device: DeviceRow): string {
  return device.info.name ?? device.device;
}

/** "NVIDIA H100 80GB HBM3" → "H100"; "NumPy (host CPU)" → "NumPy". */
export function shortName(name: string): string {
  const words = name.replace(/^(NVIDIA|Tesla|AMD)\s+/i, '').split(/\s+/);
  return words[0] || name;
}

/** The device the user's sessions are on (their first), else the pool's first device. */
export function yourDevice(status: PoolStatus): DeviceRow | undefined {
  const mine = status.sessions.find(s => s.user === status.you);
  return status.devices.find(d => d.device === mine?.device) ?? status.devices[0];
}

export function yourRow(status: PoolStatus, device: string): UserRow | undefined {
  return status.users.find(u => u.user === status.you && u.device === device);
}

/**
 * Your memory and what it counts against: with a quota, all your sessions' memory (every
 * device) against it; without one, your memory on *device* against that device's size.
 */
export function yourMemory(status: PoolStatus, device: DeviceRow | undefined): [number, number | null] {
  const rows = status.users.filter(u => u.user === status.you);
  const quota = rows.find(u => u.memory_quota !== null && u.memory_quota !== undefined)?.memory_quota ?? null;
  if (quota !== null) {
    return [rows.reduce((sum, u) => sum + (u.memory_used || 0), 0), quota];
  }
  const here = rows.find(u => u.device === device?.device);
  return [here?.memory_used ?? 0, device?.info.memory_total ?? null];
}

export interface Summary {
  text: string;
  title: string;
  state: StatusBody['state'];
}

/** "GPU: H100 · share 34% · 2.1/16 GiB", or the state when the pool cannot be seen. */
export function summarize(body: StatusBody | null, error: string | null): Summary {
  if (error !== null || body === null) {
    return { text: 'GPU: unavailable', title: error ?? 'no answer yet', state: 'unavailable' };
  }
  switch (body.state) {
    case 'ok':
      break;
    case 'none':
      return { text: 'GPU: no pool', title: body.message ?? 'no pool is configured', state: 'none' };
    case 'starting':
      return { text: 'GPU: connecting…', title: `asking the pool at ${body.pool}`, state: 'starting' };
    case 'down':
      return { text: 'GPU: pool down', title: `${body.pool}: ${body.error}`, state: 'down' };
    default:
      return { text: 'GPU: unavailable', title: `an unexpected answer: ${body.state}`, state: 'unavailable' };
  }
  const status = body.status as PoolStatus;
  const device = yourDevice(status);
  if (device === undefined) {
    return { text: 'GPU: no devices', title: `the pool at ${body.pool} has no devices`, state: 'ok' };
  }
  const row = yourRow(status, device.device);
  const [used, limit] = yourMemory(status, device);
  const memory = limit === null ? `${gib(used)} GiB` : `${gib(used)}/${gib(limit)} GiB`;
  const text = `GPU: ${shortName(deviceName(device))} · share ${percent(row?.share ?? 0)} · ${memory}`;
  const title =
    `${deviceName(device)} (${device.device}) at ${body.pool}\n` +
    `you: ${status.you}, weight ${row?.weight ?? 1}, target share ${percent(row?.target_share)}, ` +
    `measured over the last 10 s ${percent(row?.share ?? 0)}\n` +
    `your memory ${gib(used, 2)} GiB${limit === null ? '' : ` of ${gib(limit, 2)} GiB`}; ` +
    `${status.sessions.filter(s => s.user === status.you).length} session(s) of yours, ` +
    `${status.sessions.length} in the pool`;
  return { text, title, state: 'ok' };
}

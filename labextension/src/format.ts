/** Numbers as the status bar and the panel show them, and the one-line summary. */
import { Account, DeviceRow, PoolStatus, SessionRow, StatusBody, UserRow } from './api';

const GiB = 1024 ** 3;

export function gib(bytes: number | null | undefined, digits = 1): string {
  if (bytes === null || bytes === undefined) {
    return '–';
  }
  const value = bytes / GiB;
  if (value === 0) {
    return '0';
  }
  const text = value.toFixed(value < 1 ? Math.max(digits, 2) : digits); // 32 MiB is 0.03, 240 MiB 0.23
  return Number(text) >= 10 ? value.toFixed(0) : text; // 9.96 is 10, not 10.0
}

export function percent(fraction: number | null | undefined): string {
  return fraction === null || fraction === undefined ? '–' : `${Math.round(fraction * 100)}%`;
}

/** "1.5 KiB", "4.0 MiB", "120 GiB": binary units, as `%gpu status` writes them
 * (workbench/views.py's human_bytes). */
export function humanBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) {
    return '–';
  }
  let n = Math.abs(bytes);
  const sign = bytes < 0 ? '-' : '';
  if (n < 1024) {
    return `${sign}${Math.trunc(n)} B`;
  }
  for (const unit of ['KiB', 'MiB', 'GiB', 'TiB']) {
    n /= 1024;
    if (n < 1024 || unit === 'TiB') {
      return `${sign}${n.toFixed(n < 100 ? 1 : 0)} ${unit}`;
    }
  }
  return `${sign}${n} TiB`; // (not reached)
}

/**
 * Where a swapped-out session's arrays are: "2.0 GiB swapped out (in host memory)",
 * "(on disk)", or both when the host's budget took only part of them; '' when none are
 * swapped out. The wording of `%gpu status` (workbench/pool_views.py's _swapped_where).
 */
export function swappedWhere(s: Pick<SessionRow, 'swapped' | 'swapped_host' | 'parked'>): string {
  const swapped = s.swapped ?? 0;
  if (swapped <= 0) {
    return '';
  }
  const inHost = Math.min(s.swapped_host ?? 0, swapped);
  const where =
    inHost === swapped
      ? 'in host memory'
      : inHost <= 0
        ? 'on disk'
        : `${humanBytes(inHost)} in host memory, ${humanBytes(swapped - inHost)} on disk`;
  return `${humanBytes(swapped)} swapped out (${where})` + (s.parked ? ', parked' : '');
}

/** What a swapped-out session's note means (its tooltip). */
export const SWAPPED_MEANS =
  "idle, so its arrays were swapped out of the device's memory: they wait in the pool " +
  "host's memory or on its disk and come back at its next op (from memory, in a fraction " +
  'of the time)';

/** What a parked session's note adds (its tooltip, after SWAPPED_MEANS). */
export const PARKED_MEANS =
  '; parked: idle so long that its worker gave its process and device context back too: ' +
  'its next op starts another (a second or two)';

/** A user's "waited" figure ("waited 12%", "waited –") and what it means (its tooltip). */
export function waitedText(u: Pick<UserRow, 'waited'>): { text: string; title: string } {
  const title =
    "the users' side of the share: of the wall time this user's work spent in the pool " +
    "over the last 10 s, the part it waited for other users' turns on the device";
  if (u.waited === null || u.waited === undefined) {
    return { text: 'waited –', title: `${title} (–: no work of theirs ran in the last 10 s)` };
  }
  return { text: `waited ${percent(u.waited)}`, title };
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

/** Your account: weight and quotas, whether or not you have a session (older pools: none). */
export function yourAccount(status: PoolStatus): Account | undefined {
  return status.accounts?.find(a => a.user === status.you);
}

/**
 * Your memory and what it counts against: with a quota, all your sessions' memory (every
 * device) against it; without one, your memory on *device* against that device's size.
 */
export function yourMemory(status: PoolStatus, device: DeviceRow | undefined): [number, number | null] {
  const account = yourAccount(status);
  if (account && account.memory_quota !== null) {
    return [account.memory_used, account.memory_quota];
  }
  const rows = status.users.filter(u => u.user === status.you);
  const quota = rows.find(u => u.memory_quota !== null && u.memory_quota !== undefined)?.memory_quota ?? null;
  if (quota !== null) {
    return [rows.reduce((sum, u) => sum + (u.memory_used || 0), 0), quota];
  }
  const here = rows.find(u => u.device === device?.device);
  return [here?.memory_used ?? 0, device?.info.memory_total ?? null];
}

/** From this part of a budget on, memory is shown as a warning. */
export const NEAR_LIMIT = 0.85;
/** For this long after an op ran out of memory, the out-of-memory state is shown. */
export const OOM_SHOWN_S = 60;

export interface Pressure {
  level: 'ok' | 'warn' | 'oom';
  /** Why, in a sentence, or '' when all is well. */
  note: string;
  /** The part of the budget nearest its end (your quota, or a session's limit). */
  fraction: number | null;
}

/** A session's memory against its own limit, or null. */
export function sessionFraction(s: SessionRow): number | null {
  return s.memory_limit ? s.memory_used / s.memory_limit : null;
}

/** Whether your memory is near its budget (from 85 %), or an op of yours ran out of it lately. */
export function memoryPressure(status: PoolStatus, device: DeviceRow | undefined): Pressure {
  const [used, limit] = yourMemory(status, device);
  const quota = yourAccount(status)?.memory_quota ?? null;
  const mine = status.sessions.filter(s => s.user === status.you);
  const ooms = mine.map(s => s.oom_ago).filter((a): a is number => a !== null && a !== undefined);
  const oomAgo = ooms.length ? Math.min(...ooms) : null;
  const fraction = limit ? used / limit : null;
  const fullest = mine
    .map(s => ({ s, f: sessionFraction(s) }))
    .filter(x => x.f !== null)
    .sort((a, b) => (b.f as number) - (a.f as number))[0];
  if (oomAgo !== null && oomAgo <= OOM_SHOWN_S) {
    return {
      level: 'oom',
      fraction,
      note:
        `out of memory: an allocation of yours failed ${seconds(oomAgo)} ago; your sessions hold ` +
        `${gib(used, 2)} GiB${limit === null ? '' : ` of ${gib(limit, 2)} GiB`}. ` +
        'Free arrays you no longer need (del x), or end a session you forgot.'
    };
  }
  if (quota !== null && fraction !== null && fraction >= NEAR_LIMIT) {
    return {
      level: 'warn',
      fraction,
      note:
        `near your memory quota: your sessions hold ${percent(fraction)} of your ` +
        `${gib(quota, 2)} GiB; the next allocation may fail. Free arrays you no longer need (del x).`
    };
  }
  if (fullest && (fullest.f as number) >= NEAR_LIMIT) {
    return {
      level: 'warn',
      fraction: fullest.f,
      note:
        `near a session's memory limit: ${sessionName(fullest.s)} holds ${percent(fullest.f)} of its ` +
        `${gib(fullest.s.memory_limit, 2)} GiB; its next allocation may fail.`
    };
  }
  if (quota === null && fraction !== null && fraction >= NEAR_LIMIT) {
    return {
      level: 'warn',
      fraction,
      note: `near the device's memory: ${percent(fraction)} of ${gib(limit, 2)} GiB in use by your sessions.`
    };
  }
  return { level: 'ok', fraction, note: '' };
}

/** "forgotten.ipynb": the label's last part (a notebook's path), else the session's id. */
export function sessionName(s: SessionRow): string {
  const label = s.label ?? '';
  return label ? label.split(/[\\/]/).pop() || label : s.session.slice(0, 8);
}

/** "14:03:12": a time of day, the same in every locale (the tests read it). */
export function clock(unixSeconds: number): string {
  const t = new Date(unixSeconds * 1000);
  return [t.getHours(), t.getMinutes(), t.getSeconds()].map(n => String(n).padStart(2, '0')).join(':');
}

/** The status to show, and whether it is live or the last one seen (stale), from when. */
export interface Shown {
  status: PoolStatus;
  stale: boolean;
  /** When the pool gave it (Unix time; the server's clock). */
  asOf: number;
  /** How old it is now, seconds (the server's count, plus the time since it answered). */
  ago: number;
  /** Why it is stale: the pool is down, or the Jupyter server does not answer. */
  why: string;
}

export function shownStatus(
  body: StatusBody | null,
  error: string | null,
  receivedAt: number,
  now = Date.now()
): Shown | undefined {
  if (body === null) {
    return undefined;
  }
  const since = receivedAt ? Math.max(0, (now - receivedAt) / 1000) : 0;
  if (body.state === 'ok' && body.status) {
    return {
      status: body.status,
      stale: error !== null,
      asOf: body.updated ?? now / 1000,
      ago: (body.age_s ?? 0) + since,
      why: error !== null ? `the Jupyter server does not answer (${error})` : ''
    };
  }
  if (body.state === 'down' && body.last_status) {
    return {
      status: body.last_status,
      stale: true,
      asOf: body.last_updated ?? 0,
      ago: (body.last_age_s ?? 0) + since,
      why: `the pool does not answer (${body.error ?? 'down'})`
    };
  }
  return undefined;
}

export interface Summary {
  text: string;
  title: string;
  state: StatusBody['state'] | 'warn' | 'oom';
}

/** "GPU: H100 · share 34% · 2.1/16 GiB", or the state when the pool cannot be seen. */
export function summarize(body: StatusBody | null, error: string | null, receivedAt = 0): Summary {
  const shown = shownStatus(body, error, receivedAt);
  const stale = shown?.stale ? `\nlast status from ${clock(shown.asOf)} (${seconds(shown.ago)} ago): the panel shows it, marked stale` : '';
  if (error !== null || body === null) {
    return { text: 'GPU: unavailable', title: (error ?? 'no answer yet') + stale, state: 'unavailable' };
  }
  switch (body.state) {
    case 'ok':
      break;
    case 'none':
      return { text: 'GPU: no pool', title: body.message ?? 'no pool is configured', state: 'none' };
    case 'starting':
      return { text: 'GPU: connecting…', title: `asking the pool at ${body.pool}`, state: 'starting' };
    case 'down':
      return { text: 'GPU: pool down', title: `${body.pool}: ${body.error}` + stale, state: 'down' };
    default:
      return { text: 'GPU: unavailable', title: `an unexpected answer: ${body.state}`, state: 'unavailable' };
  }
  const status = body.status as PoolStatus;
  const device = yourDevice(status);
  if (device === undefined) {
    return { text: 'GPU: no devices', title: `the pool at ${body.pool} has no devices`, state: 'ok' };
  }
  const row = yourRow(status, device.device);
  const account = yourAccount(status);
  const [used, limit] = yourMemory(status, device);
  const pressure = memoryPressure(status, device);
  let memory = limit === null ? `${gib(used)} GiB` : `${gib(used)}/${gib(limit)} GiB`;
  if (pressure.level === 'warn' && pressure.fraction !== null) {
    memory += ` (${percent(pressure.fraction)})`;
  }
  const middle = pressure.level === 'oom' ? 'out of memory' : `share ${percent(row?.share ?? 0)}`;
  const text = `GPU: ${shortName(deviceName(device))} · ${middle} · ${memory}`;
  const title =
    (pressure.note ? `${pressure.note}\n` : '') +
    `${deviceName(device)} (${device.device}) at ${body.pool}\n` +
    `you: ${status.you}, weight ${account?.weight ?? row?.weight ?? 1}, target share ${percent(row?.target_share)}, ` +
    `measured over the last 10 s ${percent(row?.share ?? 0)}\n` +
    `your memory ${gib(used, 2)} GiB${limit === null ? '' : ` of ${gib(limit, 2)} GiB`}; ` +
    `${status.sessions.filter(s => s.user === status.you).length} session(s) of yours, ` +
    `${status.sessions.length} in the pool`;
  return { text, title, state: pressure.level === 'ok' ? 'ok' : pressure.level };
}

/**
 * The server extension's endpoints (workbench/jupyter_extension.py) and the shapes they
 * answer. Requests go through ServerConnection, so they carry the server's token and
 * XSRF cookie like every JupyterLab request.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export interface DeviceInfo {
  kind: string;
  name: string;
  memory_total: number | null;
}

export interface DeviceRow {
  device: string;
  /** Empty until the device's first worker has said hello. */
  info: Partial<DeviceInfo>;
  sessions: number;
  memory_used: number;
}

export interface UserRow {
  user: string;
  device: string;
  weight: number;
  target_share: number;
  share: number;
  /**
   * The users' side of the share: of the wall time the user's batches spent in the pool
   * over the last 10 s, the part they waited for other users' turns (0 to 1); null: no
   * batch then; absent from older pools.
   */
  waited?: number | null;
  sessions: number;
  waiting: number;
  memory_used: number;
  memory_quota: number | null;
}

export interface SessionRow {
  session: string;
  user: string;
  client: string;
  /** What opened it: a notebook's path, a script's name ("" for another user's). */
  label: string;
  device: string;
  memory_used: number;
  memory_limit: number | null;
  arrays: number;
  ops: number;
  device_seconds: number;
  /** Seconds since its worker last ran an op. */
  idle: number;
  /** Seconds since one of its ops ran out of device memory, or null. */
  oom_ago: number | null;
  age: number;
  /** Bytes of its arrays swapped out now (0: none; older pools: absent). They come back
   * at its next op. */
  swapped?: number;
  /** Of those, the bytes in the pool host's memory; the rest are on its disk. */
  swapped_host?: number;
  /** Its worker has exited (idle so long, or moving): its next op starts another. */
  parked?: boolean;
}

/** A user of the pool, with or without a session. */
export interface Account {
  user: string;
  weight: number;
  memory_quota: number | null;
  sessions_quota: number | null;
  sessions: number;
  memory_used: number;
  oom_ago: number | null;
}

/** A device's samples every `step` seconds from t0 (the pool's device_samples). */
export interface DeviceSamples {
  t0: number;
  step: number;
  /** The part of each step the device ran sessions' work, by the pool's accounting. */
  busy: Array<number | null>;
  memory: Array<number | null>;
  /** NVML's GPU utilisation, or null where NVML is not read. */
  utilization: Array<number | null> | null;
  nvml_memory: Array<number | null> | null;
  memory_total: number | null;
  /** "ok" while NVML is read, else why not. */
  nvml: string;
}

/** Device seconds per user in each whole second from t0 (the pool's usage history). */
export interface History {
  t0: number;
  step: number;
  users: Record<string, number[]>;
}

export interface PoolStatus {
  address: string;
  policy: string;
  users_mode: string;
  devices: DeviceRow[];
  users: UserRow[];
  sessions: SessionRow[];
  /** Every user of the pool (older pools: absent). */
  accounts?: Account[];
  you: string;
  history?: Record<string, History>;
  device_history?: Record<string, DeviceSamples>;
}

/** What /gpuwb/api/status answers: the pool's status, or why there is none. */
export interface StatusBody {
  pool: string | null;
  state: 'ok' | 'starting' | 'down' | 'none' | 'unavailable';
  status?: PoolStatus;
  /** When the pool answered (Unix time) and how long ago, as the server saw it. */
  updated?: number;
  age_s?: number;
  /** While the pool is down: the last status it gave, when, and how long ago. */
  last_status?: PoolStatus;
  last_updated?: number;
  last_age_s?: number;
  down_for_s?: number;
  error?: string;
  message?: string;
}

export interface Link {
  kind: string;
  url: string;
  note: string | null;
}

export interface System {
  key: string;
  name: string;
  title: string | null;
  venue: string | null;
  year: number | null;
  institutions: string[];
  category: string;
  kind: string;
  mechanisms: string[];
  links: Link[];
  code_public: boolean | null;
  ideas: string[];
  results: string[];
  relation: string | null;
  score?: number;
}

export interface CatalogBody {
  count: number;
  systems: System[];
  query?: string;
}

/** GET /gpuwb/api/<parts>; the parsed JSON body and the HTTP status. */
export async function getJSON<T>(
  parts: string[],
  params: Record<string, string> = {},
  init: RequestInit = {}
): Promise<{ status: number; body: T }> {
  const settings = ServerConnection.makeSettings();
  const query = URLExt.objectToQueryString(params);
  const url = URLExt.join(settings.baseUrl, 'gpuwb', 'api', ...parts.map(encodeURIComponent)) + query;
  const response = await ServerConnection.makeRequest(url, init, settings);
  let body: T;
  try {
    body = (await response.json()) as T;
  } catch {
    throw new Error(
      response.status === 404
        ? 'the gpu-workbench server extension is not enabled on this Jupyter server'
        : `the server answered ${response.status} without JSON`
    );
  }
  return { status: response.status, body };
}

/**
 * End one of your own sessions (DELETE /gpuwb/api/sessions/<id>): the pool refuses
 * another user's. Resolves when it has ended; rejects with the server's reason.
 */
export async function endSession(session: string): Promise<void> {
  const reply = await getJSON<{ ended?: boolean; error?: string }>(['sessions', session], {}, { method: 'DELETE' });
  if (reply.status !== 200) {
    throw new Error(reply.body.error ?? `the server answered HTTP ${reply.status}`);
  }
}

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
  sessions: number;
  waiting: number;
  memory_used: number;
  memory_quota: number | null;
}

export interface SessionRow {
  session: string;
  user: string;
  client: string;
  device: string;
  memory_used: number;
  memory_limit: number | null;
  arrays: number;
  ops: number;
  device_seconds: number;
  idle: number;
  age: number;
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
  you: string;
  history?: Record<string, History>;
}

/** What /gpuwb/api/status answers: the pool's status, or why there is none. */
export interface StatusBody {
  pool: string | null;
  state: 'ok' | 'starting' | 'down' | 'none' | 'unavailable';
  status?: PoolStatus;
  last_status?: PoolStatus;
  age_s?: number;
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
  params: Record<string, string> = {}
): Promise<{ status: number; body: T }> {
  const settings = ServerConnection.makeSettings();
  const query = URLExt.objectToQueryString(params);
  const url = URLExt.join(settings.baseUrl, 'gpuwb', 'api', ...parts.map(encodeURIComponent)) + query;
  const response = await ServerConnection.makeRequest(url, {}, settings);
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

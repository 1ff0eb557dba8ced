// Talking to the gateway: JSON calls with the session's CSRF token, and the NDJSON query stream.

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface Me {
  subject: string;
  kind: string;
  roles: string[];
  user?: { id: string; username: string; display_name?: string; role: string };
  csrf_token?: string;
}

let csrfToken = '';

export function setCsrf(token: string | undefined): void {
  csrfToken = token ?? '';
}

function errorFrom(status: number, body: unknown): ApiError {
  const b = body as Record<string, any> | null;
  const err = b?.error;
  if (err && typeof err === 'object') return new ApiError(status, String(err.code ?? status), String(err.message ?? 'request failed'));
  if (b && typeof b.message === 'string') return new ApiError(status, String(b.code ?? status), b.message);
  if (b && typeof b.error_description === 'string') return new ApiError(status, String(b.error), b.error_description);
  return new ApiError(status, String(status), `request failed with HTTP ${status}`);
}

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  const response = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = { message: text.slice(0, 300) };
  }
  if (!response.ok) {
    // An expired or ended session: let the shell send the user to the sign-in page.
    if (response.status === 401 && !path.startsWith('/auth/') && path !== '/api/v1/me') {
      window.dispatchEvent(new Event('bzrk:signed-out'));
    }
    throw errorFrom(response.status, parsed);
  }
  return parsed as T;
}

export async function login(username: string, password: string): Promise<void> {
  const answer = await api<{ csrf_token: string }>('POST', '/auth/login', { username, password });
  setCsrf(answer.csrf_token);
}

export async function logout(): Promise<void> {
  await api('POST', '/auth/logout');
  setCsrf('');
}

export async function me(): Promise<Me | null> {
  try {
    const who = await api<Me>('GET', '/api/v1/me');
    setCsrf(who.csrf_token);
    return who;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return null;
    throw e;
  }
}

// -- the query stream ---------------------------------------------------------------------

export interface ErrorLocation {
  start_line: number;
  start_column: number;
  end_line: number;
  end_column: number;
}

export type StreamEvent =
  | { type: 'schema'; table: string; columns: { name: string; type: string }[] }
  | { type: 'rows'; table: string; iteration: string; rows: unknown[][]; complete: boolean }
  | {
      type: 'metadata';
      iteration: string;
      warnings: { kind: string; message: string }[];
      visualization: { type: string; properties: Record<string, unknown>; table?: string } | null;
    }
  | {
      type: 'progress';
      rows_processed: number;
      chunks_total: number;
      chunks_scanned: number;
      chunks_skipped_range: number;
      chunks_skipped_bloom: number;
      bytes_scanned: number;
      query_time_nanos: number;
      queue_wait_nanos: number;
      coverage: number;
      slices_done: number;
      slices_total: number;
    }
  | { type: 'done'; status: string; coverage: number; run_id: string | null }
  | { type: 'error'; code: string; message: string; title?: string; location?: ErrorLocation; run_id?: string };

export interface QueryRequest {
  query: string;
  database: string;
  since?: string;
  until?: string;
  timezone?: string;
}

/** Runs a query and calls onEvent for each NDJSON line; resolves when the stream ends. */
export async function streamQuery(
  request: QueryRequest,
  onEvent: (event: StreamEvent) => void,
  signal: AbortSignal,
): Promise<void> {
  const response = await fetch('/query', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', Accept: 'application/x-ndjson', 'X-CSRF-Token': csrfToken },
    body: JSON.stringify({ ...request, stream: true }),
    signal,
  });
  if (!response.ok || !response.body) {
    if (response.status === 401) window.dispatchEvent(new Event('bzrk:signed-out'));
    const text = await response.text();
    let parsed: any = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = { message: text.slice(0, 300) };
    }
    // Failures before any result arrive as one JSON document (problem shape); report them as
    // a stream error so the UI shows them the same way.
    const details = parsed?.error_details ?? {};
    const apiError = errorFrom(response.status, parsed);
    onEvent({
      type: 'error',
      code: parsed?.code ?? apiError.code,
      message: parsed?.message ?? apiError.message,
      title: details.title,
      location: details.location,
    });
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (line) onEvent(JSON.parse(line) as StreamEvent);
      newline = buffered.indexOf('\n');
    }
  }
  if (buffered.trim()) onEvent(JSON.parse(buffered) as StreamEvent);
}

// The public HTTP API, with the bearer token of a password login (kept in
// sessionStorage: it goes when the tab does). Errors are RFC 9457 problem JSON.

const TOKEN_KEY = "autorag.session";
let onUnauthorized = () => {};

export class ApiError extends Error {
  constructor(status, problem = {}) {
    super(problem.detail || problem.message || problem.title || `HTTP ${status}`);
    this.status = status;
    this.code = problem.code || "http_error";
    this.problem = problem;
  }
}

export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

export function session() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(TOKEN_KEY) || "null");
    if (saved && saved.token && (!saved.expiresAt || saved.expiresAt > Date.now())) return saved;
  } catch { /* a damaged entry is no session */ }
  return null;
}

/** A session that was there and has run out (not one that never was). */
export function sessionExpired() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(TOKEN_KEY) || "null");
    return Boolean(saved && saved.expiresAt && saved.expiresAt <= Date.now());
  } catch { return false; }
}

export function saveSession(token, expiresIn, username) {
  const expiresAt = expiresIn ? Date.now() + expiresIn * 1000 : null;
  sessionStorage.setItem(TOKEN_KEY, JSON.stringify({ token, expiresAt, username }));
}

export function clearSession() { sessionStorage.removeItem(TOKEN_KEY); }

function headers(extra = {}) {
  const out = { Accept: "application/json", ...extra };
  const current = session();
  if (current) out.Authorization = `Bearer ${current.token}`;
  return out;
}

async function problemOf(response) {
  let body = {};
  try {
    body = await response.json();
  } catch { /* not JSON */ }
  if (response.status === 422 && Array.isArray(body.errors) && body.errors.length) {
    const first = body.errors[0];
    const where = (first.loc || []).filter((p) => p !== "body").join(".");
    body.detail = `${where ? `${where}: ` : ""}${first.msg}`;
  }
  return new ApiError(response.status, body);
}

/** JSON in, JSON out. ``auth: false`` for the public routes (login, setup). */
export async function api(path, { method = "GET", body, signal, auth = true, query } = {}) {
  let url = path;
  if (query) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
    }
    const qs = params.toString();
    if (qs) url += `?${qs}`;
  }
  const init = { method, signal, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  let response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, { detail: "The server cannot be reached. Is `autorag serve` running?", code: "network" });
  }
  if (response.status === 401 && auth) {
    const error = await problemOf(response);
    onUnauthorized(error);
    throw error;
  }
  if (!response.ok) throw await problemOf(response);
  if (response.status === 204) return null;
  const type = response.headers.get("content-type") || "";
  return type.includes("json") ? response.json() : response.text();
}

export const ws = (workspace) => `/api/workspaces/${encodeURIComponent(workspace)}`;

/** POST a chat turn and read its server-sent events: onEvent(type, data) for each. */
export async function streamEvents(path, body, { signal, onEvent }) {
  let response;
  try {
    response = await fetch(path, {
      method: "POST",
      signal,
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify(body),
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, { detail: "The server cannot be reached.", code: "network" });
  }
  if (response.status === 401) {
    const error = await problemOf(response);
    onUnauthorized(error);
    throw error;
  }
  if (!response.ok) throw await problemOf(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const dispatch = (block) => {
    let type = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const name = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (name === "event") type = value;
      else if (name === "data") data.push(value);
    }
    if (!data.length) return;
    const text = data.join("\n");
    let parsed = text;
    try { parsed = JSON.parse(text); } catch { /* plain text data */ }
    onEvent(type, parsed);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) !== -1) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      dispatch(block);
    }
  }
  if (buffer.trim()) dispatch(buffer);
}

/** Upload one file (multipart, field "file") with progress: XMLHttpRequest reports
 * upload progress, fetch does not. Resolves {status, body}. */
export function uploadFile(path, file, { onProgress, signal } = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", path);
    const current = session();
    if (current) xhr.setRequestHeader("Authorization", `Bearer ${current.token}`);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.responseType = "json";
    xhr.upload.onprogress = (e) => { if (e.lengthComputable && onProgress) onProgress(e.loaded / e.total); };
    xhr.onload = () => {
      const body = xhr.response || {};
      if (xhr.status === 401) {
        const error = new ApiError(401, body);
        onUnauthorized(error);
        reject(error);
      } else if (xhr.status >= 200 && xhr.status < 300) resolve({ status: xhr.status, body });
      else reject(new ApiError(xhr.status, body));
    };
    xhr.onerror = () => reject(new ApiError(0, { detail: "The upload failed: the connection was lost.", code: "network" }));
    xhr.onabort = () => reject(new DOMException("Upload cancelled", "AbortError"));
    if (signal) signal.addEventListener("abort", () => xhr.abort(), { once: true });
    const form = new FormData();
    form.append("file", file, file.name);
    xhr.send(form);
  });
}

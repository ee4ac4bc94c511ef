// Backups over the HTTP API: the backups made, one made now, downloaded, checked or put
// back (restore), the scheduled jobs, and the restore's progress while the server is busy.
// Routes: /api/backups[/trigger|/jobs[/{name}]|/restore/status|/{id}[/download|verify|restore]].

import { api, ApiError, session } from "./api.js";

const BASE = "/api/backups";
export const POLL_MS = 1500;

export const listBackups = async () => (await api(BASE)).runs || [];
export const getBackup = (id) => api(`${BASE}/${encodeURIComponent(id)}`);

/** ``options``: {destination?, includeVectors?}. Answers the backup as it starts. */
export function backUpNow(options = {}) {
  const body = {};
  if (options.destination) body.destination = options.destination;
  if (options.includeVectors === false) body.includeVectors = false;
  return api(`${BASE}/trigger`, { method: "POST", body });
}

export const verifyBackup = (id) => api(`${BASE}/${encodeURIComponent(id)}/verify`, { method: "POST", body: {} });
export const restoreBackup = (id) => api(`${BASE}/${encodeURIComponent(id)}/restore`, { method: "POST", body: { confirm: true } });
export const restoreStatus = () => api(`${BASE}/restore/status`);

/** Save the backup's (encrypted) file: fetched with the session's token, then handed to
 * the browser as a download under the server's name for it. */
export async function downloadBackup(id) {
  const current = session();
  const response = await fetch(`${BASE}/${encodeURIComponent(id)}/download`, {
    headers: current ? { Authorization: `Bearer ${current.token}` } : {},
  });
  if (!response.ok) {
    let problem = {};
    try { problem = await response.json(); } catch { /* not JSON */ }
    throw new ApiError(response.status, problem);
  }
  const disposition = response.headers.get("content-disposition") || "";
  const named = /filename="?([^";]+)"?/.exec(disposition);
  const blob = await response.blob();
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = named ? named[1] : `backup-${id}.autorag-backup`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export const listJobs = async () => (await api(`${BASE}/jobs`)).jobs || [];
export const addJob = (job) => api(`${BASE}/jobs`, { method: "POST", body: job });
export const updateJob = (name, changes) => api(`${BASE}/jobs/${encodeURIComponent(name)}`, { method: "PATCH", body: changes });
export const removeJob = (name) => api(`${BASE}/jobs/${encodeURIComponent(name)}`, { method: "DELETE" });

export const rekey = () => api(`${BASE}/rekey`, { method: "POST", body: {} });

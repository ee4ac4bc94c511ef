// Synthesis over the HTTP API: start a run on an archive, follow it, read its proposed
// changes, approve or reject them (all, or chosen items), cancel and resume.
// Routes: /api/workspaces/{ws}/archives/{archive}/synthesis[/{run}[/items|approve|…]].

import { api } from "./api.js";
import { archiveUrl, listOf } from "./wiki_api.js";

export const runsUrl = (archive) => `${archiveUrl(archive)}/synthesis`;
export const runUrl = (archive, runId) => `${runsUrl(archive)}/${encodeURIComponent(runId)}`;

// Runs still working: their page asks again every POLL_MS.
export const ACTIVE = ["queued", "running"];
// Runs whose items may still be approved or rejected.
export const DECIDABLE = ["ready", "partially_applied"];
export const POLL_MS = 1500;

/** The archive's runs, newest first. */
export async function listRuns(archive) {
  return listOf(await api(runsUrl(archive)), "runs");
}

/** ``selection``: {documentIds?, since?, docType?, force?}; ``model``: "provider/model"
 *  or empty for the workspace's default. Answers the queued run. */
export function startRun(archive, selection, model) {
  return api(runsUrl(archive), { method: "POST", body: { ...selection, ...(model ? { model } : {}) } });
}

export const getRun = (archive, runId) => api(runUrl(archive, runId));

/** The proposed change set with its run: {run, items}. */
export async function loadItems(archive, runId) {
  const answer = await api(`${runUrl(archive, runId)}/items`);
  return { run: answer.run || null, items: listOf(answer, "items") };
}

/** ``items``: item ids, or null for every pending item. Answers the Decision. */
export function approve(archive, runId, items = null, { overwrite = false } = {}) {
  const body = {};
  if (items) body.items = items;
  if (overwrite) body.overwrite = true;
  return api(`${runUrl(archive, runId)}/approve`, { method: "POST", body });
}

export function reject(archive, runId, items = null) {
  return api(`${runUrl(archive, runId)}/reject`, { method: "POST", body: items ? { items } : {} });
}

export const cancelRun = (archive, runId) => api(`${runUrl(archive, runId)}/cancel`, { method: "POST", body: {} });
export const resumeRun = (archive, runId) => api(`${runUrl(archive, runId)}/resume`, { method: "POST", body: {} });

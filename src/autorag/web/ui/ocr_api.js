// OCR over the HTTP API, for one workspace: its OCR settings (engine or off, languages,
// vision model), the vision prompt's instructions, and the jobs with their review.
// Routes: /api/workspaces/{ws}/ocr/{settings|instructions|jobs[/{id}[/approve|/reject]]}.

import { api, ws } from "./api.js";

const base = (workspace) => `${ws(workspace)}/ocr`;

/** {engine, languages, visionModel, effective, server, engines, installedLanguages} */
export const getOcrSettings = (workspace) => api(`${base(workspace)}/settings`);
/** ``changes``: any of {engine, languages, visionModel}; null: the server's setting. */
export const saveOcrSettings = (workspace, changes) => api(`${base(workspace)}/settings`, { method: "PATCH", body: changes });
export const getInstructions = async (workspace) => (await api(`${base(workspace)}/instructions`)).instructions;
export const saveInstructions = async (workspace, instructions) => (await api(`${base(workspace)}/instructions`, { method: "PUT", body: { instructions } })).instructions;
/** {items, total}; ``status``: one status, or "" for all. */
export const listJobs = (workspace, { status = "", limit = 50 } = {}) => api(`${base(workspace)}/jobs`, { query: { status: status || undefined, limit } });
/** A job with its pages (each with its text). */
export const getJob = (workspace, id) => api(`${base(workspace)}/jobs/${id}`);
export const approveJob = (workspace, id) => api(`${base(workspace)}/jobs/${id}/approve`, { method: "POST", body: {} });
export const rejectJob = (workspace, id) => api(`${base(workspace)}/jobs/${id}/reject`, { method: "POST", body: {} });

// Words for people: what each skill is called and does, instead of the name and the
// description written for the model; the built-in model; moments in the viewer's time.

import { fmtDate } from "./dom.js";

const SKILLS = {
  rag_search: {
    label: "Search your documents",
    about: "Finds the passages in this workspace's documents that answer the question, so the answer can cite them.",
  },
  document_temp_process: {
    label: "Read chat attachments",
    about: "Looks through the files attached to this chat (they are not added to the workspace).",
  },
  workspace_memory: {
    label: "Workspace memory",
    about: "Keeps short notes for this workspace from one chat to the next: facts, preferences, decisions.",
  },
  wiki_query: {
    label: "Read the wiki",
    about: "Finds the wiki pages that answer the question and follows their links, so the answer can cite them.",
  },
  wiki_write: {
    label: "Propose wiki edits",
    about: "Drafts a new wiki page or a change to one; you see the changes and apply them (unless the archive lets it save directly).",
  },
  peer_search: {
    label: "Ask trusted peers",
    about: "Also searches other AutoRAG instances you trust, within what their sharing rules allow.",
  },
};

function humanize(name) {
  const words = String(name || "").replace(/[_-]+/g, " ").trim();
  return words ? words[0].toUpperCase() + words.slice(1) : "A skill";
}

// { label, about } for a skill name (what it does while it runs, the server says);
// unknown skills get a readable label and the description the server gave, if any.
export function skillWords(name, description = "") {
  return SKILLS[name] || { label: humanize(name), about: description };
}

const ISO_MOMENT = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

// A value shown as a fact: timestamps in the viewer's time (never raw ISO with
// microseconds), lists joined, anything else as text.
export function factValue(value) {
  if (Array.isArray(value)) return value.join(", ");
  if (value && typeof value === "object") return JSON.stringify(value);
  const text = String(value);
  return ISO_MOMENT.test(text) ? fmtDate(text) : text;
}

// A document's file as people know it: an upload by its original name, never the
// internal /uploads/<workspace>/<hash>/ path (as the API's `name` fields say).
export function shownName(sourceId) {
  const id = String(sourceId || "");
  return id.startsWith("/uploads/") ? id.slice(id.lastIndexOf("/") + 1) || id : id;
}

// A model as people know it: the built-in extractive answerer is no model at all.
export function modelWords(id) {
  if (!id || id === "extractive" || id === "extractive/extractive") return "built-in extractive";
  return id;
}

// -- synthesis: the change set a run proposes, in words for people --------------------------
const ACTIONS = {
  create: { label: "New page", kind: "info" },
  update: { label: "Update", kind: "ok" },
  contradiction: { label: "Contradiction", kind: "warn" },
  skip: { label: "Skipped", kind: "" },
  overview: { label: "Overview", kind: "info" },
};

/** { label, kind } of a proposed item's action (kind: the badge's colour). */
export function actionWords(action) {
  return ACTIONS[action] || { label: humanize(action), kind: "" };
}

const PASSES = {
  entity_extraction: "Finding topics and claims",
  summary_generation: "Summarising each document",
  candidate_search: "Looking for related pages",
  llm_decision: "Deciding what to change",
  write_overview: "Writing the overview",
};

/** A synthesis step as people know it. */
export function passWords(name) {
  return PASSES[name] || humanize(name);
}

const RUN_STATUSES = {
  queued: { label: "Waiting to start", kind: "pulse" },
  running: { label: "Running", kind: "info pulse" },
  paused: { label: "Paused", kind: "warn" },
  ready: { label: "Waiting for review", kind: "info" },
  applied: { label: "Applied", kind: "ok" },
  partially_applied: { label: "Partly applied", kind: "ok" },
  rejected: { label: "Rejected", kind: "" },
  cancelled: { label: "Cancelled", kind: "" },
  failed: { label: "Failed", kind: "danger" },
};

/** { label, kind } of a synthesis run's status. */
export function runStatusWords(status) {
  return RUN_STATUSES[status] || { label: humanize(status), kind: "" };
}

const ITEM_STATUSES = {
  pending: { label: "Waiting for review", kind: "" },
  applied: { label: "Applied", kind: "ok" },
  rejected: { label: "Rejected", kind: "" },
  conflict: { label: "Conflict", kind: "danger" },
};

/** { label, kind } of a proposed item's outcome. */
export function itemStatusWords(status) {
  return ITEM_STATUSES[status] || { label: humanize(status), kind: "" };
}

export const EXTRACTIVE_RUN = "Written without a model (extractive)";

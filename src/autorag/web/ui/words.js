// Words for people: what each skill is called and does, instead of the name and the
// description written for the model; plurals; when-things-happened in the viewer's time.

const SKILLS = {
  rag_search: {
    label: "Search your documents",
    doing: "Searching your documents…",
    about: "Finds the passages in this workspace's documents that answer the question, so the answer can cite them.",
  },
  document_temp_process: {
    label: "Read chat attachments",
    doing: "Reading the attached files…",
    about: "Looks through the files attached to this chat (they are not added to the workspace).",
  },
  workspace_memory: {
    label: "Workspace memory",
    doing: "Checking the workspace's notes…",
    about: "Keeps short notes for this workspace from one chat to the next: facts, preferences, decisions.",
  },
  peer_search: {
    label: "Ask trusted peers",
    doing: "Searching your documents and trusted peers…",
    about: "Also searches other AutoRAG instances you trust, within what their sharing rules allow.",
  },
};

function humanize(name) {
  const words = String(name || "").replace(/[_-]+/g, " ").trim();
  return words ? words[0].toUpperCase() + words.slice(1) : "A skill";
}

// { label, doing, about } for a skill name; unknown skills get a readable label and the
// description the server gave, if any.
export function skillWords(name, description = "") {
  return SKILLS[name] || { label: humanize(name), doing: "Working…", about: description };
}

// "1 file", "3 files"; `many` when the plural is not just an added "s".
export function plural(count, one, many = `${one}s`) {
  return `${Number(count).toLocaleString()} ${count === 1 ? one : many}`;
}

// A moment in the viewer's own time zone, to the minute: "3 Dec 2026, 17:05".
export function localMinute(value) {
  if (!value) return "—";
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return "—";
  return date.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

// A document's date (no time of day): "1 Mar 2025".
export function localDay(value) {
  if (!value) return "—";
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return "—";
  return date.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}

// A model as people know it: the built-in extractive answerer is no model at all.
export function modelWords(id) {
  if (!id || id === "extractive" || id === "extractive/extractive") return "built-in extractive";
  return id;
}

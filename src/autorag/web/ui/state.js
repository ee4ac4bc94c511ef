// Shared state of the signed-in app, and what a page may ask of the shell. Pages import
// this module, never main.js: main.js loads the pages, so it connects its shell here
// (connectShell) instead of being imported back.

import { api } from "./api.js";

/** Shared state of the signed-in app. */
export const app = {
  me: null,
  workspaces: [],
  workspace: null,
  models: null,
  listeners: new Map(),
  can(permission) { return Boolean(this.me && this.me.permissions.includes(permission)); },
  on(event, fn) {
    if (!this.listeners.has(event)) this.listeners.set(event, new Set());
    this.listeners.get(event).add(fn);
    return () => this.listeners.get(event).delete(fn);
  },
  emit(event, value) { for (const fn of this.listeners.get(event) || []) fn(value); },
};

// What only the shell (main.js) can do; connected once it starts.
const shell = {
  route: () => {},
  markNav: () => {},
  paintTitle: () => {},
  paintWorkspaces: () => {},
  setWorkspace: () => {},
  signOut: () => {},
};
export function connectShell(parts) { Object.assign(shell, parts); }

// -- routing ----------------------------------------------------------------------------------
export function currentRoute() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, qs = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean).map((p) => { try { return decodeURIComponent(p); } catch { return p; } });
  return { page: parts[0] || "", rest: parts.slice(1), query: new URLSearchParams(qs) };
}

export function navigate(hash, { replace = false } = {}) {
  const target = hash.startsWith("#") ? hash : `#${hash}`;
  if (replace) {
    history.replaceState(null, "", target);
    shell.route();
  } else if (location.hash === target) shell.route();
  else location.hash = target;
}

/** Change the address without rendering again (the page already shows it). */
export function setHashQuietly(hash) {
  history.replaceState(null, "", hash.startsWith("#") ? hash : `#${hash}`);
  shell.markNav();
}

export function setTitle(title) {
  document.title = `${title}${app.workspace ? ` · ${app.workspace}` : ""} · AutoRAG`;
  shell.paintTitle();
}

export async function refreshModels(refresh = false) {
  if (!app.can("chat:use")) return null;
  app.models = await api("/api/models", { query: refresh ? { refresh: "true" } : undefined });
  app.emit("models", app.models);
  return app.models;
}

export async function reloadWorkspaces(select) {
  const listed = await api("/api/workspaces");
  app.workspaces = listed.workspaces.map((w) => w.name);
  if (select) shell.setWorkspace(select);
  else shell.paintWorkspaces();
}

export function signOut(reason) { shell.signOut(reason); }

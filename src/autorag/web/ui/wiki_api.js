// The wiki's addresses: the API's (pages by path, their parts after "/-/") and the UI's
// own (#/wiki/<archive>/<page path>?view=…), and small helpers the wiki's modules share.

import { api, ws } from "./api.js";
import { app } from "./state.js";

const encPath = (path) => String(path).split("/").map(encodeURIComponent).join("/");

export const archivesUrl = () => `${ws(app.workspace)}/archives`;
export const archiveUrl = (archive) => `${archivesUrl()}/${encodeURIComponent(archive)}`;
export const pageUrl = (archive, path) => `${archiveUrl(archive)}/pages/${encPath(path)}`;
export const pagePart = (archive, path, part) => `${pageUrl(archive, path)}/-/${part}`;
export const templatesUrl = () => `${ws(app.workspace)}/archive-templates`;

/** The UI's address of an archive (no path), a page, or one of their views. */
export function wikiHash(archive, path = null, query = null) {
  let hash = "#/wiki";
  if (archive) hash += `/${encodeURIComponent(archive)}`;
  if (path) hash += `/${encPath(path)}`;
  const qs = query ? new URLSearchParams(Object.entries(query).filter(([, v]) => v !== null && v !== undefined && v !== "")).toString() : "";
  return qs ? `${hash}?${qs}` : hash;
}

/** A list from a listing response, bare or wrapped ({pages: […]}). */
export function listOf(response, key) {
  if (Array.isArray(response)) return response;
  if (response && Array.isArray(response[key])) return response[key];
  if (response && Array.isArray(response.items)) return response.items;
  return [];
}

/** Text from a response that is text, or JSON holding it under one of ``keys``. */
export function textOf(response, ...keys) {
  if (typeof response === "string") return response;
  for (const key of keys) if (response && typeof response[key] === "string") return response[key];
  return "";
}

/** Whether the signed-in person may write this archive's pages (the server decides;
 *  this only hides what it would refuse). */
export function mayWrite(archive) {
  if (app.can("archive:write")) return true;
  const writers = (archive && archive.config && archive.config.writers) || [];
  return Boolean(app.me && app.can("archive:read") && writers.includes(app.me.username));
}

export async function savePage(archive, path, { title, body, baseVersion, template }) {
  return api(pageUrl(archive, path), {
    method: "PUT",
    body: { title, body, baseVersion: baseVersion ?? null, ...(template ? { template } : {}) },
  });
}

// Front matter back into the text the editor shows (a page's body comes without it):
// one "key: value" line each, a value as JSON (which YAML reads as the same value)
// unless it is a plain word or phrase.
const PLAIN = /^[A-Za-z][\w .,'/()-]*$/;
const YAML_WORDS = /^(true|false|yes|no|on|off|null|~)$/i;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/; // YAML's own dates stay dates
export function frontMatterText(frontMatter) {
  const entries = Object.entries(frontMatter || {});
  if (!entries.length) return "";
  const lines = entries.map(([key, value]) => {
    const name = /^[\w-]+$/.test(key) ? key : JSON.stringify(key);
    const plain = typeof value === "string" && ((PLAIN.test(value) && !YAML_WORDS.test(value) && !value.endsWith(" ")) || ISO_DATE.test(value));
    const shown = plain ? value : JSON.stringify(value);
    return `${name}: ${shown}`;
  });
  return `---\n${lines.join("\n")}\n---\n`;
}

/** The whole Markdown of a page as its author wrote it (front matter included). */
export function sourceOf(page) {
  if (typeof page.markdown === "string") return page.markdown;
  return frontMatterText(page.frontMatter) + (page.body || "");
}

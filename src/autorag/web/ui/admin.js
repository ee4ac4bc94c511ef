// Admin: users and roles (with workspace memberships), API keys, and DLP patterns with a
// live test preview, the match history and the audited reveal.

import { api } from "./api.js";
import {
  clear, confirmDialog, copyText, debounce, emptyState, errorNotice, field, fmtDate, h, icon, inlineField, loading, modal,
  setFieldError, timeEl, toast,
} from "./dom.js";
import { app, setHashQuietly } from "./state.js";

const ROLES = [["member", "Member: reads, searches and chats in their workspaces"], ["manager", "Manager: also changes workspace settings and policy"], ["admin", "Admin: everything, in every workspace"]];

function tabsFor() {
  const tabs = [];
  if (app.can("users:admin")) tabs.push(["users", "Users", "users"]);
  if (app.can("keys:write")) tabs.push(["keys", "API keys", "key"]);
  if (app.can("dlp:admin")) tabs.push(["dlp", "DLP", "shield"]);
  return tabs;
}

export async function render(container, { rest }) {
  const tabs = tabsFor();
  let active = tabs.some(([k]) => k === rest[0]) ? rest[0] : tabs[0][0];
  const tablist = h("div", { class: "tabs", role: "tablist", "aria-label": "Admin sections" });
  const panel = h("div", { role: "tabpanel", tabindex: "-1", class: "stack" });
  const heading = h("h1", {}, tabs.length === 1 && tabs[0][0] === "keys" ? "API keys" : "Admin");
  container.append(h("div", { class: "page" }, h("div", { class: "page-inner" },
    h("div", { class: "page-head" }, heading, h("p", { class: "sub" }, "Installation-wide: these apply to every workspace.")),
    tabs.length > 1 ? tablist : null, panel)));
  let cleanup = null;

  const buttons = tabs.map(([key, label, iconName]) => {
    const button = h("button", { role: "tab", type: "button", id: `tab-${key}`, "aria-controls": "admin-panel", dataset: { tab: key } }, icon(iconName, "sm"), " ", label);
    button.addEventListener("click", () => select(key, true));
    button.addEventListener("keydown", (e) => {
      const i = tabs.findIndex(([k]) => k === key);
      let j = null;
      if (e.key === "ArrowRight") j = (i + 1) % tabs.length;
      if (e.key === "ArrowLeft") j = (i + tabs.length - 1) % tabs.length;
      if (e.key === "Home") j = 0;
      if (e.key === "End") j = tabs.length - 1;
      if (j !== null) { e.preventDefault(); select(tabs[j][0], true); buttons[j].focus(); }
    });
    return button;
  });
  tablist.append(...buttons);
  panel.id = "admin-panel";

  async function select(key, fromUser = false) {
    active = key;
    for (const b of buttons) {
      const on = b.dataset.tab === key;
      b.setAttribute("aria-selected", String(on));
      b.tabIndex = on ? 0 : -1;
    }
    panel.setAttribute("aria-labelledby", `tab-${key}`);
    if (fromUser) setHashQuietly(`#/admin/${key}`);
    if (cleanup) { cleanup(); cleanup = null; }
    clear(panel, loading());
    const pages = { users: usersTab, keys: keysTab, dlp: dlpTab };
    cleanup = await pages[key](panel);
  }
  await select(active);
  return {
    title: "Admin",
    update: ({ rest: next }) => { if (next[0] && next[0] !== active && tabs.some(([k]) => k === next[0])) select(next[0]); },
    cleanup: () => { if (cleanup) cleanup(); },
  };
}

// -- users ----------------------------------------------------------------------------------
async function usersTab(panel) {
  let users;
  try {
    users = await api("/api/users");
  } catch (error) {
    clear(panel, errorNotice(error, () => usersTab(panel)));
    return null;
  }
  const username = h("input", { class: "input", autocomplete: "off", autocapitalize: "none", spellcheck: "false", pattern: "[a-z0-9_.\\-]{2,64}" });
  const password = h("input", { class: "input", type: "password", autocomplete: "new-password", minLength: 10 });
  const role = h("select", { class: "input" }, ROLES.map(([r, label]) => h("option", { value: r, title: label }, r)));
  const wsSelect = h("select", { class: "input" }, h("option", { value: "" }, "No workspace yet"), app.workspaces.map((w) => h("option", { value: w, selected: w === app.workspace }, w)));
  const add = h("button", { class: "btn primary", type: "submit" }, icon("plus", "sm"), "Add user");
  const form = h("form", { class: "card", "aria-labelledby": "new-user" },
    h("header", {}, h("h2", { id: "new-user" }, "Add a user"), h("p", {}, "Members and managers act only in the workspaces they belong to; admins act in all of them.")),
    h("div", { class: "grid-form" }, field("Username", username), field("Password", password, { hint: "At least 10 characters." }), field("Role", role), field("Workspace", wsSelect)),
    h("div", { class: "save-bar" }, add));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    setFieldError(username, /^[a-z0-9_.-]{2,64}$/.test(username.value) ? "" : "2–64 lowercase letters, digits, '.', '_' or '-'.");
    setFieldError(password, password.value.length >= 10 ? "" : "At least 10 characters.");
    if (username.getAttribute("aria-invalid")) return username.focus();
    if (password.getAttribute("aria-invalid")) return password.focus();
    try {
      await api("/api/users", { method: "POST", body: { username: username.value, password: password.value, role: role.value } });
      if (wsSelect.value && role.value !== "admin") await api(`/api/users/${encodeURIComponent(username.value)}/workspaces/${encodeURIComponent(wsSelect.value)}`, { method: "PUT" });
      toast(`User ${username.value} added.`);
      usersTab(panel);
    } catch (error) {
      setFieldError(/password/i.test(error.message) ? password : username, error.message);
    }
    return undefined;
  });

  const table = h("div", { class: "table-wrap responsive" }, h("table", { class: "data", "aria-label": "Users" },
    h("thead", {}, h("tr", {}, ["User", "Role", "Workspaces", "Status", "Created", ""].map((t) => h("th", { scope: "col" }, t || h("span", { class: "sr-only" }, "Actions"))))),
    h("tbody", {}, users.map((user) => userRow(user, () => usersTab(panel))))));
  clear(panel, form, h("section", { class: "stack", "aria-label": "Users" }, h("h2", {}, `Users (${users.length})`), table));
  return null;
}

function userRow(user, reload) {
  const self = user.username === app.me.username;
  const role = h("select", { class: "input", "aria-label": `Role of ${user.username}` }, ROLES.map(([r]) => h("option", { value: r, selected: r === user.role }, r)));
  role.addEventListener("change", async () => {
    try {
      await api(`/api/users/${encodeURIComponent(user.username)}`, { method: "PATCH", body: { role: role.value } });
      toast(`${user.username} is now ${role.value}.`);
      reload();
    } catch (error) { role.value = user.role; toast(error.message, { kind: "error" }); }
  });
  const disabled = h("input", { type: "checkbox", checked: !user.disabled, "aria-label": `${user.username} may sign in` });
  disabled.addEventListener("change", async () => {
    try {
      await api(`/api/users/${encodeURIComponent(user.username)}`, { method: "PATCH", body: { disabled: !disabled.checked } });
      toast(`${user.username} ${disabled.checked ? "enabled" : "disabled"}.`);
    } catch (error) { disabled.checked = !user.disabled; toast(error.message, { kind: "error" }); }
  });
  const memberships = h("div", { class: "row" },
    user.role === "admin" ? h("span", { class: "muted small" }, "all (admin)") : user.workspaces.map((w) => h("span", { class: "badge" }, w,
      h("button", { class: "btn ghost small icon-only", type: "button", "aria-label": `Remove ${user.username} from ${w}`, on: { click: async () => {
        try { await api(`/api/users/${encodeURIComponent(user.username)}/workspaces/${encodeURIComponent(w)}`, { method: "DELETE" }); reload(); } catch (error) { toast(error.message, { kind: "error" }); }
      } } }, icon("x", "sm")))),
    user.role === "admin" ? null : addMembership(user, reload));
  return h("tr", { dataset: { user: user.username } },
    h("td", { class: "primary-cell" }, h("div", { class: "cell-title" }, h("strong", {}, user.username), self ? h("small", {}, "you") : null)),
    h("td", { "data-label": "Role" }, role),
    h("td", { "data-label": "Workspaces" }, memberships),
    h("td", { "data-label": "Sign-in" }, h("label", { class: "switch" }, disabled, h("span", { class: "small" }, user.disabled ? "disabled" : "enabled"))),
    h("td", { "data-label": "Created" }, timeEl(user.createdAt)),
    h("td", { class: "actions" }, self ? null : h("button", { class: "btn ghost small icon-only", type: "button", "aria-label": `Delete user ${user.username}`, on: { click: async () => {
      if (!(await confirmDialog({ title: `Delete ${user.username}?`, message: "Their API keys stop working. Chats they had are kept without an owner.", confirm: "Delete", danger: true }))) return;
      try { await api(`/api/users/${encodeURIComponent(user.username)}`, { method: "DELETE" }); toast(`${user.username} deleted.`); reload(); } catch (error) { toast(error.message, { kind: "error" }); }
    } } }, icon("trash", "sm"))));
}

function addMembership(user, reload) {
  const missing = app.workspaces.filter((w) => !user.workspaces.includes(w));
  if (!missing.length) return null;
  const select = h("select", { class: "input", "aria-label": `Add ${user.username} to a workspace` }, h("option", { value: "" }, "+ workspace"), missing.map((w) => h("option", { value: w }, w)));
  select.addEventListener("change", async () => {
    if (!select.value) return;
    try { await api(`/api/users/${encodeURIComponent(user.username)}/workspaces/${encodeURIComponent(select.value)}`, { method: "PUT" }); reload(); } catch (error) { toast(error.message, { kind: "error" }); }
  });
  return select;
}

// -- API keys ---------------------------------------------------------------------------------
async function keysTab(panel) {
  let keys;
  try {
    keys = await api("/api/keys");
  } catch (error) {
    clear(panel, errorNotice(error, () => keysTab(panel)));
    return null;
  }
  const name = h("input", { class: "input", maxLength: 100, placeholder: "e.g. nightly-import" });
  const scope = h("select", { class: "input", multiple: true, size: Math.min(4, Math.max(2, app.workspaces.length)) }, app.workspaces.map((w) => h("option", { value: w }, w)));
  const create = h("button", { class: "btn primary", type: "submit" }, icon("key", "sm"), "Create key");
  const form = h("form", { class: "card", "aria-labelledby": "new-key" },
    h("header", {}, h("h2", { id: "new-key" }, "Create an API key"), h("p", {}, "For scripts and the OpenAI-compatible API. The key is shown once; it is stored hashed.")),
    h("div", { class: "grid-form" }, field("Name", name), field("Limit to workspaces", scope, { hint: "None selected: every workspace you may act in." })),
    h("div", { class: "save-bar" }, create));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!name.value.trim()) { setFieldError(name, "Give the key a name."); name.focus(); return; }
    setFieldError(name, "");
    try {
      const made = await api("/api/keys", { method: "POST", body: { name: name.value.trim(), workspaces: [...scope.selectedOptions].map((o) => o.value) } });
      showKey(made);
      keysTab(panel);
    } catch (error) { setFieldError(name, error.message); }
  });
  const rows = keys.map((key) => h("tr", { dataset: { prefix: key.prefix } },
    h("td", { class: "primary-cell" }, h("div", { class: "cell-title" }, h("strong", {}, key.name), h("small", { class: "mono" }, `${key.prefix}…`))),
    h("td", { "data-label": "User" }, key.username),
    h("td", { "data-label": "Workspaces" }, key.workspaces.length ? key.workspaces.join(", ") : h("span", { class: "muted" }, "all of theirs")),
    h("td", { "data-label": "Last used" }, key.lastUsedAt ? timeEl(key.lastUsedAt) : h("span", { class: "muted" }, "never")),
    h("td", { "data-label": "Status" }, key.revokedAt ? h("span", { class: "badge danger" }, `revoked ${fmtDate(key.revokedAt)}`) : h("span", { class: "badge ok" }, "active")),
    h("td", { class: "actions" }, key.revokedAt ? null : h("button", { class: "btn danger small", type: "button", on: { click: async () => {
      if (!(await confirmDialog({ title: `Revoke “${key.name}”?`, message: "Scripts using it stop working at once. This cannot be undone.", confirm: "Revoke", danger: true }))) return;
      try { await api(`/api/keys/${encodeURIComponent(key.prefix)}`, { method: "DELETE" }); toast("Key revoked."); keysTab(panel); } catch (error) { toast(error.message, { kind: "error" }); }
    } } }, "Revoke"))));
  clear(panel, form, h("section", { class: "stack", "aria-label": "API keys" }, h("h2", {}, `Keys (${keys.length})`),
    keys.length ? h("div", { class: "table-wrap responsive" }, h("table", { class: "data", "aria-label": "API keys" },
      h("thead", {}, h("tr", {}, ["Name", "User", "Workspaces", "Last used", "Status", ""].map((t) => h("th", { scope: "col" }, t || h("span", { class: "sr-only" }, "Actions"))))),
      h("tbody", {}, rows))) : emptyState({ iconName: "key", title: "No API keys", body: "Create one for a script, a notebook or an OpenAI-compatible client." })));
  return null;
}

function showKey(made) {
  const value = h("input", { class: "input", readOnly: true, value: made.key, "aria-label": "New API key" });
  const copy = h("button", { class: "btn", type: "button", on: { click: async () => { await copyText(made.key); toast("Key copied."); } } }, icon("copy", "sm"), "Copy");
  const done = h("button", { class: "btn primary", type: "button", on: { click: () => dlg.close() } }, "Done");
  const dlg = modal({ title: `Key “${made.name}” created`, body: [
    h("div", { class: "notice warn" }, icon("alert"), h("div", { class: "notice-body" }, "Copy it now: it is shown once and cannot be read again.")),
    h("div", { class: "secret-box" }, value, copy),
    h("p", { class: "hint" }, "Use it as ", h("code", {}, "Authorization: Bearer …"), ", or as the api_key of an OpenAI client with base_url ", h("code", {}, `${location.origin}/v1`), "."),
  ], foot: [done] });
  value.select();
}

// -- DLP ------------------------------------------------------------------------------------------
async function dlpTab(panel) {
  let patterns;
  try {
    patterns = await api("/api/dlp/patterns");
  } catch (error) {
    clear(panel, errorNotice(error, () => dlpTab(panel)));
    return null;
  }
  const reload = () => dlpTab(panel);

  // new pattern with a live preview
  const name = h("input", { class: "input", maxLength: 40, placeholder: "e.g. ticket", autocapitalize: "none", spellcheck: "false" });
  const regex = h("input", { class: "input mono", placeholder: "e.g. TCK-[0-9]{6}", spellcheck: "false", autocomplete: "off" });
  const description = h("input", { class: "input", maxLength: 500, placeholder: "What it finds" });
  const sample = h("textarea", { class: "input", rows: 3, placeholder: "Paste sample text: the preview shows what would be redacted." });
  sample.value = "Ticket TCK-123456 was opened by jane.doe@example.com.";
  const preview = h("div", { class: "preview", "aria-live": "polite", "aria-label": "Preview" });
  const previewInfo = h("div", { class: "hint", "aria-live": "polite" });
  let asked = 0; // answers that come back out of order are dropped
  const runPreview = debounce(async () => {
    const mine = ++asked;
    const body = { text: sample.value };
    if (regex.value.trim()) { body.regex = regex.value; body.name = name.value.trim() || "test"; }
    try {
      const out = await api("/api/dlp/patterns/test", { method: "POST", body });
      if (mine !== asked) return;
      setFieldError(regex, "");
      paintPreview(preview, sample.value, out);
      previewInfo.textContent = regex.value.trim()
        ? `${out.matches.length} match${out.matches.length === 1 ? "" : "es"} for this pattern.`
        : `${out.matches.length} match${out.matches.length === 1 ? "" : "es"} for the enabled patterns (type a regex to try a new one).`;
    } catch (error) {
      if (error.status === 401 || mine !== asked) return;
      setFieldError(regex, error.message);
      preview.textContent = sample.value;
      previewInfo.textContent = "";
    }
  }, 250);
  for (const control of [regex, sample, name]) control.addEventListener("input", runPreview);
  const add = h("button", { class: "btn primary", type: "submit" }, icon("plus", "sm"), "Add pattern");
  const form = h("form", { class: "card", "aria-labelledby": "new-pattern" },
    h("header", {}, h("h2", { id: "new-pattern" }, "Add a pattern"), h("p", {}, "Patterns run on RE2 (linear time; no look-around or back-references). A group named “value” is redacted alone.")),
    h("div", { class: "grid-form" }, field("Name", name, { hint: "Lowercase letters, digits and '_'." }), field("Regex", regex), field("Description", description)),
    field("Sample text", sample),
    h("div", { class: "field" }, h("span", { class: "label" }, "Preview"), preview, previewInfo),
    h("div", { class: "save-bar" }, add));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    setFieldError(name, /^[a-z0-9_]{1,40}$/.test(name.value.trim()) ? "" : "Lowercase letters, digits and '_'.");
    setFieldError(regex, regex.value.trim() ? "" : "Enter a regex.");
    if (name.getAttribute("aria-invalid")) { name.focus(); return; }
    if (regex.getAttribute("aria-invalid")) { regex.focus(); return; }
    try {
      await api("/api/dlp/patterns", { method: "POST", body: { name: name.value.trim(), regex: regex.value, description: description.value } });
      toast(`Pattern ${name.value.trim()} added: it applies within seconds.`);
      reload();
    } catch (error) {
      setFieldError(/name|exists|already/i.test(error.message) ? name : regex, error.message);
    }
  });

  const table = h("div", { class: "table-wrap responsive" }, h("table", { class: "data", "aria-label": "DLP patterns" },
    h("thead", {}, h("tr", {}, ["Pattern", "Regex", "Enabled", ""].map((t) => h("th", { scope: "col" }, t || h("span", { class: "sr-only" }, "Actions"))))),
    h("tbody", {}, patterns.map((p) => {
      const toggle = h("input", { type: "checkbox", checked: p.enabled, "aria-label": `${p.name} enabled` });
      toggle.addEventListener("change", async () => {
        try { await api(`/api/dlp/patterns/${p.id}`, { method: "PATCH", body: { enabled: toggle.checked } }); toast(`${p.name} ${toggle.checked ? "enabled" : "disabled"}.`); runPreview(); } catch (error) { toggle.checked = p.enabled; toast(error.message, { kind: "error" }); }
      });
      return h("tr", { dataset: { pattern: p.name } },
        h("td", { class: "primary-cell" }, h("div", { class: "cell-title" }, h("strong", {}, p.name, " ", p.builtin ? h("span", { class: "badge" }, "built-in") : h("span", { class: "badge info" }, "custom")), h("small", {}, p.description || ""))),
        h("td", { "data-label": "Regex" }, h("code", { class: "pattern-regex" }, p.regex.length > 120 ? `${p.regex.slice(0, 119)}…` : p.regex)),
        h("td", { "data-label": "Enabled" }, h("label", { class: "switch" }, toggle)),
        h("td", { class: "actions" }, p.builtin ? null : h("button", { class: "btn ghost small icon-only", type: "button", "aria-label": `Delete pattern ${p.name}`, on: { click: async () => {
          if (!(await confirmDialog({ title: `Delete pattern ${p.name}?`, message: "Text it matched is no longer redacted.", confirm: "Delete", danger: true }))) return;
          try { await api(`/api/dlp/patterns/${p.id}`, { method: "DELETE" }); toast("Pattern deleted."); reload(); } catch (error) { toast(error.message, { kind: "error" }); }
        } } }, icon("trash", "sm"))));
    }))));

  const history = h("section", { class: "card", "aria-labelledby": "dlp-history" });
  const stopHistory = matchHistory(history, patterns);
  const reveal = revealCard();
  clear(panel, form, h("section", { class: "stack", "aria-labelledby": "patterns-title" }, h("h2", { id: "patterns-title" }, `Patterns (${patterns.length})`), table), history, reveal);
  runPreview();
  return stopHistory;
}

function paintPreview(el, text, out) {
  const frag = document.createDocumentFragment();
  let last = 0;
  for (const m of [...out.matches].sort((a, b) => a.start - b.start)) {
    if (m.start < last) continue;
    frag.append(text.slice(last, m.start));
    frag.append(h("mark", { title: m.type }, h("s", {}, text.slice(m.start, m.end))), " → ", h("span", { class: "redacted" }, "[REDACTED]"));
    last = m.end;
  }
  frag.append(text.slice(last));
  el.replaceChildren(frag);
  if (!out.matches.length) el.append(h("span", { class: "muted" }, "  (nothing would be redacted)"));
}

function matchHistory(card, patterns) {
  const type = h("select", { class: "input" }, h("option", { value: "" }, "Any pattern"), patterns.map((p) => h("option", { value: p.name }, p.name)));
  const event = h("select", { class: "input" }, h("option", { value: "" }, "Any event"), ["dlp.redacted", "dlp.bypassed", "dlp.revealed"].map((e) => h("option", { value: e }, e.replace("dlp.", ""))));
  const workspace = h("select", { class: "input" }, h("option", { value: "" }, "Any workspace"), app.workspaces.map((w) => h("option", { value: w }, w)));
  const from = h("input", { class: "input", type: "date" });
  const to = h("input", { class: "input", type: "date" });
  const body = h("div", { class: "stack" });
  let items = [];
  let next = null;
  const load = async (more = false) => {
    if (!more) { items = []; next = null; clear(body, loading("Loading the history…")); }
    try {
      const out = await api("/api/dlp/matches", { query: { type: type.value, event: event.value, workspace: workspace.value, from: from.value, to: to.value, limit: 50, beforeId: more ? next : undefined } });
      items = items.concat(out.items);
      next = out.nextBeforeId;
      paint();
    } catch (error) { clear(body, errorNotice(error, () => load())); }
  };
  const paint = () => {
    if (!items.length) { clear(body, emptyState({ iconName: "shield", title: "No matches", body: "Nothing was redacted with these filters. Redactions, bypasses and reveals appear here (never the secrets themselves)." })); return; }
    clear(body, h("div", { class: "table-wrap responsive" }, h("table", { class: "data", "aria-label": "DLP match history" },
      h("thead", {}, h("tr", {}, ["When", "Event", "Patterns", "Count", "User", "Workspace", "Where"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, items.map((i) => h("tr", {},
        h("td", { class: "primary-cell" }, timeEl(i.createdAt)),
        h("td", { "data-label": "Event" }, h("span", { class: ["badge", i.event === "dlp.redacted" ? "warn" : i.event === "dlp.revealed" ? "danger" : ""] }, i.event.replace("dlp.", ""))),
        h("td", { "data-label": "Patterns" }, h("div", { class: "row" }, i.types.map((t) => h("span", { class: "badge" }, t)))),
        h("td", { class: "num", "data-label": "Count" }, i.count ?? "—"),
        h("td", { "data-label": "User" }, i.username || "—"),
        h("td", { "data-label": "Workspace" }, i.workspace || "—"),
        h("td", { "data-label": "Where" }, [i.source, i.channel].filter(Boolean).join(" · ") || "—")))))),
    next ? h("button", { class: "btn small", type: "button", on: { click: () => load(true) } }, "Load older") : null);
  };
  for (const control of [type, event, workspace, from, to]) control.addEventListener("change", () => load());
  clear(card,
    h("header", {}, h("h2", { id: "dlp-history", class: "spacer" }, "Match history"),
      h("button", { class: "btn ghost small", type: "button", on: { click: () => load() } }, icon("refresh", "sm"), "Refresh")),
    h("div", { class: "filters" }, field("Pattern", type), field("Event", event), field("Workspace", workspace), field("From", from), field("To", to)),
    body);
  load();
  return null;
}

function revealCard() {
  const ref = h("input", { class: "input mono", placeholder: "message:42", spellcheck: "false" });
  const out = h("div", { class: "stack", "aria-live": "polite" });
  const form = h("form", { class: "card", "aria-labelledby": "reveal-title" },
    h("header", {}, h("h2", { id: "reveal-title" }, "Reveal an original"), h("p", {}, "Read the original of a redacted chat message. Needs a password login; every reveal is audited.")),
    inlineField("Reference", ref, h("button", { class: "btn", type: "submit" }, icon("eye", "sm"), "Reveal"), { hint: "message:ID — the id of a redacted chat message." }),
    out);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!ref.value.trim()) { ref.focus(); return; }
    try {
      const r = await api("/api/dlp/reveal", { method: "POST", body: { ref: ref.value.trim() } });
      clear(out, h("dl", { class: "facts" },
        h("dt", {}, "Original"), h("dd", {}, h("blockquote", { class: "snippet" }, r.original)),
        h("dt", {}, "Redacted"), h("dd", {}, r.redacted),
        h("dt", {}, "Patterns"), h("dd", {}, r.types.join(", ")),
        h("dt", {}, "When"), h("dd", {}, fmtDate(r.createdAt))));
    } catch (error) { clear(out, errorNotice(error)); }
  });
  return form;
}


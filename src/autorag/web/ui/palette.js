// The command palette (Cmd/Ctrl+K): switch model, go to a page, run a command. A
// combobox over a listbox: type to filter, arrows to move, Enter to run, Escape to close.

import { h, icon, modKey, toast, uid } from "./dom.js";
import { app, navigate, refreshModels, signOut } from "./state.js";
import { setTheme, theme } from "./theme.js";
import { p2pInMenu } from "./features.js";

function modelItems(current, onPick) {
  const list = (app.models && app.models.models) || [];
  return list.map((m) => ({
    group: "Models",
    id: m.id,
    label: m.id,
    detail: [m.local ? "local" : "hosted", m.available === false ? "unavailable" : m.available ? "available" : "not checked yet", m.parameters].filter(Boolean).join(" · "),
    tags: m.capabilities.filter((c) => c !== "local-only"),
    avail: m.available,
    current: m.id === current,
    keywords: `${m.provider} ${m.model} ${m.capabilities.join(" ")}`,
    run: () => onPick(m.id),
  }));
}

function commandItems() {
  const go = (page, label, iconName, keywords = "") => ({ group: "Go to", id: `go:${page}`, label, icon: iconName, keywords, run: () => navigate(`#/${page}`) });
  const items = [
    { group: "Commands", id: "new-chat", label: "New chat", icon: "plus", run: async () => { navigate("#/chat"); const chat = await import("./chat.js"); const view = chat.activeView(); if (view) view.newChat(); } },
    { group: "Commands", id: "compare", label: "Compare two models", icon: "columns", shortcut: `${modKey} Shift M`, run: async () => { const chat = await import("./chat.js"); chat.openCompare(); } },
    { group: "Commands", id: "refresh-models", label: "Check model availability now", icon: "refresh", run: async () => { try { await refreshModels(true); toast("Model availability refreshed."); } catch (e) { toast(e.message, { kind: "error" }); } } },
    { group: "Commands", id: "theme", label: `Theme: switch from ${theme()}`, icon: "sun", keywords: "dark light mode", run: () => setTheme({ system: "light", light: "dark", dark: "system" }[theme()]) },
    go("chat", "Chat", "chat"),
    go("documents", "Documents", "file", "upload files"),
    go("search", "Search", "search"),
    go("settings", "Workspace settings", "settings", "agent skills prompt"),
  ];
  if (app.can("users:admin")) items.push(go("admin/users", "Users", "users", "admin roles"));
  if (app.can("keys:write")) items.push(go("admin/keys", "API keys", "key", "admin tokens"));
  if (app.can("dlp:admin")) items.push(go("admin/dlp", "DLP patterns", "shield", "redaction admin"));
  if (app.can("backup:admin") && app.me.workspaces === null) items.push(go("backups", "Backups", "history", "backup restore schedule"));
  if (app.can("webhooks:admin") && app.me.workspaces === null) items.push(go("webhooks", "Webhooks", "link", "events integrations notify"));
  if (p2pInMenu()) items.push(go("p2p", "P2P: peers, policy, approvals", "peers", "simplex approvals"));
  items.push({ group: "Commands", id: "signout", label: "Sign out", icon: "logout", run: () => signOut({ kind: "ok", text: "You have signed out." }) });
  return items;
}

async function currentModel() {
  const chat = await import("./chat.js");
  const view = chat.activeView();
  return view ? view.effectiveModel().id : null;
}

/** Everything: models first (they are what people come for), then pages and commands. */
export async function openCommandPalette() {
  if (!app.models) { try { await refreshModels(); } catch { /* models stay empty */ } }
  const current = await currentModel();
  const pick = async (id) => { const chat = await import("./chat.js"); await chat.switchModel(id); };
  open({ title: "Command palette", placeholder: "Switch model, go to a page, run a command…", items: [...modelItems(current, pick), ...commandItems()] });
}

/** Models only: the chat's model button. */
export async function openModelPicker({ current, onPick }) {
  if (!app.models) { try { await refreshModels(); } catch { /* models stay empty */ } }
  open({ title: "Switch model", placeholder: "Filter models…", items: modelItems(current, onPick), empty: "No model matches. An admin connects model servers in Settings → Models." });
}

function matches(item, words) {
  const hay = `${item.label} ${item.detail || ""} ${item.keywords || ""} ${item.group}`.toLowerCase();
  return words.every((w) => hay.includes(w));
}

function open({ title, placeholder, items, empty = "Nothing matches." }) {
  const listId = uid("palette");
  const input = h("input", {
    type: "text", placeholder, "aria-label": title, role: "combobox", "aria-expanded": "true",
    "aria-controls": listId, "aria-autocomplete": "list", autocomplete: "off", spellcheck: "false",
  });
  const list = h("ul", { class: "palette-list", role: "listbox", id: listId, "aria-label": title });
  const dialog = h("dialog", { class: "palette", "aria-label": title },
    h("div", { class: "palette-input" }, icon("search"), input, h("kbd", {}, "Esc")),
    list,
    h("div", { class: "palette-foot", "aria-hidden": "true" }, h("span", {}, h("kbd", {}, "↑"), " ", h("kbd", {}, "↓"), " move"), h("span", {}, h("kbd", {}, "Enter"), " choose"), h("span", {}, h("kbd", {}, "Esc"), " close")));
  const opener = document.activeElement;
  let shown = [];
  let active = 0;

  const paint = () => {
    const words = input.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    shown = items.filter((item) => matches(item, words));
    const currentIndex = shown.findIndex((i) => i.current);
    if (active >= shown.length) active = 0;
    if (!words.length && currentIndex >= 0 && !paint.moved) active = currentIndex;
    list.replaceChildren();
    let group = null;
    shown.forEach((item, i) => {
      if (item.group !== group) {
        group = item.group;
        list.append(h("li", { class: "group", role: "presentation" }, group));
      }
      const option = h("li", { class: "option", role: "option", id: `${listId}-${i}`, "aria-selected": String(i === active) },
        item.avail !== undefined ? h("span", { class: ["avail", item.avail === false ? "down" : item.avail ? "up" : ""], "aria-hidden": "true" }) : icon(item.icon || "chevron", "sm"),
        h("span", { class: "opt-main" }, h("span", { class: "truncate" }, item.label), item.detail ? h("small", {}, item.detail) : null),
        h("span", { class: "opt-tags" },
          (item.tags || []).map((t) => h("span", { class: "badge info" }, t)),
          item.current ? h("span", { class: "badge ok" }, icon("check", "sm"), "current") : null,
          item.shortcut ? h("kbd", {}, item.shortcut) : null));
      option.addEventListener("click", () => choose(i));
      option.addEventListener("mousemove", () => { if (active !== i) { active = i; mark(); } });
      list.append(option);
    });
    if (!shown.length) list.append(h("li", { class: "group", role: "presentation" }, empty));
    mark();
  };
  const mark = () => {
    for (const el of list.querySelectorAll(".option")) el.setAttribute("aria-selected", String(el.id === `${listId}-${active}`));
    if (shown.length) {
      input.setAttribute("aria-activedescendant", `${listId}-${active}`);
      const el = document.getElementById(`${listId}-${active}`);
      if (el) el.scrollIntoView({ block: "nearest" });
    } else input.removeAttribute("aria-activedescendant");
  };
  const choose = (i) => {
    const item = shown[i];
    if (!item) return;
    dialog.close();
    Promise.resolve(item.run()).catch((e) => toast(e.message, { kind: "error" }));
  };
  input.addEventListener("input", () => { active = 0; paint.moved = true; paint(); });
  input.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (!shown.length) return;
      paint.moved = true;
      active = (active + (e.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length;
      mark();
    } else if (e.key === "Home" && e.ctrlKey) { active = 0; mark(); } else if (e.key === "End" && e.ctrlKey) { active = shown.length - 1; mark(); } else if (e.key === "Enter") {
      e.preventDefault();
      choose(active);
    }
  });
  dialog.addEventListener("click", (e) => { if (e.target === dialog) dialog.close(); });
  dialog.addEventListener("close", () => {
    dialog.remove();
    if (opener && opener.isConnected && !document.querySelector("dialog[open]")) opener.focus();
  });
  document.body.append(dialog);
  dialog.showModal();
  paint();
  input.focus();
}

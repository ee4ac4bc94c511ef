// The app: session, workspace, the shell (navigation) and the hash router; it loads the
// pages and connects its shell to state.js, which the pages use (theme: theme.js).
// Pages live in the URL's fragment (#/chat/7, #/documents, #/search?q=…): deep links
// and the back button work, and the server serves one page for all of them.

import { api, ApiError, clearSession, session, sessionExpired, setUnauthorizedHandler } from "./api.js";
import { renderLogin, renderSetup } from "./auth.js";
import { announce, clear, h, icon, modKey, toast } from "./dom.js";
import { app, connectShell, currentRoute, navigate, refreshModels, setTitle, signOut } from "./state.js";
import { themeToggle } from "./theme.js";
import { detectP2P, p2pInMenu } from "./features.js";

const root = document.getElementById("app");
const WORKSPACE_KEY = "autorag.workspace";

const PAGES = {
  chat: { title: "Chat", icon: "chat", load: () => import("./chat.js") },
  documents: { title: "Documents", icon: "file", load: () => import("./documents.js") },
  search: { title: "Search", icon: "search", load: () => import("./search.js") },
  wiki: { title: "Wiki", icon: "book", load: () => import("./wiki.js"), visible: () => app.can("archive:read") },
  settings: { title: "Settings", icon: "settings", load: () => import("./settings.js") },
  ocr: { title: "OCR", icon: "eye", load: () => import("./ocr.js"), visible: () => app.can("documents:read") },
  admin: { title: "Admin", icon: "users", load: () => import("./admin.js"), visible: () => app.can("users:admin") || app.can("dlp:admin") || app.can("keys:write") },
  backups: { title: "Backups", icon: "history", load: () => import("./backups.js"), visible: () => app.can("backup:admin") && app.me.workspaces === null },
  webhooks: { title: "Webhooks", icon: "link", load: () => import("./webhooks.js"), visible: () => app.can("webhooks:admin") && app.me.workspaces === null },
  mcp: { title: "Tool servers (MCP)", icon: "link", load: () => import("./mcp.js"), visible: () => app.can("mcp:admin") },
  widgets: { title: "Widgets", icon: "chat", load: () => import("./widgets.js"), visible: () => app.can("widgets:admin") },
  p2p: { title: "P2P", icon: "peers", load: () => import("./p2p.js"), visible: p2pInMenu },
};

// -- routing ----------------------------------------------------------------------------------
let shell = null;
let current = { key: null, cleanup: null };
let returnTo = null;
// Each navigation's number: a page still rendering when the user goes elsewhere must not
// claim the view once it finishes (it would strand the user on it, the address elsewhere).
let navigation = 0;

async function route() {
  if (location.pathname === "/setup") return; // the setup page renders itself
  const { page, rest } = currentRoute();
  if (!session()) {
    if (sessionExpired()) {
      clearSession();
      message = { kind: "warn", text: "Your session has ended. Sign in again to continue." };
    }
    if (page !== "login") returnTo = location.hash;
    shell = null;
    teardown();
    return renderLogin(root, { onSignedIn: signedIn, message: pendingMessage() });
  }
  if (!app.me) {
    try {
      await loadIdentity();
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) renderFatal(error);
      return undefined;
    }
  }
  if (page === "login" || !PAGES[page]) {
    navigate("#/chat", { replace: true });
    return undefined;
  }
  const spec = PAGES[page];
  if (spec.visible && !spec.visible()) {
    navigate("#/chat", { replace: true });
    return undefined;
  }
  if (!shell) buildShell();
  markNav();
  const key = `${page}|${app.workspace}`;
  const sameView = current.key === key && current.keep;
  if (sameView && current.update) {
    current.update({ rest, query: currentRoute().query });
    return undefined;
  }
  teardown();
  const mine = ++navigation;
  current.key = key;
  const outlet = shell.querySelector("#content");
  const module = await spec.load();
  if (mine !== navigation) return undefined; // navigated away meanwhile
  const view = document.createElement("div");
  view.className = "page-host";
  clear(outlet, view);
  const result = (await module.render(view, { rest, query: currentRoute().query, workspace: app.workspace })) || {};
  if (mine !== navigation) { // navigated away while it rendered: the newer page owns the view
    if (result.cleanup) {
      try { result.cleanup(); } catch (error) { console.error(error); }
    }
    return undefined;
  }
  current = { key, cleanup: result.cleanup || null, update: result.update || null, keep: Boolean(result.update) };
  setTitle(result.title || spec.title);
  if (result.focus) result.focus();
  else {
    const heading = outlet.querySelector("h1");
    if (heading) {
      heading.setAttribute("tabindex", "-1");
      heading.focus({ preventScroll: true });
    }
  }
  announce(`${result.title || spec.title} page`);
  return undefined;
}

function teardown() {
  if (current.cleanup) {
    try { current.cleanup(); } catch (error) { console.error(error); }
  }
  current = { key: null, cleanup: null };
}

function paintTitle() {
  const name = shell && shell.querySelector(".page-name");
  if (name) name.textContent = app.workspace ? `Workspace: ${app.workspace}` : "";
}

let message = null;
function pendingMessage() { const m = message; message = null; return m; }

async function loadIdentity() {
  app.me = await api("/api/auth/me");
  const listed = await api("/api/workspaces");
  app.workspaces = listed.workspaces.map((w) => w.name);
  const saved = localStorage.getItem(WORKSPACE_KEY);
  app.workspace = app.workspaces.includes(saved) ? saved : (app.workspaces.includes("default") ? "default" : app.workspaces[0] || null);
  await detectP2P();
  refreshModels().catch(() => {});
}

function setWorkspace(name) {
  if (name === app.workspace) return;
  app.workspace = name;
  localStorage.setItem(WORKSPACE_KEY, name);
  paintWorkspaces();
  app.emit("workspace", name);
  const { page } = currentRoute();
  // Ids in the address (a chat, a document) belong to the previous workspace.
  navigate(`#/${page || "chat"}`, { replace: true });
}

function signedIn() {
  signingOut = false;
  const target = returnTo && !returnTo.startsWith("#/login") ? returnTo : "#/chat";
  returnTo = null;
  app.me = null;
  if (location.hash === target) route();
  else location.hash = target;
}

function endSession(reason) {
  clearSession();
  app.me = null;
  app.models = null;
  message = reason || null;
  app.emit("signout");
  shell = null;
  teardown();
  if (location.hash !== "#/login") location.hash = "#/login";
  else route();
}

let signingOut = false;
setUnauthorizedHandler(() => {
  if (signingOut) return; // several requests may fail at once: one sign-out
  signingOut = true;
  returnTo = location.hash;
  endSession({ kind: "warn", text: "Your session has ended. Sign in again to continue." });
});

// -- the shell ----------------------------------------------------------------------------------
function buildShell() {
  const nav = h("ul", { class: "nav" });
  for (const [key, spec] of Object.entries(PAGES)) {
    if (spec.visible && !spec.visible()) continue;
    nav.append(h("li", {}, h("a", { href: `#/${key}`, dataset: { page: key } }, icon(spec.icon), h("span", {}, key === "admin" && !app.can("users:admin") && !app.can("dlp:admin") ? "API keys" : spec.title))));
  }
  const picker = h("select", { class: "input", id: "workspace-select", on: { change: (e) => setWorkspace(e.target.value) } });
  const me = app.me;
  const menuButton = h("button", {
    class: "btn ghost icon-only", type: "button", "aria-label": "Open navigation", "aria-controls": "sidebar", "aria-expanded": "false",
    on: { click: () => toggleDrawer(true) },
  }, icon("menu"));
  const sidebar = h("nav", { class: "sidebar", id: "sidebar", "aria-label": "Main" },
    h("a", { class: "brand", href: "#/chat" }, h("img", { src: "/ui/favicon.svg", alt: "" }), "AutoRAG"),
    h("div", { class: "ws-picker" }, h("label", { for: "workspace-select" }, "Workspace"), picker),
    nav,
    h("div", { class: "sidebar-foot" },
      h("button", { class: "btn ghost", type: "button", title: `Command palette (${modKey}+K)`, on: { click: () => openPalette() } }, icon("list"), h("span", { class: "spacer" }, "Commands"), h("kbd", {}, `${modKey} K`)),
      themeToggle(),
      h("div", { class: "user-line" },
        h("span", { class: "avatar", "aria-hidden": "true" }, (me.username || "?").slice(0, 2)),
        h("span", { class: "who" }, h("strong", { class: "truncate" }, me.username), h("small", {}, me.role + (me.via === "api_key" ? " · API key" : ""))),
        h("span", { class: "spacer" }),
        h("button", { class: "btn ghost icon-only", type: "button", "aria-label": "Sign out", title: "Sign out", on: { click: () => signOut({ kind: "ok", text: "You have signed out." }) } }, icon("logout")))));
  shell = h("div", { class: "shell" },
    h("button", { class: "skip-link", type: "button", on: { click: () => { const main = document.getElementById("content"); main.focus(); } } }, "Skip to content"),
    h("header", { class: "topbar" }, menuButton, h("a", { class: "brand", href: "#/chat", "aria-label": "AutoRAG home" }, h("img", { src: "/ui/favicon.svg", alt: "" })), h("span", { class: "page-name" }), themeToggle({ compact: true })),
    sidebar,
    h("div", { class: "drawer-backdrop", on: { click: () => toggleDrawer(false) } }),
    h("main", { class: "main", id: "content", tabindex: "-1" }));
  sidebar.addEventListener("click", (e) => { if (e.target.closest("a")) toggleDrawer(false); });
  sidebar.addEventListener("keydown", (e) => { if (e.key === "Escape" && shell.classList.contains("nav-open")) { toggleDrawer(false); } });
  root.classList.remove("app-loading");
  root.removeAttribute("aria-busy");
  clear(root, shell);
  paintWorkspaces();
}

function toggleDrawer(open) {
  if (!shell) return;
  shell.classList.toggle("nav-open", open);
  const button = shell.querySelector(".topbar [aria-controls=sidebar]");
  button.setAttribute("aria-expanded", String(open));
  // While the drawer covers the page, the page is out of reach (focus, screen readers).
  shell.querySelector("#content").inert = open;
  if (open) {
    const first = shell.querySelector(".sidebar a, .sidebar select");
    if (first) first.focus();
  } else if (window.matchMedia("(max-width: 760px)").matches && shell.contains(document.activeElement) && shell.querySelector(".sidebar").contains(document.activeElement)) {
    button.focus();
  }
}

function paintWorkspaces() {
  const picker = shell && shell.querySelector("#workspace-select");
  if (!picker) return;
  picker.replaceChildren(...app.workspaces.map((name) => h("option", { value: name, selected: name === app.workspace }, name)));
  picker.disabled = app.workspaces.length < 2;
}

function markNav() {
  if (!shell) return;
  const { page } = currentRoute();
  for (const link of shell.querySelectorAll(".nav a")) {
    if (link.dataset.page === page) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

function renderFatal(error) {
  shell = null;
  clear(root, h("main", { class: "auth-page" }, h("div", { class: "auth-card" },
    h("h1", {}, "AutoRAG could not start"),
    h("p", {}, error.message || String(error)),
    h("div", { class: "btn-row" },
      h("button", { class: "btn primary", type: "button", on: { click: () => location.reload() } }, "Try again"),
      h("button", { class: "btn", type: "button", on: { click: () => signOut() } }, "Sign out")))));
}

// -- keyboard shortcuts ---------------------------------------------------------------------
async function openPalette() {
  if (!session() || !app.me) return;
  const { openCommandPalette } = await import("./palette.js");
  openCommandPalette();
}

document.addEventListener("keydown", async (event) => {
  const mod = event.metaKey || event.ctrlKey;
  if (!mod || event.altKey || !app.me || !shell) return;
  const key = event.key.toLowerCase();
  if (key === "k" && !event.shiftKey) {
    event.preventDefault();
    if (!document.querySelector("dialog[open]")) openPalette();
  } else if (key === "m" && event.shiftKey) {
    event.preventDefault();
    if (document.querySelector("dialog[open]")) return;
    const chat = await import("./chat.js");
    chat.openCompare();
  }
});

window.addEventListener("hashchange", () => { route().catch(showRouteError); });

function showRouteError(error) {
  console.error(error);
  if (error instanceof ApiError && error.status === 401) return;
  toast(error.message || String(error), { kind: "error" });
}

// -- start --------------------------------------------------------------------------------------
connectShell({ route, markNav, paintTitle, paintWorkspaces, setWorkspace, signOut: endSession });
if (location.pathname === "/setup") {
  renderSetup(root, { onSignedIn: () => { location.replace("/#/documents"); } });
} else {
  route().catch(showRouteError);
}

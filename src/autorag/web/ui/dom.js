// DOM helpers: elements built as nodes (never from HTML strings, so text from the API
// can never become markup), icons, toasts, dialogs and formatters.

const ATTRS = new Set(["role", "for", "tabindex", "href", "target", "rel", "colspan", "form",
  "accept", "autocomplete", "inputmode", "list", "pattern", "enterkeyhint", "spellcheck"]);

/** h("button", {class: "btn", on: {click}}, "Label", child, [more]) */
export function h(tag, props = {}, ...children) {
  const el = tag.startsWith("svg:")
    ? document.createElementNS("http://www.w3.org/2000/svg", tag.slice(4))
    : document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    else if (key === "on") for (const [type, fn] of Object.entries(value)) el.addEventListener(type, fn);
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("aria-") || key.startsWith("data-") || ATTRS.has(key) || el instanceof SVGElement) {
      el.setAttribute(key, value === true ? "" : String(value));
    } else if (key in el) el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// -- icons (24×24 strokes) -----------------------------------------------------------------
const PATHS = {
  chat: "M21 12a8 8 0 0 1-11.6 7.1L4 20l1-4.6A8 8 0 1 1 21 12z",
  file: "M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8zM14 3v5h5M9 13h6M9 17h6",
  search: "M11 18a7 7 0 1 0 0-14 7 7 0 0 0 0 14zM20 20l-4-4",
  settings: "M12 15a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM19.4 15a1.7 1.7 0 0 0 .3 1.8l.1.1a2 2 0 1 1-2.8 2.8l-.1-.1a1.7 1.7 0 0 0-1.8-.3 1.7 1.7 0 0 0-1 1.5V21a2 2 0 1 1-4 0v-.1a1.7 1.7 0 0 0-1.1-1.5 1.7 1.7 0 0 0-1.8.3l-.1.1a2 2 0 1 1-2.8-2.8l.1-.1a1.7 1.7 0 0 0 .3-1.8 1.7 1.7 0 0 0-1.5-1H3a2 2 0 1 1 0-4h.1a1.7 1.7 0 0 0 1.5-1.1 1.7 1.7 0 0 0-.3-1.8l-.1-.1a2 2 0 1 1 2.8-2.8l.1.1a1.7 1.7 0 0 0 1.8.3H9a1.7 1.7 0 0 0 1-1.5V3a2 2 0 1 1 4 0v.1a1.7 1.7 0 0 0 1 1.5 1.7 1.7 0 0 0 1.8-.3l.1-.1a2 2 0 1 1 2.8 2.8l-.1.1a1.7 1.7 0 0 0-.3 1.8V9a1.7 1.7 0 0 0 1.5 1H21a2 2 0 1 1 0 4h-.1a1.7 1.7 0 0 0-1.5 1z",
  shield: "M12 22s8-4 8-10V5l-8-3-8 3v7c0 6 8 10 8 10z",
  users: "M17 21v-2a4 4 0 0 0-4-4H5a4 4 0 0 0-4 4v2M9 11a4 4 0 1 0 0-8 4 4 0 0 0 0 8zM23 21v-2a4 4 0 0 0-3-3.9M16 3.1a4 4 0 0 1 0 7.8",
  peers: "M5 12a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM19 8a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM19 22a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM7.6 10.5l8.8 5.5M16.4 6.5 7.6 8",
  key: "M21 2l-2 2m-7.6 7.6a5.5 5.5 0 1 1-7.8 7.8 5.5 5.5 0 0 1 7.8-7.8zm0 0L15.5 7.5m0 0 3 3L22 7l-3-3m-3.5 3.5L19 4",
  upload: "M21 15v4a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2v-4M17 8l-5-5-5 5M12 3v12",
  download: "M21 15v4a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2v-4M7 10l5 5 5-5M12 15V3",
  trash: "M3 6h18M8 6V4a2 2 0 0 1 2-2h4a2 2 0 0 1 2 2v2m3 0-1 14a2 2 0 0 1-2 2H7a2 2 0 0 1-2-2L4 6M10 11v6M14 11v6",
  plus: "M12 5v14M5 12h14",
  x: "M18 6 6 18M6 6l12 12",
  menu: "M3 6h18M3 12h18M3 18h18",
  sun: "M12 17a5 5 0 1 0 0-10 5 5 0 0 0 0 10zM12 1v2M12 21v2M4.2 4.2l1.4 1.4M18.4 18.4l1.4 1.4M1 12h2M21 12h2M4.2 19.8l1.4-1.4M18.4 5.6l1.4-1.4",
  moon: "M21 12.8A9 9 0 1 1 11.2 3a7 7 0 0 0 9.8 9.8z",
  monitor: "M4 4h16a1 1 0 0 1 1 1v10a1 1 0 0 1-1 1H4a1 1 0 0 1-1-1V5a1 1 0 0 1 1-1zM8 20h8M12 16v4",
  send: "M22 2 11 13M22 2l-7 20-4-9-9-4z",
  stop: "M7 7h10v10H7z",
  logout: "M9 21H5a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2h4M16 17l5-5-5-5M21 12H9",
  alert: "M10.3 3.9 1.8 18a2 2 0 0 0 1.7 3h17a2 2 0 0 0 1.7-3L13.7 3.9a2 2 0 0 0-3.4 0zM12 9v4M12 17h.01",
  info: "M12 22a10 10 0 1 0 0-20 10 10 0 0 0 0 20zM12 16v-4M12 8h.01",
  check: "M20 6 9 17l-5-5",
  columns: "M12 3v18M5 3h14a2 2 0 0 1 2 2v14a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2z",
  cpu: "M6 6h12v12H6zM9 1v3M15 1v3M9 20v3M15 20v3M20 9h3M20 14h3M1 9h3M1 14h3",
  refresh: "M23 4v6h-6M1 20v-6h6M3.5 9a9 9 0 0 1 14.9-3.4L23 10M1 14l4.6 4.4A9 9 0 0 0 20.5 15",
  history: "M3 12a9 9 0 1 0 3-6.7L3 8M3 3v5h5M12 7v5l4 2",
  link: "M10 13a5 5 0 0 0 7.5.5l3-3a5 5 0 0 0-7-7l-1.7 1.7M14 11a5 5 0 0 0-7.5-.5l-3 3a5 5 0 0 0 7 7l1.7-1.7",
  eye: "M1 12s4-8 11-8 11 8 11 8-4 8-11 8-11-8-11-8zM12 15a3 3 0 1 0 0-6 3 3 0 0 0 0 6z",
  copy: "M9 9h11v11H9zM5 15H4a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1h10a1 1 0 0 1 1 1v1",
  undo: "M3 7v6h6M3 13a9 9 0 1 0 3-7.7L3 8",
  list: "M8 6h13M8 12h13M8 18h13M3 6h.01M3 12h.01M3 18h.01",
  chevron: "M6 9l6 6 6-6",
  edit: "M12 20h9M16.5 3.5a2.1 2.1 0 0 1 3 3L7 19l-4 1 1-4z",
  book: "M4 19.5A2.5 2.5 0 0 1 6.5 17H20M4 19.5A2.5 2.5 0 0 0 6.5 22H20V2H6.5A2.5 2.5 0 0 0 4 4.5z",
};

export function icon(name, cls = "") {
  const svg = h("svg:svg", { class: `icon ${cls}`.trim(), viewBox: "0 0 24 24", "aria-hidden": "true", focusable: "false" });
  svg.append(h("svg:path", { d: PATHS[name] || PATHS.info }));
  return svg;
}

// -- announcements, toasts -----------------------------------------------------------------
let live;
export function announce(text) {
  if (!live) {
    live = h("div", { class: "sr-only", role: "status", "aria-live": "polite" });
    document.body.append(live);
  }
  live.textContent = "";
  setTimeout(() => { live.textContent = text; }, 30);
}

let toasts;
export function toast(message, { kind = "", action = null, timeout = 5000 } = {}) {
  if (!toasts) {
    toasts = h("div", { class: "toasts", role: "region", "aria-label": "Notifications" });
    document.body.append(toasts);
  }
  const item = h("div", { class: ["toast", kind], role: kind === "error" ? "alert" : "status" },
    h("span", { class: "spacer" }, message));
  const close = () => item.remove();
  if (action) {
    item.append(h("button", { class: "btn small", type: "button", on: { click: () => { close(); action.fn(); } } }, action.label));
  }
  item.append(h("button", { class: "btn small ghost icon-only", type: "button", "aria-label": "Dismiss", on: { click: close } }, icon("x", "sm")));
  toasts.append(item);
  if (timeout) setTimeout(close, action ? Math.max(timeout, 8000) : timeout);
  return close;
}

// -- dialogs ------------------------------------------------------------------------------
/** A modal <dialog>: focus moves in, Escape closes, focus returns to the opener. */
export function modal({ title, body, foot, className = "", label, onClose } = {}) {
  const opener = document.activeElement;
  const heading = title ? h("h2", { id: uid("dlg") }, title) : null;
  const dialog = h("dialog", { class: className, "aria-labelledby": heading ? heading.id : undefined, "aria-label": heading ? undefined : label });
  dialog.append(h("div", { class: "dialog-body" }, heading, body));
  if (foot) dialog.append(h("div", { class: "dialog-foot" }, foot));
  dialog.addEventListener("close", () => {
    dialog.remove();
    if (onClose) onClose(dialog.returnValue);
    if (opener && opener.isConnected && typeof opener.focus === "function") opener.focus();
  });
  document.body.append(dialog);
  dialog.showModal();
  return dialog;
}

export function confirmDialog({ title, message, confirm = "Confirm", danger = false }) {
  return new Promise((resolve) => {
    let result = false;
    const ok = h("button", { class: ["btn", danger ? "danger solid" : "primary"], type: "button", on: { click: () => { result = true; dlg.close(); } } }, confirm);
    const cancel = h("button", { class: "btn", type: "button", on: { click: () => dlg.close() } }, "Cancel");
    const dlg = modal({ title, body: h("p", {}, message), foot: [cancel, ok], onClose: () => resolve(result) });
    cancel.focus();
  });
}

// -- states ---------------------------------------------------------------------------------
export function emptyState({ iconName = "info", title, body, action } = {}) {
  return h("div", { class: "empty" }, icon(iconName), title ? h("h3", {}, title) : null,
    body ? h("p", {}, body) : null, action || null);
}

export function errorNotice(error, retry) {
  const text = error && error.message ? error.message : String(error);
  return h("div", { class: "notice error", role: "alert" }, icon("alert"),
    h("div", { class: "notice-body" }, text),
    retry ? h("button", { class: "btn small", type: "button", on: { click: retry } }, "Retry") : null);
}

export function loading(text = "Loading…") {
  return h("div", { class: "empty", role: "status" }, h("span", { class: "spinner" }), h("p", {}, text));
}

// -- formatting -------------------------------------------------------------------------------
export function fmtBytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KB", "MB", "GB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return `${v < 10 && i ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

const dateFmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
export function fmtDate(value) {
  if (!value) return "—";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? String(value) : dateFmt.format(d);
}

const rel = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
export function fmtRelative(value) {
  if (!value) return "—";
  const d = new Date(value);
  const seconds = (d.getTime() - Date.now()) / 1000;
  const abs = Math.abs(seconds);
  if (abs < 45) return seconds < 0 ? "just now" : "in a moment";
  if (abs < 3600) return rel.format(Math.round(seconds / 60), "minute");
  if (abs < 86400) return rel.format(Math.round(seconds / 3600), "hour");
  if (abs < 86400 * 7) return rel.format(Math.round(seconds / 86400), "day");
  return dateFmt.format(d);
}

export function timeEl(value, relative = true) {
  return h("time", { datetime: value || "", title: fmtDate(value) }, relative ? fmtRelative(value) : fmtDate(value));
}

// -- misc ----------------------------------------------------------------------------------------
let counter = 0;
export function uid(prefix = "id") { counter += 1; return `${prefix}-${counter}`; }

export function debounce(fn, ms) {
  let timer;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}

export const isMac = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
export const modKey = isMac ? "⌘" : "Ctrl";

/** A labelled field: {label, hint, control}. */
export function field(label, control, { hint, error, className = "" } = {}) {
  if (!control.id) control.id = uid("f");
  const hintEl = hint ? h("span", { class: "hint", id: uid("hint") }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  const errorEl = h("span", { class: "field-error", id: uid("err"), role: "alert" }, error || "");
  return h("div", { class: ["field", className] }, h("label", { for: control.id }, label), control, hintEl, errorEl);
}

/** A labelled field whose control has a button beside it (the button lines up with the
 * control, not with the label or the hint). */
export function inlineField(label, control, button, options = {}) {
  const wrap = field(label, control, options);
  const group = h("div", { class: "input-group" });
  control.replaceWith(group);
  group.append(control, button);
  return wrap;
}

export function setFieldError(control, message) {
  const wrap = control.closest(".field");
  const out = wrap && wrap.querySelector(".field-error");
  if (out) out.textContent = message || "";
  if (message) control.setAttribute("aria-invalid", "true");
  else control.removeAttribute("aria-invalid");
}

/** Text with [REDACTED] shown as a marked span, and query words highlighted. */
export function richSnippet(text, words = []) {
  const frag = document.createDocumentFragment();
  const escaped = words.filter((w) => w.length > 1).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = new RegExp(`(\\[REDACTED\\]${escaped.length ? `|\\b(?:${escaped.join("|")})` : ""})`, "gi");
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    frag.append(text.slice(last, m.index));
    if (m[0].toUpperCase() === "[REDACTED]") frag.append(h("span", { class: "redacted", title: "Redacted by data-loss prevention" }, "[REDACTED]"));
    else frag.append(h("mark", {}, m[0]));
    last = m.index + m[0].length;
  }
  frag.append(text.slice(last));
  return frag;
}

export function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  const area = h("textarea", { value: text, class: "sr-only" });
  document.body.append(area);
  area.select();
  document.execCommand("copy");
  area.remove();
  return Promise.resolve();
}

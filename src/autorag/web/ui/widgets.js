// Chat widgets, for the workspace's admins: the chat bubbles other websites embed with one
// script tag, answering visitors from this workspace. A widget is created (its tag shown,
// with a copy button), changed (sites allowed, model, greeting, colours, limits, a fixed
// context), switched on or off, or removed.

import { createWidget, listWidgets, removeWidget, updateWidget } from "./widgets_api.js";
import { clear, confirmDialog, copyText, emptyState, errorNotice, field, h, icon, loading, modal, setFieldError, timeEl, toast } from "./dom.js";
import { app, refreshModels } from "./state.js";

const NAME_RULE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const COLOUR_RULE = /^#[0-9a-fA-F]{6}$/;
const COLOURS = [["primary", "Accent colour", "#2563eb"], ["background", "Background", "#ffffff"], ["text", "Text colour", "#111827"]];

// -- the page ------------------------------------------------------------------------------------------
export async function render(container) {
  const workspace = app.workspace;
  const listHost = h("section", { class: "stack", "aria-labelledby": "widgets-title" }, loading());
  const formHost = h("div", {});
  container.append(h("div", { class: "page" }, h("div", { class: "page-inner stack" },
    h("div", { class: "page-head" }, h("h1", {}, "Chat widgets"),
      h("p", { class: "sub" }, `A chat bubble for your website that answers visitors from ${workspace}. Put its one script tag on a page of a site you allow; visitors need no account and never see each other's chats.`)),
    listHost, formHost)));

  let alive = true;
  let models = [];
  try { models = ((await refreshModels()) || { models: [] }).models.map((m) => m.id); } catch { models = []; }
  async function load() {
    let widgets;
    try {
      widgets = await listWidgets(workspace);
    } catch (error) {
      if (alive) clear(listHost, errorNotice(error, () => load()));
      return;
    }
    if (!alive) return;
    paintList(listHost, workspace, widgets, models, load);
    if (!formHost.firstChild) formHost.append(createCard(workspace, models, load));
  }
  await load();
  return { title: "Chat widgets", cleanup: () => { alive = false; } };
}

function paintList(host, workspace, widgets, models, reload) {
  const heading = h("h2", { id: "widgets-title" }, `Widgets (${widgets.length})`);
  if (!widgets.length) {
    clear(host, heading, emptyState({ iconName: "chat", title: "No widgets yet", body: "Create one below: the sites it may appear on, and how it greets visitors." }));
    return;
  }
  clear(host, heading, ...widgets.map((widget) => widgetCard(workspace, widget, models, reload)));
}

function widgetCard(workspace, widget, models, reload) {
  const enabled = h("input", { type: "checkbox", checked: widget.enabled, "aria-label": `${widget.name} answers visitors` });
  enabled.addEventListener("change", async () => {
    enabled.disabled = true;
    try {
      await updateWidget(workspace, widget.publicId, { enabled: enabled.checked });
      await reload();
      toast(enabled.checked ? `${widget.name} answers visitors again.` : `${widget.name} is off: visitors are told it is unavailable.`);
    } catch (error) { enabled.checked = !enabled.checked; toast(error.message, { kind: "error" }); } finally { enabled.disabled = false; }
  });
  const copy = h("button", { class: "btn small", type: "button", "aria-label": `Copy ${widget.name}'s script tag`, on: { click: async () => {
    await copyText(widget.snippet);
    toast("Script tag copied: paste it into the page, before </body>.");
  } } }, icon("copy", "sm"), "Copy");
  const edit = h("button", { class: "btn small", type: "button", "aria-label": `Change ${widget.name}`, on: { click: () => {
    const form = widgetForm({ widget, models, submitLabel: "Save", onSubmit: (changes) => updateWidget(workspace, widget.publicId, changes) });
    const dlg = modal({ title: `Change ${widget.name}`, body: form, className: "wide" });
    form.addEventListener("saved", async (e) => { dlg.close(); await reload(); toast(`${e.detail.name} saved.`); });
  } } }, icon("edit", "sm"), "Change");
  const remove = h("button", { class: "btn ghost small", type: "button", "aria-label": `Remove ${widget.name}`, on: { click: async () => {
    if (!(await confirmDialog({ title: `Remove ${widget.name}?`, message: "Sites that embed it show nothing from now on. This cannot be undone.", confirm: "Remove", danger: true }))) return;
    try { await removeWidget(workspace, widget.publicId); toast(`${widget.name} removed.`); reload(); } catch (error) { toast(error.message, { kind: "error" }); }
  } } }, icon("trash", "sm"), "Remove");

  const origins = widget.allowedOrigins.length
    ? widget.allowedOrigins.map((o) => h("code", { class: "mono" }, o))
    : [h("span", { class: "field-error" }, "No site yet: the widget appears nowhere until one is allowed.")];
  const fixed = widget.ragContext ? "Answers from its fixed context only" : "Answers from this workspace's documents";
  return h("article", { class: "card stack", dataset: { widget: widget.publicId }, "aria-label": widget.name },
    h("header", { class: "row" }, h("h3", {}, widget.name),
      h("label", { class: "switch" }, enabled, h("span", { class: "small" }, widget.enabled ? "on" : "off"))),
    h("dl", { class: "facts small" },
      h("dt", {}, "Sites"), h("dd", { class: "row" }, ...origins),
      h("dt", {}, "Model"), h("dd", {}, widget.model || "The workspace's default"),
      h("dt", {}, "Answers"), h("dd", {}, fixed),
      h("dt", {}, "Limits"), h("dd", {}, `${widget.visitorPerMinute} questions a minute per visitor, ${widget.widgetPerMinute} in all`),
      h("dt", {}, "Created"), h("dd", {}, timeEl(widget.createdAt), widget.createdBy ? ` by ${widget.createdBy}` : "")),
    field("Script tag", h("textarea", { class: "input mono", rows: 2, readOnly: true, value: widget.snippet, "aria-label": `${widget.name}'s script tag` })),
    h("div", { class: "save-bar" }, copy, edit, remove));
}

function createCard(workspace, models, reload) {
  const form = widgetForm({ models, submitLabel: "Create", onSubmit: (values) => createWidget(workspace, values) });
  form.addEventListener("saved", async (e) => {
    await reload();
    toast(`${e.detail.name} created: copy its script tag onto a page of ${e.detail.allowedOrigins[0] || "an allowed site"}.`);
    form.replaceWith(createCard(workspace, models, reload));
  });
  return h("section", { class: "card", "aria-label": "Create a widget" },
    h("header", {}, h("h2", {}, "Create a widget"), h("p", {}, "Visitors of the sites you allow can chat with it; every other site is refused.")), form);
}

// -- one form for creating and changing --------------------------------------------------------------
/** The widget's settings; emits "saved" (detail: the widget) once ``onSubmit`` succeeds. Given a
 * ``widget``, only what changed is sent. */
function widgetForm({ widget = null, models, submitLabel, onSubmit }) {
  const was = widget || { name: "", allowedOrigins: [], model: null, greeting: "", theme: {}, visitorPerMinute: 10, widgetPerMinute: 120, ragContext: null };
  const name = h("input", { class: "input", value: was.name, placeholder: "e.g. support", maxLength: 64, autocapitalize: "none", spellcheck: "false" });
  const origins = h("textarea", { class: "input mono", rows: 2, value: was.allowedOrigins.join("\n"), placeholder: "https://www.example.com", spellcheck: "false" });
  const modelIds = [...new Set([...(was.model ? [was.model] : []), ...models])];
  const model = h("select", { class: "input" }, h("option", { value: "" }, "The workspace's default"),
    modelIds.map((id) => h("option", { value: id, selected: id === was.model }, id)));
  const greeting = h("textarea", { class: "input", rows: 2, value: was.greeting, maxLength: 500, placeholder: "Hello! Ask me anything about our products." });
  const colours = COLOURS.map(([key, label, example]) => ({ key, control: h("input", { class: "input mono", value: was.theme[key] || "", placeholder: example, maxLength: 7, spellcheck: "false", "aria-label": label }), label }));
  const perVisitor = h("input", { class: "input", type: "number", min: "1", max: "10000", value: String(was.visitorPerMinute) });
  const perWidget = h("input", { class: "input", type: "number", min: "1", max: "10000", value: String(was.widgetPerMinute) });
  const context = h("textarea", { class: "input", rows: 3, value: was.ragContext || "", maxLength: 20000, placeholder: "Leave empty to answer from the workspace's documents." });
  const save = h("button", { class: "btn primary", type: "submit" }, submitLabel);
  const form = h("form", { class: "stack", "aria-label": widget ? `Change ${widget.name}` : "New widget" },
    h("div", { class: "grid-form" },
      field("Name", name, { hint: "Letters, digits, '.', '_' or '-'." }),
      field("Sites allowed", origins, { hint: "One per line, as the browser names them: scheme, host and port (https://shop.example.com).", className: "wide-field" }),
      field("Model", model),
      field("Greeting", greeting, { hint: "The widget's first message.", className: "wide-field" }),
      ...colours.map((c) => field(c.label, c.control, { hint: "#rrggbb; empty: the default." })),
      field("Questions a minute, per visitor", perVisitor),
      field("Questions a minute, in all", perWidget),
      field("Fixed context", context, { hint: "Optional. When set, the widget answers only from this text and does not search the workspace.", className: "wide-field" })),
    h("div", { class: "save-bar" }, save));

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const controls = [name, origins, model, greeting, perVisitor, perWidget, context, ...colours.map((c) => c.control)];
    for (const control of controls) setFieldError(control, "");
    const values = readValues();
    if (!values) return;
    const body = widget ? changedValues(was, values) : values;
    if (widget && !Object.keys(body).length) { form.dispatchEvent(new CustomEvent("saved", { detail: widget })); return; }
    save.disabled = true;
    try {
      const saved = await onSubmit(body);
      form.dispatchEvent(new CustomEvent("saved", { detail: saved }));
    } catch (error) {
      const message = error.message || String(error);
      const control = /origin|site/i.test(message) ? origins : /model/i.test(message) ? model : /name/i.test(message) ? name
        : /colou?r|theme/i.test(message) ? colours[0].control : /context/i.test(message) ? context : /greeting/i.test(message) ? greeting : name;
      setFieldError(control, message);
      control.focus();
    } finally { save.disabled = false; }
  });

  function readValues() {
    const fail = (control, message) => { setFieldError(control, message); control.focus(); return null; };
    if (!NAME_RULE.test(name.value.trim())) return fail(name, "A name of letters, digits, '.', '_' or '-' (up to 64), starting with a letter or digit.");
    const theme = {};
    for (const c of colours) {
      const value = c.control.value.trim();
      if (value && !COLOUR_RULE.test(value)) return fail(c.control, "A colour as #rrggbb, e.g. #2563eb.");
      if (value) theme[c.key] = value.toLowerCase();
    }
    const rates = [perVisitor, perWidget].map((control) => Number(control.value));
    for (const [i, rate] of rates.entries()) {
      if (!Number.isInteger(rate) || rate < 1 || rate > 10000) return fail([perVisitor, perWidget][i], "A whole number from 1 to 10,000.");
    }
    return {
      name: name.value.trim(),
      allowedOrigins: origins.value.split("\n").map((o) => o.trim()).filter(Boolean),
      model: model.value || null,
      greeting: greeting.value.trim(),
      theme,
      visitorPerMinute: rates[0],
      widgetPerMinute: rates[1],
      ragContext: context.value.trim() || null,
    };
  }
  return form;
}

function changedValues(was, values) {
  const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  const changes = {};
  for (const [key, value] of Object.entries(values)) {
    if (!same(key === "theme" ? sorted(was.theme) : was[key], key === "theme" ? sorted(value) : value)) changes[key] = value;
  }
  return changes;
}

function sorted(object) {
  return Object.fromEntries(Object.entries(object || {}).sort(([a], [b]) => a.localeCompare(b)));
}

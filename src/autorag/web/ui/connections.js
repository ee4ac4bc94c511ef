// Model connections: Ollama and OpenAI-compatible servers an admin connects from the
// browser (Settings → Models), and the chat's notice when only the built-in model answers.
// An API key is write-only here: the server never sends it back, only whether one is set.

import { api } from "./api.js";
import { clear, confirmDialog, field, h, icon, setFieldError, toast } from "./dom.js";
import { app, refreshModels } from "./state.js";

const BASE = "/api/models/connections";
const KINDS = { ollama: "Ollama", openai: "OpenAI-compatible" };
const EXAMPLE_URL = { ollama: "http://127.0.0.1:11434", openai: "https://api.openai.com/v1" };
const NAME_RE = /^[a-z0-9][a-z0-9_.-]{0,39}$/;

/** Whether the signed-in user may connect models (an admin of every workspace). */
export function canConnect() {
  return Boolean(app.me) && app.can("workspaces:admin") && app.me.workspaces === null;
}

/** Whether the only models on offer are the built-in extractive one. */
export function onlyBuiltIn(models = app.models) {
  const list = (models && models.models) || [];
  return list.length > 0 && list.every((m) => m.provider === "extractive");
}

function modelCount(models) {
  return `${models.length} model${models.length === 1 ? "" : "s"}`;
}

async function connectDetected(found, button) {
  button.disabled = true;
  try {
    const taken = new Set((await api(BASE)).map((c) => c.name));
    let name = "ollama";
    for (let i = 2; taken.has(name); i += 1) name = `ollama-${i}`;
    await api(BASE, { method: "POST", body: { name, kind: "ollama", baseUrl: found.baseUrl } });
    await refreshModels(true).catch(() => null);
    toast(`Connected Ollama as ${name}: ${modelCount(found.models)}.`);
    return name;
  } catch (error) {
    toast(error.message, { kind: "error" });
    button.disabled = false;
    return null;
  }
}

/** A line offering a running Ollama, filled in when one answers (never blocks the page). */
function detectedOffer(onConnected) {
  const slot = h("div", { class: "stack", "aria-live": "polite" });
  if (!canConnect()) return slot;
  api(`${BASE}/detect`).then((found) => {
    if (!found.found || found.connectedAs || !slot.isConnected) return;
    const connect = h("button", { class: "btn small primary", type: "button" }, icon("plus", "sm"), "Connect it");
    connect.addEventListener("click", async () => { if (await connectDetected(found, connect)) onConnected(); });
    const names = found.models.slice(0, 4).map((m) => m.id).join(", ");
    slot.replaceChildren(h("div", { class: "notice" }, icon("info"),
      h("div", { class: "notice-body" }, `Ollama is running on this machine (${found.baseUrl}) with ${modelCount(found.models)}${names ? `: ${names}` : ""}.`),
      connect));
  }).catch(() => {});
  return slot;
}

/** The chat's notice when only the built-in model answers; null otherwise. */
export function builtInNotice() {
  if (!onlyBuiltIn()) return null;
  const body = h("div", { class: "notice-body" },
    h("strong", {}, "No language model is connected. "),
    "Answers come from the built-in extractive model: it quotes the passages that match your question best, it does not write answers. ",
    canConnect() ? h("a", { href: "#/settings" }, "Connect a model") : "An admin can connect a model in Settings.");
  const notice = h("div", { class: "notice warn", role: "note" }, icon("info"), body);
  const wrapper = h("div", { class: "stack builtin-notice" }, notice, detectedOffer(() => {}));
  const off = app.on("models", () => {
    if (!onlyBuiltIn()) { wrapper.remove(); off(); }
  });
  return wrapper;
}

/** First run, once the admin is signed in: when only the built-in model is on offer, offer
 * to connect one (a running Ollama in one click). Resolves when the user goes on. */
export async function firstRunModelStep(container) {
  const offered = await api("/api/models");
  if (!onlyBuiltIn(offered)) return;
  await new Promise((resolve) => {
    const slot = h("div", { class: "stack", "aria-live": "polite" },
      h("p", { class: "muted" }, h("span", { class: "spinner", "aria-hidden": "true" }), " Looking for a model server on this machine…"));
    const skip = h("button", { class: "btn", type: "button", on: { click: () => resolve() } }, "Continue without one");
    const later = h("a", { class: "btn", href: "/#/settings" }, "Connect a server by its address");
    clear(container, h("section", { class: "stack", "aria-labelledby": "first-model-title" },
      h("h2", { id: "first-model-title" }, "Connect a model"),
      h("p", { class: "muted" }, "A language model writes the answers: connect Ollama or an OpenAI-compatible server. Without one, the built-in extractive model quotes the passages that match best."),
      slot, h("div", { class: "row" }, later, skip)));
    api(`${BASE}/detect`).then((found) => {
      if (!found.found) {
        slot.replaceChildren(h("p", { class: "muted" }, "No Ollama answers on this machine."));
        return;
      }
      const connect = h("button", { class: "btn primary", type: "button" }, icon("plus", "sm"), "Connect it");
      connect.addEventListener("click", async () => { if (await connectDetected(found, connect)) resolve(); });
      const names = found.models.slice(0, 4).map((m) => m.id).join(", ");
      slot.replaceChildren(h("div", { class: "notice ok" }, icon("check"),
        h("div", { class: "notice-body" }, `Ollama is running on this machine (${found.baseUrl}) with ${modelCount(found.models)}${names ? `: ${names}` : ""}.`),
        connect));
    }).catch(() => slot.replaceChildren());
  });
}

// -- the settings card ------------------------------------------------------------------------
/** Settings → Models: the connections, each testable, editable and removable, and a form
 * to add one (tested first). For admins; others see the models list only. */
export function connectionsCard() {
  const card = h("section", { class: "card", "aria-labelledby": "connections-title" });
  const list = h("ul", { class: "model-list", "aria-label": "Connections" });
  const offer = h("div");
  const reload = async () => {
    try {
      const connections = await api(BASE);
      clear(list, connections.length ? connections.map((c) => connectionItem(c, reload)) : h("li", { class: "muted" }, "No model server is connected yet."));
    } catch (error) { clear(list, h("li", { class: "hint" }, error.message)); }
    offer.replaceChildren(detectedOffer(async () => { await reload(); }));
  };
  clear(card,
    h("header", {}, h("h2", { id: "connections-title" }, "Model servers"),
      h("p", {}, "Connect Ollama or any OpenAI-compatible server (OpenAI, vLLM, LM Studio, llama.cpp). Their models appear in every model menu at once.")),
    offer, list, addForm(reload));
  reload();
  return card;
}

function keyField(placeholder) {
  return h("input", { class: "input", type: "password", autocomplete: "new-password", spellcheck: "false", placeholder, maxLength: 4000 });
}

function kindSelect(value) {
  return h("select", { class: "input" }, Object.entries(KINDS).map(([kind, label]) => h("option", { value: kind, selected: kind === value }, label)));
}

function testResult(result) {
  const box = h("div", { class: ["notice", result.ok ? "ok" : "error"], role: result.ok ? "status" : "alert" },
    icon(result.ok ? "check" : "alert"), h("div", { class: "notice-body" }, result.message));
  if (!result.models.length) return box;
  return h("div", { class: "stack" }, box, modelNames(result.models));
}

function modelNames(models) {
  return h("div", { class: "row", role: "list", "aria-label": "Models on this server" },
    models.map((m) => h("span", { class: "badge", role: "listitem" }, m.id, m.parameters ? ` · ${m.parameters}` : "")));
}

function addForm(reload) {
  const name = h("input", { class: "input", placeholder: "e.g. ollama", autocapitalize: "none", spellcheck: "false", maxLength: 40 });
  const kind = kindSelect("ollama");
  const url = h("input", { class: "input", type: "url", placeholder: EXAMPLE_URL.ollama, spellcheck: "false", maxLength: 2000 });
  const key = keyField("Optional");
  const result = h("div", { "aria-live": "polite" });
  const test = h("button", { class: "btn", type: "button" }, "Test connection");
  const save = h("button", { class: "btn primary", type: "submit" }, icon("plus", "sm"), "Connect");
  kind.addEventListener("change", () => { url.placeholder = EXAMPLE_URL[kind.value]; });
  const probe = async () => {
    setFieldError(url, "");
    result.replaceChildren(h("p", { class: "muted" }, h("span", { class: "spinner", "aria-hidden": "true" }), " Reaching the server…"));
    try {
      const outcome = await api(`${BASE}/test`, { method: "POST", body: { kind: kind.value, baseUrl: url.value.trim() || EXAMPLE_URL[kind.value], apiKey: key.value || null } });
      result.replaceChildren(testResult(outcome));
      return outcome.ok;
    } catch (error) {
      result.replaceChildren();
      setFieldError(url, error.message);
      return false;
    }
  };
  test.addEventListener("click", () => { test.disabled = true; probe().finally(() => { test.disabled = false; }); });
  const form = h("form", { class: "stack", "aria-label": "Connect a model server" },
    h("h3", {}, "Connect a model server"),
    h("div", { class: "grid-form" },
      field("Name", name, { hint: "Models are named name/model, e.g. ollama/llama3.2:3b." }),
      field("Kind", kind),
      field("Server address", url, { hint: "Ollama: its root address. OpenAI-compatible: ends in /v1." }),
      field("API key", key, { hint: "Stored encrypted; never shown again." })),
    result,
    h("div", { class: "save-bar" }, test, save));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!NAME_RE.test(name.value)) { setFieldError(name, "Lowercase letters, digits, '.', '_' or '-' (up to 40)."); name.focus(); return; }
    setFieldError(name, "");
    save.disabled = true;
    try {
      if (!(await probe())) return;
      await api(BASE, { method: "POST", body: { name: name.value, kind: kind.value, baseUrl: url.value.trim() || EXAMPLE_URL[kind.value], apiKey: key.value || null } });
      toast(`Connected ${name.value}.`);
      name.value = ""; url.value = ""; key.value = "";
      result.replaceChildren();
      await refreshModels(true);
      await reload();
    } catch (error) {
      if (error.status === 409 || /name/i.test(error.message)) setFieldError(name, error.message);
      else toast(error.message, { kind: "error" });
    } finally { save.disabled = false; }
  });
  return form;
}

function connectionItem(c, reload) {
  const detail = h("div", { class: "stack", "aria-live": "polite" });
  const status = c.enabled ? null : h("span", { class: "badge" }, "off");
  const buttons = h("div", { class: "row" });
  const item = h("li", { dataset: { connection: c.name } },
    h("div", { class: "row" },
      h("strong", { class: "mono" }, c.name),
      h("span", { class: "muted small" }, `${KINDS[c.kind] || c.kind} · ${c.baseUrl}`),
      h("span", { class: "spacer" }), status,
      c.local ? null : h("span", { class: "badge warn" }, "hosted"),
      h("span", { class: "badge" }, c.apiKeySet ? "key set" : "no key"),
      c.readOnly ? h("span", { class: "badge info", title: "Change it in autorag.toml" }, "autorag.toml") : null),
    buttons, detail);
  const test = h("button", { class: "btn small", type: "button" }, "Test");
  test.addEventListener("click", async () => {
    test.disabled = true;
    detail.replaceChildren(h("p", { class: "muted" }, "Reaching the server…"));
    try { detail.replaceChildren(testResult(await api(`${BASE}/${encodeURIComponent(c.name)}/test`, { method: "POST" }))); } catch (error) { detail.replaceChildren(h("p", { class: "hint" }, error.message)); }
    test.disabled = false;
  });
  buttons.append(test);
  if (!c.readOnly) {
    const edit = h("button", { class: "btn small ghost", type: "button" }, "Edit");
    edit.addEventListener("click", () => detail.replaceChildren(editForm(c, reload)));
    const remove = h("button", { class: "btn small ghost danger", type: "button" }, "Remove");
    remove.addEventListener("click", async () => {
      const ok = await confirmDialog({ title: `Remove ${c.name}?`, message: "Its models leave every model menu; chats that chose one answer with the default model.", confirm: "Remove", danger: true });
      if (!ok) return;
      try {
        await api(`${BASE}/${encodeURIComponent(c.name)}`, { method: "DELETE" });
        toast(`Removed ${c.name}.`);
        await refreshModels();
        await reload();
      } catch (error) { toast(error.message, { kind: "error" }); }
    });
    buttons.append(edit, remove);
  }
  return item;
}

function editForm(c, reload) {
  const kind = kindSelect(c.kind);
  const url = h("input", { class: "input", type: "url", value: c.baseUrl, spellcheck: "false", maxLength: 2000 });
  const key = keyField(c.apiKeySet ? "Empty: keep the stored key" : "Optional");
  const dropKey = h("input", { type: "checkbox" });
  const enabled = h("input", { type: "checkbox", checked: c.enabled });
  const save = h("button", { class: "btn primary small", type: "submit" }, "Save");
  const form = h("form", { class: "stack", "aria-label": `Edit ${c.name}` },
    h("div", { class: "grid-form" }, field("Kind", kind), field("Server address", url), field("New API key", key)),
    c.apiKeySet ? h("label", { class: "check" }, dropKey, h("span", {}, "Remove the stored key")) : null,
    h("label", { class: "switch" }, enabled, h("span", {}, "On (its models are offered)")),
    h("div", { class: "save-bar" }, save));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { kind: kind.value, baseUrl: url.value.trim(), enabled: enabled.checked };
    if (dropKey.checked) body.apiKey = null;
    else if (key.value) body.apiKey = key.value;
    save.disabled = true;
    try {
      await api(`${BASE}/${encodeURIComponent(c.name)}`, { method: "PATCH", body });
      toast(`Saved ${c.name}.`);
      await refreshModels(true);
      await reload();
    } catch (error) { setFieldError(url, error.message); } finally { save.disabled = false; }
  });
  return form;
}

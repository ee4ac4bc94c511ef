// Webhooks (admins): the URLs the server tells when something happens, each with the
// events it wants, whether it is on, and how its last delivery went; one added (its
// secret shown once, with a copy button), its events changed, switched on or off, sent
// a test event, or removed; and its delivery log.

import { addWebhook, listDeliveries, listWebhooks, removeWebhook, rotateSecret, testWebhook, updateWebhook } from "./webhooks_api.js";
import {
  clear, confirmDialog, copyText, emptyState, errorNotice, field, fmtDate, h, icon, loading, modal, setFieldError, timeEl, toast,
} from "./dom.js";

// -- words for people ------------------------------------------------------------------------------
const STATUS = {
  delivered: { label: "Delivered", kind: "ok" },
  failed: { label: "Failed", kind: "danger" },
  refused: { label: "Not sent", kind: "danger" },
};
const NAME_RULE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

function statusBadge(status) {
  const words = STATUS[status] || { label: status, kind: "" };
  return h("span", { class: ["badge", words.kind] }, h("span", { class: "dot" }), words.label);
}

function eventsWords(hook) {
  if (!hook.events.length) return "Every event";
  return hook.events.length <= 2 ? hook.events.join(", ") : `${hook.events.length} events`;
}

function outcomeWords(delivery) {
  const code = delivery.responseCode ? ` (${delivery.responseCode})` : "";
  const took = delivery.latencyMs != null ? ` in ${delivery.latencyMs} ms` : "";
  return `${(STATUS[delivery.status] || { label: delivery.status }).label}${code}${took}`;
}

// -- the page ------------------------------------------------------------------------------------------
export async function render(container) {
  const listHost = h("section", { class: "stack", "aria-labelledby": "webhooks-title" }, loading());
  const formHost = h("div", {});
  container.append(h("div", { class: "page" }, h("div", { class: "page-inner stack" },
    h("div", { class: "page-head" }, h("h1", {}, "Webhooks"),
      h("p", { class: "sub" }, "Tell other tools (chat, CI, automations) when something happens here: each event is POSTed as JSON, signed with the webhook's secret.")),
    listHost, formHost)));

  let alive = true;
  let eventNames = {};

  async function load() {
    let answer;
    try {
      answer = await listWebhooks();
    } catch (error) {
      if (alive) clear(listHost, errorNotice(error, () => load()));
      return;
    }
    if (!alive) return;
    eventNames = answer.eventNames || {};
    paintList(listHost, answer.webhooks || [], eventNames, load);
    if (!formHost.firstChild) formHost.append(addForm(eventNames, load));
  }

  await load();
  return { title: "Webhooks", cleanup: () => { alive = false; } };
}

function paintList(host, hooks, eventNames, reload) {
  const heading = h("h2", { id: "webhooks-title" }, `Webhooks (${hooks.length})`);
  if (!hooks.length) {
    clear(host, heading, emptyState({ iconName: "link", title: "No webhooks yet", body: "Add one below: a URL, and the events it should hear about." }));
    return;
  }
  const table = h("div", { class: "table-wrap responsive" }, h("table", { class: "data", "aria-label": "Webhooks" },
    h("thead", {}, h("tr", {}, ["Name", "Events", "Last delivery", "On", ""].map((t) => h("th", { scope: "col" }, t || h("span", { class: "sr-only" }, "Actions"))))),
    h("tbody", {}, hooks.map((hook) => hookRows(hook, eventNames, reload)))));
  clear(host, heading, table);
}

// A webhook's row, and the row below it that shows its delivery log when asked.
function hookRows(hook, eventNames, reload) {
  const logBody = h("div", { "aria-live": "polite" }, loading());
  const logRow = h("tr", { class: "log-row", hidden: true }, h("td", { colspan: 5, "aria-label": `Deliveries to ${hook.name}` }, logBody));
  const toggle = h("button", { class: "btn ghost small", type: "button", "aria-expanded": "false" }, icon("list", "sm"), "Log");
  const showLog = async () => {
    try { clear(logBody, deliveriesTable(await listDeliveries(hook.name))); } catch (error) { clear(logBody, errorNotice(error)); }
  };
  toggle.addEventListener("click", () => {
    const open = logRow.hidden;
    logRow.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    if (open) showLog();
  });

  const enabled = h("input", { type: "checkbox", checked: hook.enabled, "aria-label": `Send events to ${hook.name}` });
  enabled.addEventListener("change", async () => {
    try {
      await updateWebhook(hook.name, { enabled: enabled.checked });
      await reload(); // the list is repainted before the message says so (no row swapped under a click)
      toast(`${hook.name} is ${enabled.checked ? "on" : "off"}.`);
    } catch (error) { enabled.checked = hook.enabled; toast(error.message, { kind: "error" }); }
  });
  const test = h("button", { class: "btn small", type: "button", "aria-label": `Send a test event to ${hook.name}` }, icon("send", "sm"), "Test");
  test.addEventListener("click", async () => {
    test.disabled = true;
    try {
      const sent = await testWebhook(hook.name);
      await reload(); // repaint the row's last delivery first, then say how it went
      toast(sent.status === "delivered" ? `Test event delivered${sent.latencyMs != null ? ` in ${sent.latencyMs} ms` : ""}.` : `Test event not delivered: ${sent.error || sent.status}`,
        { kind: sent.status === "delivered" ? "" : "error" });
    } catch (error) { toast(error.message, { kind: "error" }); } finally { test.disabled = false; }
  });
  const edit = h("button", { class: "btn ghost small icon-only", type: "button", "aria-label": `Change ${hook.name}`, on: { click: () => {
    const form = editForm(hook, eventNames, reload);
    const dlg = modal({ title: `Change ${hook.name}`, body: form });
    form.addEventListener("saved", () => dlg.close());
  } } }, icon("edit", "sm"));
  const rotate = h("button", { class: "btn ghost small icon-only", type: "button", "aria-label": `New secret for ${hook.name}`, title: "New secret", on: { click: async () => {
    if (!(await confirmDialog({ title: `A new secret for ${hook.name}?`, message: "The current secret stops signing deliveries at once: the receiver must be given the new one.", confirm: "Make a new secret" }))) return;
    try { showSecret(await rotateSecret(hook.name), "rotated"); } catch (error) { toast(error.message, { kind: "error" }); }
  } } }, icon("key", "sm"));
  const remove = h("button", { class: "btn ghost small icon-only", type: "button", "aria-label": `Remove ${hook.name}`, on: { click: async () => {
    if (!(await confirmDialog({ title: `Remove ${hook.name}?`, message: "It gets no more events, and its delivery log goes with it.", confirm: "Remove", danger: true }))) return;
    try { await removeWebhook(hook.name); toast(`${hook.name} removed.`); reload(); } catch (error) { toast(error.message, { kind: "error" }); }
  } } }, icon("trash", "sm"));

  const last = hook.lastDelivery;
  const row = h("tr", { dataset: { webhook: hook.name } },
    h("td", { class: "primary-cell" }, h("div", { class: "cell-title" }, h("strong", {}, hook.name), h("small", { class: "mono" }, hook.url))),
    h("td", { "data-label": "Events", title: hook.events.join(", ") }, eventsWords(hook)),
    h("td", { "data-label": "Last delivery" }, last ? h("div", { class: "row" }, statusBadge(last.status), timeEl(last.attemptedAt)) : h("span", { class: "muted" }, "None yet"),
      hook.enabled ? null : h("div", { class: "small field-error" }, hook.disabledReason || "Off"), toggle),
    h("td", { "data-label": "On" }, h("label", { class: "switch" }, enabled, h("span", { class: "small" }, hook.enabled ? "on" : "off"))),
    h("td", { class: "actions" }, test, edit, rotate, remove));
  return [row, logRow];
}

function deliveriesTable(deliveries) {
  if (!deliveries.length) return h("p", { class: "muted small" }, "Nothing sent yet. Send a test event to see how the receiver answers.");
  return h("table", { class: "data small", "aria-label": "Deliveries" },
    h("thead", {}, h("tr", {}, ["When", "Event", "Attempt", "Outcome", "Error"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, deliveries.map((d) => h("tr", {},
      h("td", {}, fmtDate(d.attemptedAt)),
      h("td", {}, d.event),
      h("td", {}, String(d.attempt)),
      h("td", {}, outcomeWords(d)),
      h("td", { class: "small" }, d.error || "")))));
}

// -- the events a webhook wants --------------------------------------------------------------------
// "Every event", or the ones ticked; answers a function giving the list ([] = every one).
function eventPicker(eventNames, chosen = []) {
  const every = h("input", { type: "checkbox", checked: !chosen.length });
  const boxes = Object.entries(eventNames).map(([name, meaning]) => {
    const box = h("input", { type: "checkbox", value: name, checked: chosen.includes(name) });
    return { box, label: h("label", { class: "check" }, box, h("span", {}, h("code", {}, name), h("span", { class: "hint" }, meaning))) };
  });
  const list = h("div", { class: "stack small", hidden: !chosen.length }, boxes.map((b) => b.label));
  every.addEventListener("change", () => { list.hidden = every.checked; });
  const node = h("fieldset", { class: "stack" }, h("legend", {}, "Events"),
    h("label", { class: "check" }, every, h("span", {}, "Every event")), list);
  return { node, value: () => (every.checked ? [] : boxes.filter((b) => b.box.checked).map((b) => b.box.value)) };
}

// -- adding, changing ------------------------------------------------------------------------------
function addForm(eventNames, reload) {
  const name = h("input", { class: "input", placeholder: "e.g. ci", autocapitalize: "none", spellcheck: "false", maxLength: 64 });
  const url = h("input", { class: "input", type: "url", placeholder: "https://hooks.example.com/autorag", spellcheck: "false", autocomplete: "off", autocapitalize: "none" });
  const picker = eventPicker(eventNames);
  const save = h("button", { class: "btn primary", type: "submit" }, icon("plus", "sm"), " Add webhook");
  const form = h("form", { class: "card", "aria-label": "Add a webhook" },
    h("header", {}, h("h2", {}, "Add a webhook"), h("p", {}, "Its secret is shown once, when it is added: the receiver checks each delivery's signature with it.")),
    h("div", { class: "grid-form" }, field("Name", name), field("URL", url, { hint: "Where to POST. Addresses inside this network are refused unless the server allows them." })),
    picker.node,
    h("div", { class: "save-bar" }, save));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    setFieldError(name, "");
    setFieldError(url, "");
    if (!NAME_RULE.test(name.value)) { setFieldError(name, "Letters, digits, '.', '_' or '-' (up to 64)."); name.focus(); return; }
    if (!url.value.trim()) { setFieldError(url, "Say where to send the events."); url.focus(); return; }
    const events = picker.value();
    save.disabled = true;
    try {
      const made = await addWebhook({ name: name.value, url: url.value.trim(), events });
      name.value = "";
      url.value = "";
      showSecret(made);
      reload();
    } catch (error) {
      setFieldError(/name|exists/i.test(error.message) ? name : url, error.message);
    } finally { save.disabled = false; }
  });
  return form;
}

function showSecret(made, why = "added") {
  const value = h("input", { class: "input mono", readOnly: true, value: made.secret, "aria-label": "Webhook secret" });
  const copy = h("button", { class: "btn", type: "button", on: { click: async () => { await copyText(made.secret); toast("Secret copied."); } } }, icon("copy", "sm"), "Copy");
  const done = h("button", { class: "btn primary", type: "button", on: { click: () => dlg.close() } }, "Done");
  const title = why === "rotated" ? `New secret for “${made.name}”` : `Webhook “${made.name}” added`;
  const dlg = modal({ title, body: [
    h("div", { class: "notice warn" }, icon("alert"), h("div", { class: "notice-body" }, "Copy the secret now: it is shown once and cannot be read again.")),
    h("div", { class: "secret-box" }, value, copy),
    h("p", { class: "hint" }, "Each delivery carries ", h("code", {}, "X-Webhook-Signature: sha256=…"), ", the HMAC-SHA256 of the raw body keyed with this secret; ",
      h("code", {}, "X-Webhook-Id"), " is the same for every retry of one event."),
  ], foot: [done] });
  value.select();
}

/** The form changing a webhook's URL and events; fires "saved" when it did. */
function editForm(hook, eventNames, reload) {
  const url = h("input", { class: "input", type: "url", value: hook.url, spellcheck: "false", autocomplete: "off", autocapitalize: "none" });
  const picker = eventPicker(eventNames, hook.events);
  const save = h("button", { class: "btn primary", type: "submit" }, "Save");
  const form = h("form", { class: "stack", "aria-label": `Change ${hook.name}` }, field("URL", url), picker.node, h("div", { class: "save-bar" }, save));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    setFieldError(url, "");
    save.disabled = true;
    try {
      await updateWebhook(hook.name, { url: url.value.trim(), events: picker.value() });
      toast(`${hook.name} saved.`);
      form.dispatchEvent(new Event("saved"));
      reload();
    } catch (error) {
      save.disabled = false;
      setFieldError(url, error.message);
    }
  });
  return form;
}

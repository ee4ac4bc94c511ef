// Workspace settings: the agent (skills, prompt, plan mode, default model, constraints),
// search and ingestion settings, models and the global default, your own instructions,
// and (admins) the workspaces themselves.

import { api, ws } from "./api.js";
import { canConnect, connectionsCard } from "./connections.js";
import { clear, errorNotice, field, h, icon, inlineField, loading, setFieldError, toast } from "./dom.js";
import { canMaintain, maintenanceCard } from "./maintenance.js";
import { notificationsCard } from "./notifications.js";
import { app, refreshModels, reloadWorkspaces } from "./state.js";
import { modelWords, skillWords } from "./words.js";

const CONSTRAINTS = [
  ["localLLMOnly", "Local models only", "Hosted models are refused; answers come from models on this machine or network."],
  ["hybridSearchForced", "Always search first", "A hybrid search runs before every answer, even when the model would not ask for one."],
  ["citationRequired", "Require citations", "An answer with no supporting source is marked “No supporting evidence”."],
];

function saveButton(label = "Save") {
  return h("button", { class: "btn primary", type: "submit" }, label);
}

async function busy(button, fn) {
  const label = button.textContent;
  button.disabled = true;
  button.replaceChildren(h("span", { class: "spinner", "aria-hidden": "true" }), "Saving…");
  try { return await fn(); } finally {
    button.disabled = false;
    button.replaceChildren(label);
  }
}

function modelOptions(models, selected, emptyLabel) {
  const ids = models.map((m) => m.id);
  if (selected && !ids.includes(selected)) ids.push(selected);
  return [h("option", { value: "", selected: !selected }, emptyLabel),
    ...ids.map((id) => {
      const m = models.find((x) => x.id === id);
      return h("option", { value: id, selected: id === selected }, `${id}${m ? (m.available === false ? " — unavailable" : "") : " — not configured"}`);
    })];
}

export async function render(container) {
  const workspace = app.workspace;
  const base = ws(workspace);
  const canWrite = app.can("workspaces:write");
  const inner = h("div", { class: "page-inner" },
    h("div", { class: "page-head" }, h("h1", {}, "Settings"), h("p", { class: "sub" }, `Workspace ${workspace}`)));
  container.append(h("div", { class: "page" }, inner));
  const host = h("div", { class: "stack" }, loading("Loading settings…"));
  inner.append(host);

  let agent; let skills; let settings; let models; let instructions;
  try {
    [agent, skills, settings, models, instructions] = await Promise.all([
      api(`${base}/agent`),
      app.can("chat:use") ? api(`${base}/skills`) : Promise.resolve([]),
      api(`${base}/settings`),
      app.can("chat:use") ? refreshModels() : Promise.resolve(null),
      api("/api/auth/me/instructions"),
    ]);
  } catch (error) {
    clear(host, errorNotice(error, () => { container.replaceChildren(); render(container); }));
    return { title: "Settings" };
  }
  const modelList = (models && models.models) || [];
  const defaults = (models && models.defaults) || {};
  clear(host);
  if (!canWrite) host.append(h("div", { class: "notice" }, icon("info"), h("div", { class: "notice-body" }, "You can read these settings; changing them needs a manager or an admin.")));

  // -- agent --
  const skillBoxes = skills.map((s) => h("label", { class: "check" },
    h("input", { type: "checkbox", value: s.name, checked: agent.enabledSkills.includes(s.name), disabled: !canWrite }),
    h("span", {}, h("strong", {}, skillWords(s.name, s.description).label), h("span", { class: "hint" }, skillWords(s.name, s.description).about))));
  const planMode = h("input", { type: "checkbox", checked: agent.planMode, disabled: !canWrite });
  const prompt = h("textarea", { class: "input", rows: 5, value: agent.systemPrompt || "", disabled: !canWrite, placeholder: "Empty: the built-in prompt. Placeholders: {workspace}, {date}, {skills}.", maxLength: 20000 });
  const defaultModel = h("select", { class: "input", disabled: !canWrite },
    modelOptions(modelList, agent.defaultModel, `The default (${modelWords(defaults.globalDefault || defaults.environment)})`));
  const constraintBoxes = CONSTRAINTS.map(([key, label, hint]) => h("label", { class: "check" },
    h("input", { type: "checkbox", name: key, checked: Boolean(agent[key]), disabled: !canWrite }),
    h("span", {}, label, h("span", { class: "hint" }, hint))));
  const agentSave = saveButton();
  agentSave.disabled = !canWrite;
  const agentForm = h("form", { class: "card", "aria-labelledby": "agent-title" },
    h("header", {}, h("h2", { id: "agent-title" }, "Agent"), h("p", {}, "How answers are made in this workspace.")),
    h("fieldset", { class: "skills" }, h("legend", {}, "Enabled skills"), skillBoxes.length ? skillBoxes : h("p", { class: "muted" }, "No skills are available.")),
    h("div", { class: "grid-form" },
      field("Default model", defaultModel, { hint: "Used by chats that have not chosen a model.", className: "wide-field" }),
      h("div", { class: "field" }, h("label", { class: "switch" }, planMode, h("span", {}, "Plan first")), h("span", { class: "hint" }, "The agent writes a plan, shows it, then follows it."))),
    field("System prompt", prompt),
    h("fieldset", { class: "stack" }, h("legend", {}, "Constraints"), constraintBoxes),
    h("div", { class: "save-bar" }, agentSave));
  agentForm.addEventListener("submit", (e) => {
    e.preventDefault();
    busy(agentSave, async () => {
      const body = {
        enabledSkills: skillBoxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value),
        planMode: planMode.checked,
        systemPrompt: prompt.value,
        defaultModel: defaultModel.value || null,
      };
      for (const box of constraintBoxes) { const i = box.querySelector("input"); body[i.name] = i.checked; }
      try {
        agent = await api(`${base}/agent`, { method: "PATCH", body });
        setFieldError(defaultModel, "");
        toast("Agent settings saved.");
        const chat = await import("./chat.js");
        const view = chat.activeView();
        if (view) { view.agent = agent; view.planMode = agent.planMode; view.planToggle.checked = agent.planMode; view.paintModel(); }
      } catch (error) {
        if (/model/i.test(error.message)) setFieldError(defaultModel, error.message);
        toast(error.message, { kind: "error" });
      }
    });
  });

  // -- search and ingestion --
  const defaultK = h("input", { class: "input", type: "number", min: 1, max: 200, value: settings.defaultK, disabled: !canWrite, inputmode: "numeric" });
  const redact = h("input", { type: "checkbox", checked: settings.redactOnIngest, disabled: !canWrite });
  const wsSave = saveButton();
  wsSave.disabled = !canWrite;
  const wsForm = h("form", { class: "card", "aria-labelledby": "ws-title" },
    h("header", {}, h("h2", { id: "ws-title" }, "Search and indexing")),
    field("Results per search", defaultK, { hint: "How many results a search returns when it does not say." }),
    h("label", { class: "check" }, redact, h("span", {}, "Redact documents as they are indexed",
      h("span", { class: "hint" }, "Stores chunks with secrets and personal data already replaced by [REDACTED], from now on (re-index for existing documents)."))),
    h("div", { class: "save-bar" }, wsSave));
  wsForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const kValue = Number(defaultK.value);
    if (!Number.isInteger(kValue) || kValue < 1 || kValue > 200) { setFieldError(defaultK, "A whole number from 1 to 200."); defaultK.focus(); return; }
    setFieldError(defaultK, "");
    busy(wsSave, async () => {
      try {
        settings = await api(`${base}/settings`, { method: "PATCH", body: { defaultK: kValue, redactOnIngest: redact.checked } });
        toast("Workspace settings saved.");
      } catch (error) { toast(error.message, { kind: "error" }); }
    });
  });

  // -- models --
  const modelsCard = h("section", { class: "card", "aria-labelledby": "models-title" });
  const paintModels = () => {
    const m = app.models || { providers: [], models: [], defaults: {} };
    const canSetGlobal = app.can("workspaces:admin") && app.me.workspaces === null;
    const globalSelect = h("select", { class: "input" }, modelOptions(m.models, m.defaults.globalDefault, `None chosen (${modelWords(m.defaults.environment)})`));
    const globalSave = h("button", { class: "btn", type: "button" }, "Set default");
    globalSave.addEventListener("click", () => busy(globalSave, async () => {
      try {
        await api("/api/models/default", { method: "PUT", body: { model: globalSelect.value || null } });
        await refreshModels();
        toast("Default model saved for every workspace.");
        paintModels();
      } catch (error) { toast(error.message, { kind: "error" }); }
    }));
    clear(modelsCard,
      h("header", {}, h("h2", { id: "models-title", class: "spacer" }, "Models"),
        h("button", { class: "btn ghost small", type: "button", on: { click: async () => { try { await refreshModels(true); paintModels(); toast("Availability checked."); } catch (error) { toast(error.message, { kind: "error" }); } } } }, icon("refresh", "sm"), "Check now"),
        h("p", {}, canConnect() ? "The models of the servers connected below; availability is checked every 30 seconds." : "The models on offer; an admin connects model servers here. Availability is checked every 30 seconds.")),
      h("ul", { class: "model-list", "aria-label": "Models" }, m.models.map((model) => {
        const provider = m.providers.find((p) => p.name === model.provider) || {};
        const status = model.available === false
          ? h("span", { class: "badge danger" }, h("span", { class: "dot" }), "unavailable")
          : model.available ? h("span", { class: "badge ok" }, h("span", { class: "dot" }), "available") : h("span", { class: "badge" }, "not checked yet");
        return h("li", {},
          h("div", { class: "row" }, h("strong", { class: "mono" }, model.id), model.parameters ? h("span", { class: "muted small" }, model.parameters) : null,
            h("span", { class: "spacer" }), status,
            model.capabilities.map((c) => h("span", { class: "badge info" }, c)), model.local ? null : h("span", { class: "badge warn" }, "hosted")),
          model.available === false && provider.error ? h("div", { class: "hint" }, provider.error) : null);
      })),
      canSetGlobal ? inlineField("Default model for every workspace", globalSelect, globalSave, { hint: "Under each chat's and workspace's own choice; for every workspace." }) : null);
  };
  if (app.can("chat:use")) paintModels();

  // -- your instructions --
  const mine = h("textarea", { class: "input", rows: 4, value: instructions.instructions || "", maxLength: 4000, placeholder: "For example: answer in French; keep answers short." });
  const mineSave = saveButton("Save instructions");
  const mineForm = h("form", { class: "card", "aria-labelledby": "mine-title" },
    h("header", {}, h("h2", { id: "mine-title" }, "Your instructions"), h("p", {}, "The agent follows them in all your chats, in every workspace.")),
    field("Instructions", mine, { hint: "Up to 4000 characters." }),
    h("div", { class: "save-bar" }, mineSave));
  mineForm.addEventListener("submit", (e) => {
    e.preventDefault();
    busy(mineSave, async () => {
      try {
        await api("/api/auth/me/instructions", { method: "PUT", body: { instructions: mine.value } });
        toast("Your instructions are saved.");
      } catch (error) { toast(error.message, { kind: "error" }); }
    });
  });

  // -- workspaces (admins) --
  let workspacesCard = null;
  if (app.can("workspaces:admin") && app.me.workspaces === null) {
    const name = h("input", { class: "input", pattern: "[a-z0-9][a-z0-9_\\-]{0,62}", placeholder: "e.g. research", autocapitalize: "none", spellcheck: "false" });
    const create = h("button", { class: "btn", type: "submit" }, icon("plus", "sm"), "Create");
    workspacesCard = h("form", { class: "card", "aria-labelledby": "wss-title" },
      h("header", {}, h("h2", { id: "wss-title" }, "Workspaces"), h("p", {}, `${app.workspaces.length} workspace${app.workspaces.length === 1 ? "" : "s"}: ${app.workspaces.join(", ")}.`)),
      inlineField("New workspace", name, create, { hint: "Lowercase letters, digits, '-' and '_'." }));
    workspacesCard.addEventListener("submit", async (e) => {
      e.preventDefault();
      if (!/^[a-z0-9][a-z0-9_-]{0,62}$/.test(name.value)) { setFieldError(name, "Lowercase letters, digits, '-' and '_' (up to 63)."); name.focus(); return; }
      setFieldError(name, "");
      try {
        const made = await api("/api/workspaces", { method: "POST", body: { name: name.value } });
        toast(`Workspace ${made.name} created.`);
        await reloadWorkspaces(made.name);
      } catch (error) { setFieldError(name, error.message); }
    });
  }

  host.append(h("div", { class: "cards-2" }, h("div", { class: "stack" }, agentForm), h("div", { class: "stack" }, wsForm, app.can("chat:use") ? modelsCard : null, canConnect() ? connectionsCard() : null, mineForm, app.can("push:use") ? notificationsCard() : null, workspacesCard)));
  if (canMaintain()) host.append(maintenanceCard()); // Maintenance: re-index every workspace
  const unsubscribe = app.on("models", () => { if (modelsCard.isConnected) paintModels(); });
  return { title: "Settings", cleanup: unsubscribe };
}

// Tool servers (MCP), for the workspace's admins: the MCP servers installed in this
// workspace, whose allowed tools the assistant may call while answering (each call's
// sources are cited). A server is a command started on this machine or a URL; one is
// installed (reached once to list its tools), its allowed tools changed, tested, removed.

import { installServer, listServers, testServer, uninstallServer, updateServer } from "./mcp_api.js";
import { clear, confirmDialog, emptyState, errorNotice, field, h, icon, loading, setFieldError, timeEl, toast } from "./dom.js";
import { app } from "./state.js";

const NAME_RULE = /^[a-z0-9][a-z0-9-]{0,31}$/;

/** A command line split into its words as a shell would (quotes kept together); never run by a shell. */
export function splitCommand(line) {
  const words = [];
  let word = null;
  let quote = null;
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = null;
      else if (c === "\\" && quote === '"' && i + 1 < line.length) { word += line[i + 1]; i += 1; }
      else word += c;
    } else if (c === "'" || c === '"') { quote = c; word = word ?? ""; }
    else if (/\s/.test(c)) { if (word !== null) { words.push(word); word = null; } }
    else if (c === "\\" && i + 1 < line.length) { word = (word ?? "") + line[i + 1]; i += 1; }
    else word = (word ?? "") + c;
  }
  if (quote) throw new Error("A quote is not closed.");
  if (word !== null) words.push(word);
  return words;
}

function headersFrom(text) {
  const headers = {};
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const at = line.indexOf(":");
    if (at < 1) throw new Error(`“${line.slice(0, 40)}” is not Name: value.`);
    headers[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return headers;
}

// -- the page ------------------------------------------------------------------------------------------
export async function render(container) {
  const workspace = app.workspace;
  const listHost = h("section", { class: "stack", "aria-labelledby": "mcp-title" }, loading());
  const formHost = h("div", {});
  container.append(h("div", { class: "page" }, h("div", { class: "page-inner stack" },
    h("div", { class: "page-head" }, h("h1", {}, "Tool servers (MCP)"),
      h("p", { class: "sub" }, `Tools the assistant may use while answering in ${workspace}: each comes from an MCP server installed here. What a tool returns is treated as information, never as instructions, and the links it gives are cited.`)),
    listHost, formHost)));

  let alive = true;
  async function load() {
    let servers;
    try {
      servers = await listServers(workspace);
    } catch (error) {
      if (alive) clear(listHost, errorNotice(error, () => load()));
      return;
    }
    if (!alive) return;
    paintList(listHost, workspace, servers, load);
    if (!formHost.firstChild) formHost.append(installForm(workspace, load));
  }
  await load();
  return { title: "Tool servers (MCP)", cleanup: () => { alive = false; } };
}

function paintList(host, workspace, servers, reload) {
  const heading = h("h2", { id: "mcp-title" }, `Installed servers (${servers.length})`);
  if (!servers.length) {
    clear(host, heading, emptyState({ iconName: "link", title: "No tool servers yet", body: "Install one below: a command that starts an MCP server on this machine, or its URL." }));
    return;
  }
  clear(host, heading, ...servers.map((server) => serverCard(workspace, server, reload)));
}

function serverCard(workspace, server, reload) {
  const where = server.transport === "stdio" ? server.command.join(" ") : server.url;
  const boxes = server.tools.map((tool) => {
    const box = h("input", { type: "checkbox", value: tool.name, checked: tool.allowed, "aria-label": `Allow ${tool.name}` });
    return { box, label: h("label", { class: "check" }, box, h("span", {}, h("code", {}, tool.name), tool.description ? h("span", { class: "hint" }, tool.description) : null)) };
  });
  const save = h("button", { class: "btn small primary", type: "button" }, "Save allowed tools");
  save.addEventListener("click", async () => {
    save.disabled = true;
    try {
      const tools = boxes.filter((b) => b.box.checked).map((b) => b.box.value);
      await updateServer(workspace, server.name, { tools });
      toast(tools.length ? `${server.name}: the assistant may use ${tools.join(", ")}.` : `${server.name}: no tool is offered to the assistant.`);
      reload();
    } catch (error) { toast(error.message, { kind: "error" }); } finally { save.disabled = false; }
  });
  const test = h("button", { class: "btn small", type: "button", "aria-label": `Test ${server.name}` }, icon("send", "sm"), "Test");
  test.addEventListener("click", async () => {
    test.disabled = true;
    try {
      const outcome = await testServer(workspace, server.name);
      if (outcome.ok) {
        const gone = outcome.missing.length ? ` No longer offered by the server: ${outcome.missing.join(", ")}.` : "";
        toast(`${server.name} answered in ${outcome.latencyMs} ms with ${outcome.tools.length} tools.${gone}`);
        reload();
      } else toast(`${server.name} could not be reached: ${outcome.error}`, { kind: "error" });
    } catch (error) { toast(error.message, { kind: "error" }); } finally { test.disabled = false; }
  });
  const remove = h("button", { class: "btn ghost small", type: "button", "aria-label": `Remove ${server.name}` }, icon("trash", "sm"), "Remove");
  remove.addEventListener("click", async () => {
    if (!(await confirmDialog({ title: `Remove ${server.name}?`, message: "Its tools are no longer offered to the assistant in this workspace.", confirm: "Remove", danger: true }))) return;
    try { await uninstallServer(workspace, server.name); toast(`${server.name} removed.`); reload(); } catch (error) { toast(error.message, { kind: "error" }); }
  });
  const limit = server.timeoutS ? ` · a call may take ${server.timeoutS} s` : "";
  return h("article", { class: "card stack", dataset: { mcpServer: server.name }, "aria-label": server.name },
    h("header", {}, h("h3", {}, server.name),
      h("p", { class: "small" }, server.transport === "stdio" ? "Command: " : "URL: ", h("code", { class: "mono" }, where), limit),
      h("p", { class: "small muted" }, "Installed ", timeEl(server.createdAt))),
    h("fieldset", { class: "stack" }, h("legend", {}, "Tools the assistant may use"),
      boxes.length ? boxes.map((b) => b.label) : h("p", { class: "muted small" }, "The server listed no tools.")),
    h("div", { class: "save-bar" }, save, test, remove));
}

// -- installing ----------------------------------------------------------------------------------------
function installForm(workspace, reload) {
  const name = h("input", { class: "input", placeholder: "e.g. files", autocapitalize: "none", spellcheck: "false", maxLength: 32 });
  const kind = h("select", { class: "input", "aria-label": "How it is reached" },
    h("option", { value: "stdio" }, "A command on this machine"), h("option", { value: "http" }, "A URL (streamable HTTP)"));
  const command = h("input", { class: "input mono", placeholder: "npx -y @modelcontextprotocol/server-filesystem /srv/docs", spellcheck: "false", autocapitalize: "none" });
  const url = h("input", { class: "input", type: "url", placeholder: "https://tools.example.com/mcp", spellcheck: "false", autocapitalize: "none" });
  const headers = h("textarea", { class: "input mono", rows: 2, placeholder: "Authorization: Bearer …", spellcheck: "false" });
  const tools = h("input", { class: "input", placeholder: "All the tools it lists", spellcheck: "false", autocapitalize: "none" });
  const timeout = h("input", { class: "input", type: "number", min: "0.1", max: "600", step: "0.1", placeholder: "The assistant's limit" });
  const commandField = field("Command", command, { hint: "Started without a shell, with a minimal environment (none of this server's secrets)." });
  const urlField = field("URL", url, { hint: "Addresses inside this network are refused unless the server allows them." });
  const headersField = field("Headers", headers, { hint: "One per line, Name: value. Stored encrypted, never shown again." });
  const showKind = () => {
    const http = kind.value === "http";
    commandField.hidden = http;
    urlField.hidden = !http;
    headersField.hidden = !http;
  };
  kind.addEventListener("change", showKind);
  showKind();
  const save = h("button", { class: "btn primary", type: "submit" }, icon("plus", "sm"), " Install");
  const form = h("form", { class: "card", "aria-label": "Install a tool server" },
    h("header", {}, h("h2", {}, "Install a tool server"), h("p", {}, "It is started (or reached) once now, to list its tools.")),
    h("div", { class: "grid-form" }, field("Name", name), field("Reached by", kind), commandField, urlField, headersField,
      field("Allowed tools", tools, { hint: "Comma-separated; empty: every tool it lists now." }),
      field("Time limit per call (s)", timeout, { hint: "Optional; the assistant's own limit always applies." })),
    h("div", { class: "save-bar" }, save));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    for (const control of [name, command, url, headers, tools]) setFieldError(control, "");
    if (!NAME_RULE.test(name.value)) { setFieldError(name, "Lowercase letters, digits or '-' (up to 32)."); name.focus(); return; }
    const body = { name: name.value };
    try {
      if (kind.value === "stdio") {
        body.command = splitCommand(command.value.trim());
        if (!body.command.length) throw new Error("Say which command starts the server.");
      } else {
        if (!url.value.trim()) throw new Error("Say where the server is.");
        body.url = url.value.trim();
        body.headers = headersFrom(headers.value);
      }
    } catch (error) {
      const control = kind.value === "stdio" ? command : (/Name: value/.test(error.message) ? headers : url);
      setFieldError(control, error.message);
      control.focus();
      return;
    }
    const wanted = tools.value.split(",").map((t) => t.trim()).filter(Boolean);
    if (wanted.length) body.tools = wanted;
    if (timeout.value) body.timeoutS = Number(timeout.value);
    save.disabled = true;
    save.textContent = " Installing…";
    try {
      const made = await installServer(workspace, body);
      toast(`${made.name} installed: the assistant may use ${made.allowed.join(", ") || "no tool yet"}.`);
      for (const control of [name, command, url, headers, tools, timeout]) control.value = "";
      reload();
    } catch (error) {
      setFieldError(/tool/i.test(error.message) ? tools : /name/i.test(error.message) && !/server '/.test(error.message) ? name : (kind.value === "stdio" ? command : url), error.message);
    } finally {
      save.disabled = false;
      clear(save, icon("plus", "sm"), " Install");
    }
  });
  return form;
}

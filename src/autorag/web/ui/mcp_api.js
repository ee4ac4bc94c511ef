// A workspace's MCP tool servers over the HTTP API: listed, installed, their allowlist
// changed, tested, uninstalled. Routes: /api/workspaces/{ws}/mcp-servers[/{name}[/test]].

import { api } from "./api.js";

const base = (workspace) => `/api/workspaces/${encodeURIComponent(workspace)}/mcp-servers`;
const one = (workspace, name) => `${base(workspace)}/${encodeURIComponent(name)}`;

/** The servers: [{name, transport, command, url, headerNames, tools, allowed, timeoutS, …}] */
export const listServers = async (workspace) => (await api(base(workspace))).servers || [];
/** ``server``: {name, command: [argv] | url, headers?, tools?, timeoutS?}; the server is reached once. */
export const installServer = (workspace, server) => api(base(workspace), { method: "POST", body: server });
/** ``changes``: any of {tools: [names], timeoutS}. */
export const updateServer = (workspace, name, changes) => api(one(workspace, name), { method: "PATCH", body: changes });
export const uninstallServer = (workspace, name) => api(one(workspace, name), { method: "DELETE" });
/** {ok, tools, missing, latencyMs, error} */
export const testServer = (workspace, name) => api(`${one(workspace, name)}/test`, { method: "POST", body: {} });

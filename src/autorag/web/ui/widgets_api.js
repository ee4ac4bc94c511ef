// A workspace's chat widgets over the HTTP API: listed, created, changed, removed.
// Routes: /api/workspaces/{ws}/widgets[/{widgetId}].

import { api } from "./api.js";

const base = (workspace) => `/api/workspaces/${encodeURIComponent(workspace)}/widgets`;
const one = (workspace, id) => `${base(workspace)}/${encodeURIComponent(id)}`;

/** The widgets: [{publicId, name, enabled, allowedOrigins, model, greeting, theme, visitorPerMinute, widgetPerMinute, ragContext, snippet, …}] */
export const listWidgets = async (workspace) => (await api(base(workspace))).widgets || [];
/** ``widget``: {name, allowedOrigins, model?, greeting?, theme?, visitorPerMinute?, widgetPerMinute?, ragContext?, enabled?} */
export const createWidget = (workspace, widget) => api(base(workspace), { method: "POST", body: widget });
/** ``changes``: any of the fields above; ``model`` and ``ragContext`` may be null (cleared). */
export const updateWidget = (workspace, id, changes) => api(one(workspace, id), { method: "PATCH", body: changes });
export const removeWidget = (workspace, id) => api(one(workspace, id), { method: "DELETE" });

// Webhooks over the HTTP API: the webhooks (with the events one may want), one added
// (its secret answered this once), changed, switched, removed, tested, and its log.
// Routes: /api/webhooks[/{name}[/test|/deliveries|/rotate-secret]].

import { api } from "./api.js";

const BASE = "/api/webhooks";
const one = (name) => `${BASE}/${encodeURIComponent(name)}`;

/** {webhooks: [...], eventNames: {name: meaning}} */
export const listWebhooks = () => api(BASE);
/** ``hook``: {name, url, events}. Answers the webhook with its ``secret`` (shown once). */
export const addWebhook = (hook) => api(BASE, { method: "POST", body: hook });
/** ``changes``: any of {url, events, enabled}. */
export const updateWebhook = (name, changes) => api(one(name), { method: "PATCH", body: changes });
export const removeWebhook = (name) => api(one(name), { method: "DELETE" });
/** A new secret for the webhook, answered this once (with the webhook). */
export const rotateSecret = (name) => api(`${one(name)}/rotate-secret`, { method: "POST", body: {} });
export const testWebhook = (name) => api(`${one(name)}/test`, { method: "POST", body: {} });
export const listDeliveries = async (name, limit = 50) => (await api(`${one(name)}/deliveries?limit=${limit}`)).deliveries || [];

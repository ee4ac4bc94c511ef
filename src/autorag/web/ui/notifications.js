// Notifications (Web Push) in the user's settings: "Turn on notifications" is the only
// thing that asks the browser's permission (never on page load), then registers the
// service worker (/sw.js), subscribes with the server's VAPID key and hands the
// subscription to the server; the topics are switches. Admins may send a test.

import { api } from "./api.js";
import { clear, h, icon, toast } from "./dom.js";
import { app } from "./state.js";

const BASE = "/api/push";

function supported() {
  return "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

function keyBytes(base64url) {
  const text = atob(base64url.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(base64url.length / 4) * 4, "="));
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

/** This browser's subscription, if it has one (asks nothing of the user). */
async function currentSubscription() {
  const registration = await navigator.serviceWorker.getRegistration("/");
  return registration ? registration.pushManager.getSubscription() : null;
}

async function turnOn() {
  // First, while the click still counts as the user's: the browser's own prompt.
  const permission = await Notification.requestPermission();
  if (permission !== "granted") throw new Error(permission === "denied"
    ? "Notifications are blocked for this site: allow them in the browser's site settings."
    : "Notifications were not allowed.");
  const [{ publicKey }, registration] = await Promise.all([
    api(`${BASE}/vapid-key`, { auth: false }),
    navigator.serviceWorker.register("/sw.js", { scope: "/" }).then(() => navigator.serviceWorker.ready),
  ]);
  const subscription = await registration.pushManager.getSubscription()
    || await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(publicKey) });
  await api(`${BASE}/subscribe`, { method: "POST", body: subscription.toJSON() });
}

async function turnOff(subscription) {
  try { await api(`${BASE}/subscribe`, { method: "DELETE", body: { endpoint: subscription.endpoint } }); } catch (error) {
    if (error.status !== 404) throw error; // not this user's on the server: still drop it here
  }
  await subscription.unsubscribe();
}

function topicSwitch(topic, onChange) {
  const input = h("input", { type: "checkbox", checked: topic.enabled, name: topic.topic });
  input.addEventListener("change", () => onChange(topic.topic, input));
  return h("div", { class: "field" },
    h("label", { class: "switch" }, input, h("span", {}, topic.label)),
    h("span", { class: "hint" }, topic.description));
}

export function notificationsCard() {
  const card = h("section", { class: "card", "aria-labelledby": "notifications-title" });
  const body = h("div", { class: "stack" });
  clear(card, h("header", {}, h("h2", { id: "notifications-title" }, "Notifications"),
    h("p", {}, "Notifications in this browser when something needs you, even with AutoRAG closed.")), body);

  const setTopic = async (name, input) => {
    try {
      await api(`${BASE}/preferences`, { method: "PUT", body: { topics: { [name]: input.checked } } });
    } catch (error) { input.checked = !input.checked; toast(error.message, { kind: "error" }); }
  };

  const paint = async () => {
    if (!supported()) {
      clear(body, h("p", { class: "muted" }, "This browser cannot show notifications from a web page."));
      return;
    }
    let preferences; let subscription; let server;
    try {
      [preferences, subscription, server] = await Promise.all([api(`${BASE}/preferences`), currentSubscription(), api(`${BASE}/vapid-key`, { auth: false })]);
    } catch (error) { clear(body, h("p", { class: "hint" }, error.message)); return; }
    if (!server.enabled) {
      clear(body, h("p", { class: "muted" }, "Notifications are turned off on this server."));
      return;
    }
    const on = Boolean(subscription) && Notification.permission === "granted";
    const button = h("button", { class: on ? "btn" : "btn primary", type: "button" }, on ? "Turn off in this browser" : "Turn on notifications");
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        if (on) { await turnOff(subscription); toast("Notifications are off in this browser."); } else { await turnOn(); toast("Notifications are on in this browser."); }
      } catch (error) { toast(error.message, { kind: "error" }); }
      button.disabled = false;
      paint();
    });
    const test = app.can("push:admin") && on
      ? h("button", { class: "btn ghost", type: "button", on: { click: async () => {
        try {
          const sent = await api(`${BASE}/test`, { method: "POST", body: {} });
          toast(sent.sent ? `Test sent to ${sent.sent} browser${sent.sent === 1 ? "" : "s"}.` : "No browser took the test.", { kind: sent.sent ? "" : "error" });
        } catch (error) { toast(error.message, { kind: "error" }); }
      } } }, icon("send", "sm"), "Send a test")
      : null;
    const blocked = Notification.permission === "denied"
      ? h("p", { class: "hint" }, "Notifications are blocked for this site: allow them in the browser's site settings first.")
      : null;
    const topics = preferences.topics.filter((t) => t.applies);
    clear(body,
      h("div", { class: "row" }, button, test),
      blocked,
      h("fieldset", { class: "stack" }, h("legend", {}, "Notify me when"), topics.map((t) => topicSwitch(t, setTopic))));
  };
  paint();
  return card;
}

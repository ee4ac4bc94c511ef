// AutoRAG's service worker (served at /sw.js, so its scope is the whole UI): it shows
// the server's Web Push notifications and, on a click, opens the page one names (a page
// of this origin only) in the UI's window, or a new one.
"use strict";

self.addEventListener("install", () => { self.skipWaiting(); });
self.addEventListener("activate", (event) => { event.waitUntil(self.clients.claim()); });

function pageOf(url) {
  try {
    const page = new URL(url || "/", self.location.origin);
    if (page.origin === self.location.origin) return page.href;
  } catch { /* not a URL: the home page */ }
  return `${self.location.origin}/`;
}

function messageOf(event) {
  if (!event.data) return {};
  try { return event.data.json() || {}; } catch { return { body: event.data.text() }; }
}

self.addEventListener("push", (event) => {
  const message = messageOf(event);
  event.waitUntil(self.registration.showNotification(message.title || "AutoRAG", {
    body: message.body || "",
    icon: "/ui/favicon.svg",
    data: { url: pageOf(message.url) },
  }));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = pageOf(event.notification.data && event.notification.data.url);
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    for (const client of windows) {
      if (new URL(client.url).origin !== self.location.origin) continue;
      await client.focus();
      if (client.navigate) { try { await client.navigate(url); return; } catch { /* uncontrolled: a new window */ } }
    }
    await self.clients.openWindow(url);
  })());
});

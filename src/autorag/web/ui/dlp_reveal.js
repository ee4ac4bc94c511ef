// "Show DLP texts" in the chat: an admin signed in with a password (an API key reads no
// original) reveals what data-loss prevention redacted in the conversation, and hides
// it again. The choice lasts for this sign-in in this tab only (sessionStorage, tied to
// the session's token): signing out, or a new tab, starts with it off. Every showing
// asks the server's reveal API again, which audits each reveal (dlp.revealed); nothing
// revealed is kept once hidden.

import { api, session } from "./api.js";
import { h, icon, toast } from "./dom.js";
import { app } from "./state.js";

const KEY = "autorag.dlpReveal";
const MARK = "[REDACTED]";
const tracked = new WeakMap(); // message element -> {ref, redacted, paint}

/** Whether this user may reveal: an admin (dlp:reveal) with a password login. */
export function canReveal() {
  return Boolean(app.me && app.me.via === "token" && app.can("dlp:reveal"));
}

// The session's mark: a new sign-in (a new token) does not inherit the choice.
const sessionMark = () => { const s = session(); return s ? s.token.slice(-24) : null; };

export function revealOn() {
  const mark = sessionMark();
  return canReveal() && mark !== null && sessionStorage.getItem(KEY) === mark;
}

function setOn(on) {
  if (on && sessionMark()) sessionStorage.setItem(KEY, sessionMark());
  else sessionStorage.removeItem(KEY);
}

/** Follow a chat message shown in ``el``: if DLP redacted it, it can be revealed, and
 *  is revealed at once when the toggle is on. ``paint(text)`` shows a text in it. */
export function trackMessage(el, messageId, text, paint) {
  if (!el || !messageId || typeof text !== "string" || !text.includes(MARK)) return;
  tracked.set(el, { ref: `message:${messageId}`, redacted: text, paint });
  el.dataset.dlpRef = `message:${messageId}`;
  if (revealOn()) show(el);
}

async function show(el) {
  const entry = tracked.get(el);
  if (!entry) return;
  try {
    const record = await api("/api/dlp/reveal", { method: "POST", body: { ref: entry.ref } });
    if (!revealOn()) return; // turned off meanwhile
    entry.paint(record.original);
    el.classList.add("dlp-revealed");
    el.dataset.dlpShown = "original";
    el.title = "Shown as written: data-loss prevention redacted parts of it (this reveal is audited)";
  } catch (error) {
    el.title = `The original cannot be shown: ${error.message}`;
  }
}

function hide(el) {
  const entry = tracked.get(el);
  if (!entry) return;
  entry.paint(entry.redacted);
  el.classList.remove("dlp-revealed");
  delete el.dataset.dlpShown;
  el.removeAttribute("title");
}

/** The toggle for the chat's header; ``root()`` holds the conversation's messages. */
export function dlpToggle(root) {
  const button = h("button", { class: "btn ghost small dlp-toggle", type: "button" });
  const paint = () => {
    const on = revealOn();
    button.setAttribute("aria-pressed", String(on));
    button.replaceChildren(icon("eye", "sm"), on ? "Hide DLP texts" : "Show DLP texts");
    button.title = on
      ? "Hide again what data-loss prevention redacted"
      : "Show what data-loss prevention redacted in this chat (admins; each reveal is audited)";
  };
  button.addEventListener("click", async () => {
    const on = !revealOn();
    setOn(on);
    paint();
    const shown = [...root().querySelectorAll("[data-dlp-ref]")];
    if (on) {
      await Promise.all(shown.map(show));
      if (!shown.length) toast("Nothing was redacted in this conversation.");
    } else shown.forEach(hide);
  });
  paint();
  return button;
}

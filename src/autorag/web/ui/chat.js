// Chat: streamed answers with numbered citations, a source panel, chat history, model
// switching (/model, the palette), fallback with Undo, DLP warnings, plans, and a
// side-by-side comparison of two models.

import { api, ApiError, streamEvents, ws } from "./api.js";
import {
  announce, clear, confirmDialog, copyText, emptyState, errorNotice, field, fmtRelative,
  h, icon, loading, modal, modKey, richSnippet, toast,
} from "./dom.js";
import { app, currentRoute, navigate, refreshModels, setHashQuietly, setTitle } from "./state.js";
import { canReveal, dlpToggle, trackMessage } from "./dlp_reveal.js";
import { legsBadges, passageText, renderAnswer } from "./render.js";
import { shownName } from "./words.js";
import { wikiEditCard } from "./wiki_card.js";
import { wikiHash } from "./wiki_api.js";

const views = new Map(); // workspace -> ChatView (kept: a stream goes on while you look elsewhere)
app.on("signout", () => { for (const view of views.values()) view.abortAll(); views.clear(); });

const ABORT_REASONS = {
  aborted: "Stopped",
  wallclock: "Stopped: the answer took too long",
  token_budget: "Stopped: the token budget ran out",
  context_overflow: "Stopped: the conversation is too long for the model",
  loop_detected: "Stopped: the agent kept repeating the same step",
  unknown_tool_breaker: "Stopped: the model kept calling unknown tools",
};

export async function render(container, { rest }) {
  const workspace = app.workspace;
  if (!workspace) {
    container.append(h("div", { class: "page-inner" }, emptyState({ iconName: "chat", title: "No workspace", body: "You are not a member of any workspace yet. Ask an admin to add you to one." })));
    return { title: "Chat" };
  }
  let view = views.get(workspace);
  if (!view) {
    view = new ChatView(workspace);
    views.set(workspace, view);
  }
  container.append(view.el);
  container.classList.add("fill");
  await view.open(rest[0] ? Number(rest[0]) : null);
  return {
    title: view.title(),
    update: ({ rest: next }) => view.open(next[0] ? Number(next[0]) : null),
    cleanup: () => view.detach(),
    focus: () => view.focusComposer(),
  };
}

/** The model list, fetched once and refreshed on demand. */
async function models() {
  if (!app.models) await refreshModels();
  return app.models || { models: [], providers: [], defaults: {} };
}

export function activeView() { return views.get(app.workspace) || null; }

/** From the palette: switch the current chat's model (the chat page opens if needed). */
export async function switchModel(id) {
  if (currentRoute().page !== "chat") navigate("#/chat");
  let view = activeView();
  for (let i = 0; !view && i < 50; i += 1) {
    await new Promise((r) => setTimeout(r, 20));
    view = activeView();
  }
  if (view) await view.setModel(id);
}

// -- one answer, streamed or loaded ------------------------------------------------------------
export class AnswerView {
  constructor({ onCite, compact = false } = {}) {
    this.text = "";
    this.sources = [];
    this.onCite = onCite;
    this.compact = compact;
    this.streaming = false;
    this.frame = 0;
    this.started = performance.now();
    this.planEl = h("details", { class: "plan", open: true, hidden: true }, h("summary", {}, "Plan"), h("div", { class: "plan-body" }));
    this.answerEl = h("div", { class: "answer" });
    this.sourcesEl = h("div", { class: "sources-row", hidden: true });
    this.noticesEl = h("div", { class: "stack" });
    this.statusEl = h("div", { class: "status-line", "aria-live": "off" });
    this.el = h("article", { class: "msg assistant", "aria-label": "Answer" },
      compact ? null : h("div", { class: "who" }, h("span", { class: "mark", "aria-hidden": "true" }, "AR"), "AutoRAG"),
      this.planEl, this.answerEl, this.sourcesEl, this.noticesEl, this.statusEl);
  }

  start() {
    this.streaming = true;
    this.el.setAttribute("aria-busy", "true");
    this.setStatus("Thinking…");
    this.paint();
  }

  setStatus(text) {
    clear(this.statusEl, h("span", { class: "spinner", "aria-hidden": "true" }), h("span", { class: "truncate" }, text));
  }

  onEvent(type, data) {
    if (type === "token") {
      if (!this.text) this.setStatus("Writing the answer…");
      this.text += data.text || "";
      this.schedule();
    } else if (type === "status") {
      // The server words it for people ("Searching your documents…").
      this.setStatus(data.message || "Working…");
    } else if (type === "plan") {
      this.planEl.hidden = false;
      renderAnswer(this.planEl.querySelector(".plan-body"), data.plan || "", (n) => `[${n}]`);
    } else if (type === "citations") {
      this.sources = data.sources || [];
      this.paintSources();
      this.schedule();
    } else if (type === "done") {
      if (typeof data.answer === "string") this.text = data.answer; // as stored: the same numbers
      this.finish(data);
    } else if (type === "wiki_edit") {
      this.noticesEl.append(wikiEditCard(data));
    } else if (type === "error") {
      this.fail(new ApiError(data.status || 500, { detail: data.message, code: data.code }));
    }
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.paint(); });
  }

  paint() {
    renderAnswer(this.answerEl, this.text, (n) => this.chip(n));
    if (this.streaming) {
      // Inside the last paragraph: the caret follows the text, never takes a line.
      let host = this.answerEl.lastElementChild || this.answerEl;
      while (host.lastElementChild && ["UL", "OL", "LI", "PRE"].includes(host.tagName)) host = host.lastElementChild;
      host.append(h("span", { class: "caret", "aria-hidden": "true" }));
    }
    if (this.onPaint) this.onPaint();
  }

  sourceLabel(n) {
    const source = this.sources.find((s) => s.number === n);
    if (!source) return `Source ${n}`;
    const where = sourceWhere(source, this.sources);
    return `Source ${n}: ${source.title || source.sourceId}${where ? `, ${where}` : ""}`;
  }

  chip(n) {
    const known = this.sources.some((s) => s.number === n);
    const button = h("button", {
      class: ["cite", known ? "" : "pending"], type: "button", "aria-label": this.sourceLabel(n), title: this.sourceLabel(n),
      "aria-haspopup": "dialog", dataset: { n: String(n) },
    }, String(n));
    button.addEventListener("click", () => this.onCite && this.onCite(this, n, button));
    return button;
  }

  // The sources the answer cites (numbered in order of first use), then the others
  // folded away under "More sources".
  paintSources() {
    if (!this.sources.length) { this.sourcesEl.hidden = true; return; }
    this.sourcesEl.hidden = false;
    const cited = this.sources.filter((s) => s.cited !== false);
    const more = this.sources.filter((s) => s.cited === false);
    const chip = (s) => {
      const where = sourceWhere(s, this.sources);
      const button = h("button", { class: "source-chip", type: "button", "aria-label": this.sourceLabel(s.number), "aria-haspopup": "dialog", dataset: { n: String(s.number) } },
        h("span", { class: "n" }, String(s.number)),
        h("span", { class: "truncate" }, s.title || s.sourceId),
        where ? h("span", { class: "muted truncate where" }, where) : null,
        s.peer ? h("span", { class: "badge" }, `via ${s.peer}`) : null);
      button.addEventListener("click", () => this.onCite && this.onCite(this, s.number, button));
      return button;
    };
    clear(this.sourcesEl,
      cited.length ? [h("span", { class: "label" }, "Sources"), cited.map(chip)] : null,
      more.length ? h("details", { class: "more-sources" },
        h("summary", {}, `More sources (${more.length})`),
        h("div", { class: "sources-row" }, more.map(chip))) : null);
  }

  finish(done) {
    this.done = done;
    this.streaming = false;
    this.el.removeAttribute("aria-busy");
    if (this.frame) { cancelAnimationFrame(this.frame); this.frame = 0; }
    this.paint();
    if (!this.text.trim() && done.abortReason === "done") {
      this.answerEl.replaceChildren(h("p", { class: "muted" }, "(No answer text.)"));
    }
    this.paintMeta(done);
  }

  paintMeta({ modelUsed, usage, abortReason } = {}) {
    const seconds = ((performance.now() - this.started) / 1000).toFixed(1);
    const tokens = usage ? usage.promptTokens + usage.completionTokens : null;
    const parts = [];
    if (abortReason && abortReason !== "done") parts.push(h("span", { class: "badge warn" }, ABORT_REASONS[abortReason] || `Stopped (${abortReason})`));
    if (modelUsed) parts.push(h("span", { class: "meta-item", title: "Model that answered" }, icon("cpu", "sm"), modelUsed));
    if (tokens !== null) parts.push(h("span", { class: "meta-item" }, `${tokens.toLocaleString()} tokens`));
    if (this.live) parts.push(h("span", { class: "meta-item" }, `${seconds} s`));
    const copy = h("button", { class: "btn ghost small icon-only", type: "button", "aria-label": "Copy answer", title: "Copy answer", on: { click: async () => { await copyText(this.text); toast("Answer copied."); } } }, icon("copy", "sm"));
    clear(this.statusEl, ...parts.flatMap((p, i) => (i ? [h("span", { class: "sep", "aria-hidden": "true" }, "·"), p] : [p])), h("span", { class: "spacer" }), this.text ? copy : null);
  }

  stopped() {
    this.streaming = false;
    this.el.removeAttribute("aria-busy");
    this.paint();
    if (!this.text) this.answerEl.replaceChildren(h("p", { class: "muted" }, "Stopped before any answer."));
    this.paintMeta({ abortReason: "aborted" });
  }

  fail(error, retry) {
    this.streaming = false;
    this.el.removeAttribute("aria-busy");
    this.paint();
    if (!this.text) this.answerEl.replaceChildren();
    this.noticesEl.append(errorNotice(error, retry));
    this.statusEl.replaceChildren();
  }

  notice(kind, body, action) {
    const el = h("div", { class: ["notice", kind], role: "status" }, icon(kind === "warn" ? "shield" : "info"), h("div", { class: "notice-body" }, body), action || null);
    this.noticesEl.append(el);
    return el;
  }

  static fromMessage(message, options) {
    const view = new AnswerView(options);
    view.live = false;
    view.text = message.content || "";
    view.sources = message.sources || [];
    if (message.plan) {
      view.planEl.hidden = false;
      view.planEl.open = false;
      renderAnswer(view.planEl.querySelector(".plan-body"), message.plan, (n) => `[${n}]`);
    }
    view.paint();
    view.paintSources();
    view.paintMeta({ modelUsed: message.modelUsed, usage: message.usage, abortReason: message.abortReason });
    return view;
  }
}

// -- the chat page -----------------------------------------------------------------------------------
class ChatView {
  constructor(workspace) {
    this.workspace = workspace;
    this.base = ws(workspace);
    this.threads = new Map(); // chat id or "new" -> thread
    this.current = null;
    this.pendingModel = null;
    this.chats = [];
    this.agent = null;
    this.planMode = false;
    this.build();
  }

  // -- layout --
  build() {
    this.historyList = h("ul", { class: "history-list", "aria-label": "Chats" });
    this.historyFilter = h("input", { class: "input", type: "search", placeholder: "Filter chats", "aria-label": "Filter chats", on: { input: () => this.paintHistory() } });
    this.history = h("aside", { class: "history", id: `history-${this.workspace}`, "aria-label": "Chat history" },
      h("div", { class: "history-head" },
        h("button", { class: "btn primary", type: "button", on: { click: () => this.newChat() } }, icon("plus"), "New chat"),
        this.historyFilter),
      this.historyList);
    this.titleEl = h("h1", { tabindex: "-1" }, "New chat");
    this.modelButton = h("button", { class: "btn small model-button", type: "button", "aria-haspopup": "dialog", title: `Switch model (/model or ${modKey}+K)`, on: { click: () => this.pickModel() } });
    this.historyToggle = h("button", { class: "btn ghost icon-only history-toggle", type: "button", "aria-label": "Show chat history", "aria-expanded": "false", "aria-controls": this.history.id, on: { click: () => this.toggleHistory() } }, icon("history"));
    const head = h("header", { class: "chat-head" },
      this.historyToggle, this.titleEl,
      this.renameButton = h("button", { class: "btn ghost small icon-only rename-button", type: "button", "aria-label": "Rename chat", title: "Rename chat", hidden: true, on: { click: () => this.rename() } }, icon("edit", "sm")),
      this.modelButton,
      h("button", { class: "btn ghost small icon-only", type: "button", "aria-label": `Compare two models (${modKey}+Shift+M)`, title: `Compare two models (${modKey}+Shift+M)`, on: { click: () => openCompare() } }, icon("columns")));
    if (canReveal()) head.append(dlpToggle(() => this.messages)); // admins: Show DLP texts
    this.messages = h("div", { class: "messages", tabindex: "-1", "aria-label": "Conversation" });
    this.messages.addEventListener("scroll", () => { this.stick = this.atBottom(); }, { passive: true });
    this.stick = true;

    // composer
    this.input = h("textarea", {
      id: `composer-${this.workspace}`, rows: 1, placeholder: "Ask about your documents…",
      "aria-label": "Message", "aria-autocomplete": "list", "aria-expanded": "false", enterkeyhint: "send",
    });
    this.slash = h("ul", { class: "slash-menu", role: "listbox", id: `slash-${this.workspace}`, "aria-label": "Commands", hidden: true });
    this.input.setAttribute("aria-controls", this.slash.id);
    this.input.addEventListener("input", () => { this.autosize(); this.updateSlash(); });
    this.input.addEventListener("keydown", (e) => this.composerKey(e));
    this.input.addEventListener("blur", () => setTimeout(() => this.hideSlash(), 150));
    this.planToggle = h("input", { type: "checkbox", on: { change: () => { this.planMode = this.planToggle.checked; } } });
    this.sendButton = h("button", { class: "btn primary", type: "submit", "aria-label": "Send message" }, icon("send", "sm"), "Send");
    this.stopButton = h("button", { class: "btn danger", type: "button", hidden: true, "aria-label": "Stop answering", on: { click: () => this.stop() } }, icon("stop", "sm"), "Stop");
    const form = h("form", { class: "composer", "aria-label": "Ask a question" },
      this.slash,
      h("div", { class: "composer-box" },
        this.input,
        h("div", { class: "composer-row" },
          h("label", { class: "switch", title: "Have the agent write a plan first, then follow it" }, this.planToggle, h("span", { class: "small" }, "Plan first")),
          h("span", { class: "hint spacer" }, h("kbd", {}, "Enter"), " send · ", h("kbd", {}, "Shift+Enter"), " new line · ", h("kbd", {}, `${modKey} K`), " models"),
          h("div", { class: "send-stop" }, this.sendButton, this.stopButton))));
    form.addEventListener("submit", (e) => { e.preventDefault(); this.submit(); });

    this.panelTitle = h("h2", { tabindex: "-1" }, "Source");
    this.panelBody = h("div", { class: "source-body" });
    this.panel = h("aside", { class: "source-panel", id: `source-${this.workspace}`, role: "dialog", "aria-modal": "false", "aria-label": "Source", hidden: true },
      h("header", {}, this.panelTitle,
        this.prevButton = h("button", { class: "btn ghost small", type: "button", "aria-label": "Previous source", on: { click: () => this.stepSource(-1) } }, "‹"),
        this.nextButton = h("button", { class: "btn ghost small", type: "button", "aria-label": "Next source", on: { click: () => this.stepSource(1) } }, "›"),
        h("button", { class: "btn ghost icon-only", type: "button", "aria-label": "Close source", on: { click: () => this.closeSource() } }, icon("x"))),
      this.panelBody);
    this.panel.addEventListener("keydown", (e) => { if (e.key === "Escape") { e.stopPropagation(); this.closeSource(); } });

    this.el = h("div", { class: "chat-page" },
      this.history,
      h("section", { class: "conversation", "aria-labelledby": "x" }, head, this.messages, h("div", { class: "composer-wrap" }, form)),
      this.panel,
      h("div", { class: "backdrop", on: { click: () => { this.toggleHistory(false); this.closeSource(); } } }));
    this.el.querySelector(".conversation").removeAttribute("aria-labelledby");
    this.el.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && this.el.classList.contains("history-open")) this.toggleHistory(false);
    });
    this.unsubscribe = app.on("models", () => this.paintModel());
  }

  detach() {
    this.closeSource();
    this.toggleHistory(false);
  }

  abortAll() {
    for (const thread of this.threads.values()) if (thread.controller) thread.controller.abort();
  }

  title() { return this.current && this.current.chat ? this.current.chat.title : "New chat"; }

  focusComposer() { this.input.focus({ preventScroll: true }); }

  atBottom() { return this.messages.scrollTop + this.messages.clientHeight >= this.messages.scrollHeight - 48; }

  scrollDown(force = false) {
    if (force || this.stick) this.messages.scrollTop = this.messages.scrollHeight;
  }

  toggleHistory(open = !this.el.classList.contains("history-open")) {
    if (open) this.closeSource();
    this.el.classList.toggle("history-open", open);
    this.historyToggle.setAttribute("aria-expanded", String(open));
    if (open) {
      const link = this.historyList.querySelector("a") || this.history.querySelector("button");
      if (link) link.focus();
    }
  }

  // -- threads --
  open(chatId) {
    // Kept so a question sent while the page is still opening waits for its thread.
    this.opening = this.openThread(chatId);
    return this.opening;
  }

  async openThread(chatId) {
    if (!this.agent) {
      try {
        this.agent = await api(`${this.base}/agent`);
        this.planMode = Boolean(this.agent.planMode);
        this.planToggle.checked = this.planMode;
      } catch (error) {
        if (error.status === 401) return;
        this.agent = {};
      }
      this.loadHistory();
    }
    this.closeSource();
    this.toggleHistory(false);
    const key = chatId || "new";
    let thread = this.threads.get(key);
    if (!thread) {
      thread = { id: chatId || null, chat: null, el: h("div", { class: "messages-inner" }), loaded: !chatId, controller: null, question: "" };
      this.threads.set(key, thread);
    }
    this.current = thread;
    this.messages.replaceChildren(thread.el);
    if (!thread.loaded) {
      thread.el.replaceChildren(loading("Loading the conversation…"));
      try {
        const chat = await api(`${this.base}/chats/${chatId}`);
        thread.chat = chat;
        thread.loaded = true;
        thread.el.replaceChildren();
        for (const message of chat.messageList) this.appendMessage(thread, message);
      } catch (error) {
        thread.loaded = false;
        this.threads.delete(key);
        if (error.status === 404) {
          thread.el.replaceChildren(emptyState({ iconName: "chat", title: "This chat does not exist", body: "It may have been deleted, or it belongs to another workspace.", action: h("a", { class: "btn", href: "#/chat" }, "Start a new chat") }));
        } else {
          thread.el.replaceChildren(errorNotice(error, () => this.open(chatId)));
        }
      }
    }
    if (!thread.el.childElementCount) this.paintEmpty(thread);
    this.paintThread();
    requestAnimationFrame(() => this.scrollDown(true));
    this.stick = true;
  }

  paintThread() {
    const thread = this.current;
    this.titleEl.textContent = this.title();
    this.renameButton.hidden = !thread.id;
    if (currentRoute().page === "chat") setTitle(this.title());
    this.paintModel();
    this.paintButtons();
    this.paintHistory();
  }

  // The plain notice when only the built-in extractive model answers (connections.js).
  async addBuiltInNotice(box) {
    await models();
    const { builtInNotice } = await import("./connections.js");
    const notice = builtInNotice();
    if (notice) box.prepend(notice);
  }

  async paintEmpty(thread) {
    const count = h("p", { class: "muted" }, " ");
    const box = h("div", { class: "chat-empty" },
      h("img", { class: "logo", src: "/ui/favicon.svg", alt: "" }),
      h("h2", {}, `Ask about the documents in ${this.workspace}`),
      count,
      h("p", { class: "hint" }, "Answers cite their sources as numbered chips: select one to read the passage. ",
        "Type ", h("kbd", {}, "/model"), " to switch model",
        h("span", { class: "keyboard-only" }, " (or press ", h("kbd", {}, `${modKey} K`), "), and ",
          h("kbd", {}, `${modKey} Shift M`), " to compare two models"), "."));
    thread.el.replaceChildren(box);
    this.addBuiltInNotice(box).catch(() => {});
    try {
      const info = await api(this.base);
      if (info.documents === 0) {
        clear(count, "This workspace has no documents yet. ", h("a", { href: "#/documents" }, "Upload some"), " to get grounded answers.");
      } else count.textContent = `${info.documents.toLocaleString()} document${info.documents === 1 ? "" : "s"} in this workspace.`;
    } catch { count.textContent = ""; }
  }

  appendMessage(thread, message) {
    if (message.role === "user") {
      thread.el.append(h("div", { class: "msg user" }, h("div", { class: "bubble" }, richSnippet(message.content))));
      thread.question = message.content;
      const bubble = thread.el.lastElementChild.firstElementChild;
      trackMessage(thread.el.lastElementChild, message.id, message.content, (t) => bubble.replaceChildren(richSnippet(t)));
    } else {
      const view = AnswerView.fromMessage(message, { onCite: (v, n, opener) => this.showSource(v, n, opener) });
      thread.el.append(view.el);
      trackMessage(view.el, message.id, message.content, (t) => { view.text = t; view.paint(); });
    }
  }

  paintButtons() {
    const busy = Boolean(this.current && this.current.controller);
    this.sendButton.hidden = busy;
    this.stopButton.hidden = !busy;
  }

  // -- history --
  async loadHistory() {
    try {
      this.chats = await api(`${this.base}/chats`, { query: { limit: 100 } });
      this.historyError = null;
    } catch (error) {
      this.historyError = error;
    }
    this.paintHistory();
    return this.chats;
  }

  paintHistory() {
    const filter = this.historyFilter.value.trim().toLowerCase();
    if (this.historyError) {
      clear(this.historyList, h("li", {}, errorNotice(this.historyError, () => this.loadHistory())));
      return;
    }
    const chats = this.chats.filter((c) => !filter || c.title.toLowerCase().includes(filter));
    if (!chats.length) {
      clear(this.historyList, h("li", { class: "history-empty" }, filter ? "No chat matches." : "No chats yet. Your conversations appear here."));
      return;
    }
    const currentId = this.current && this.current.id;
    clear(this.historyList, chats.map((chat) => {
      const link = h("a", { href: `#/chat/${chat.id}`, "aria-current": chat.id === currentId ? "page" : undefined },
        h("span", { class: "t" }, chat.title),
        h("small", {}, `${fmtRelative(chat.updatedAt)}${chat.model ? ` · ${chat.model}` : ""}`));
      return h("li", { class: ["history-item", chat.id === currentId ? "current" : ""] }, link,
        h("button", { class: "btn ghost small icon-only del", type: "button", "aria-label": `Delete chat “${chat.title}”`, title: "Delete chat", on: { click: () => this.deleteChat(chat) } }, icon("trash", "sm")));
    }));
  }

  async deleteChat(chat) {
    const ok = await confirmDialog({ title: "Delete this chat?", message: `“${chat.title}” and its messages will be deleted.`, confirm: "Delete", danger: true });
    if (!ok) return;
    try {
      await api(`${this.base}/chats/${chat.id}`, { method: "DELETE" });
      const thread = this.threads.get(chat.id);
      if (thread && thread.controller) thread.controller.abort();
      this.threads.delete(chat.id);
      this.chats = this.chats.filter((c) => c.id !== chat.id);
      toast("Chat deleted.");
      if (this.current && this.current.id === chat.id) navigate("#/chat");
      else this.paintHistory();
    } catch (error) {
      toast(error.message, { kind: "error" });
    }
  }

  newChat() {
    const fresh = this.threads.get("new");
    if (fresh && !fresh.controller && fresh.el.querySelector(".msg")) this.threads.delete("new");
    navigate("#/chat");
    if (currentRoute().page === "chat" && !currentRoute().rest.length) this.open(null).then(() => this.focusComposer());
  }

  async rename() {
    const thread = this.current;
    if (!thread || !thread.id) return;
    const input = h("input", { class: "input", value: thread.chat ? thread.chat.title : "", maxLength: 200, required: true });
    const save = h("button", { class: "btn primary", type: "submit", form: "rename-form" }, "Rename");
    const form = h("form", { id: "rename-form", class: "stack" }, field("Title", input));
    const dlg = modal({ title: "Rename chat", body: form, foot: [h("button", { class: "btn", type: "button", on: { click: () => dlg.close() } }, "Cancel"), save] });
    input.select();
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      if (!input.value.trim()) return;
      try {
        thread.chat = { ...thread.chat, ...(await api(`${this.base}/chats/${thread.id}`, { method: "PATCH", body: { title: input.value.trim() } })) };
        dlg.close();
        this.paintThread();
        this.loadHistory();
      } catch (error) { toast(error.message, { kind: "error" }); }
    });
  }

  // -- models --
  effectiveModel() {
    const thread = this.current;
    const explicit = thread && thread.chat ? thread.chat.model : (thread && !thread.id ? this.pendingModel : null);
    if (explicit) return { id: explicit, explicit: true };
    const defaults = (app.models && app.models.defaults) || {};
    const fallback = (this.agent && this.agent.defaultModel) || defaults.globalDefault || defaults.environment || "extractive";
    return { id: fallback, explicit: false };
  }

  paintModel() {
    const { id, explicit } = this.effectiveModel();
    const entry = app.models && app.models.models.find((m) => m.id === id || m.provider === id);
    const down = entry && entry.available === false;
    clear(this.modelButton,
      h("span", { class: ["avail", entry ? (down ? "down" : entry.available ? "up" : "") : ""], "aria-hidden": "true" }),
      h("span", { class: "model-label muted" }, explicit ? "Model" : "Default"),
      h("span", { class: "truncate" }, id), icon("chevron", "sm"));
    this.modelButton.setAttribute("aria-label", `Model: ${id}${explicit ? "" : " (default)"}${down ? ", unavailable" : ""}. Switch model`);
  }

  async pickModel() {
    const { openModelPicker } = await import("./palette.js");
    openModelPicker({ current: this.effectiveModel().id, onPick: (id) => this.setModel(id) });
  }

  async setModel(id, { quiet = false } = {}) {
    const thread = this.current;
    const list = await models();
    const entry = list.models.find((m) => m.id === id) || list.models.find((m) => m.provider === id);
    const model = entry ? entry.id : id;
    try {
      if (thread && thread.id) {
        const chat = await api(`${this.base}/chats/${thread.id}/model`, { method: "PATCH", body: { model } });
        thread.chat = { ...thread.chat, ...chat };
        this.loadHistory();
      } else {
        this.pendingModel = model;
      }
    } catch (error) {
      toast(error.message, { kind: "error" });
      return false;
    }
    this.paintModel();
    if (!quiet) {
      const down = entry && entry.available === false;
      toast(down ? `Model: ${model} — unavailable right now, answers will fall back.` : `Model: ${model}`, { kind: down ? "warn" : "" });
      announce(`Model switched to ${model}`);
    }
    return true;
  }

  // -- composer --
  autosize() {
    this.input.style.height = "auto";
    this.input.style.height = `${Math.min(this.input.scrollHeight, 192)}px`;
  }

  slashItems() {
    const value = this.input.value;
    if (!value.startsWith("/") || value.includes("\n")) return [];
    const m = value.match(/^\/model(?:\s+(.*))?$/i);
    if (m && value.length > 6 && /\s/.test(value[6] || "")) {
      const q = (m[1] || "").trim().toLowerCase();
      const list = (app.models && app.models.models) || [];
      return list.filter((e) => !q || e.id.toLowerCase().includes(q)).map((e) => ({
        id: `model:${e.id}`, label: e.id, detail: [e.available === false ? "unavailable" : e.available ? "available" : "not checked yet", ...e.capabilities].join(" · "),
        run: () => { this.input.value = ""; this.autosize(); this.setModel(e.id); },
        fill: `/model ${e.id}`,
      }));
    }
    const commands = [
      { id: "cmd:model", label: "/model", detail: "Switch this chat's model", fill: "/model ", keep: true },
      { id: "cmd:new", label: "/new", detail: "Start a new chat", run: () => { this.input.value = ""; this.newChat(); } },
      { id: "cmd:compare", label: "/compare", detail: `Compare two models side by side (${modKey}+Shift+M)`, run: () => { this.input.value = ""; openCompare(); } },
      { id: "cmd:plan", label: "/plan", detail: "Toggle plan mode", run: () => { this.input.value = ""; this.planToggle.checked = !this.planToggle.checked; this.planMode = this.planToggle.checked; toast(`Plan first: ${this.planMode ? "on" : "off"}`); } },
    ];
    const q = value.slice(1).toLowerCase();
    return commands.filter((c) => c.label.slice(1).startsWith(q.split(/\s/)[0]));
  }

  updateSlash() {
    const items = this.slashItems();
    this.slashState = { items, index: 0 };
    if (!items.length) return this.hideSlash();
    if (!app.models && this.input.value.startsWith("/model")) models().then(() => this.updateSlash());
    this.slash.hidden = false;
    this.input.setAttribute("aria-expanded", "true");
    this.paintSlash();
    return undefined;
  }

  paintSlash() {
    const { items, index } = this.slashState;
    clear(this.slash, items.map((item, i) => {
      const option = h("li", { class: "option", role: "option", id: `${this.slash.id}-${i}`, "aria-selected": String(i === index) },
        h("span", { class: "opt-main" }, h("span", { class: "mono" }, item.label), h("small", {}, item.detail)));
      option.addEventListener("mousedown", (e) => { e.preventDefault(); this.chooseSlash(i); });
      return option;
    }));
    this.input.setAttribute("aria-activedescendant", `${this.slash.id}-${index}`);
    const active = this.slash.children[index];
    if (active) active.scrollIntoView({ block: "nearest" });
  }

  hideSlash() {
    this.slash.hidden = true;
    this.input.setAttribute("aria-expanded", "false");
    this.input.removeAttribute("aria-activedescendant");
  }

  chooseSlash(index) {
    const item = this.slashState && this.slashState.items[index];
    if (!item) return;
    if (item.run) {
      this.hideSlash();
      item.run();
    } else if (item.fill) {
      this.input.value = item.fill;
      this.updateSlash();
    }
    this.input.focus();
  }

  composerKey(event) {
    const open = !this.slash.hidden && this.slashState && this.slashState.items.length;
    if (open) {
      const n = this.slashState.items.length;
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        this.slashState.index = (this.slashState.index + (event.key === "ArrowDown" ? 1 : n - 1)) % n;
        this.paintSlash();
        return;
      }
      if (event.key === "Tab") {
        event.preventDefault();
        const item = this.slashState.items[this.slashState.index];
        if (item.fill) { this.input.value = item.fill; this.updateSlash(); }
        return;
      }
      if (event.key === "Escape") { event.preventDefault(); this.hideSlash(); return; }
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        this.chooseSlash(this.slashState.index);
        return;
      }
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      this.submit();
    }
  }

  async submit() {
    const text = this.input.value.trim();
    if (!text) return;
    if (text.startsWith("/")) {
      this.hideSlash();
      const model = text.match(/^\/model(?:\s+(\S+))?$/i);
      if (model) {
        this.input.value = "";
        this.autosize();
        if (model[1]) await this.setModel(model[1]);
        else this.pickModel();
        return;
      }
      if (text === "/new") { this.input.value = ""; this.newChat(); return; }
      if (text === "/compare") { this.input.value = ""; openCompare(); return; }
      if (!text.startsWith("//")) {
        toast(`Unknown command ${text.split(/\s/)[0]}. Commands: /model, /new, /compare, /plan. Start with // to send a message that begins with /.`, { kind: "error" });
        return;
      }
    }
    if (!this.current && this.opening) await this.opening;
    const thread = this.current;
    if (!thread || thread.controller) return;
    this.input.value = "";
    this.autosize();
    await this.ask(thread, text.startsWith("//") ? text.slice(1) : text);
  }

  stop() {
    const thread = this.current;
    if (thread && thread.controller) thread.controller.abort();
  }

  async ask(thread, question) {
    if (!thread.el.querySelector(".msg")) thread.el.replaceChildren();
    thread.el.append(h("div", { class: "msg user" }, h("div", { class: "bubble" }, question)));
    thread.question = question;
    const view = new AnswerView({ onCite: (v, n, opener) => this.showSource(v, n, opener) });
    view.live = true;
    view.onPaint = () => { if (this.current === thread) this.scrollDown(); };
    thread.el.append(view.el);
    this.stick = true;
    view.start();
    this.scrollDown(true);
    const controller = new AbortController();
    thread.controller = controller;
    this.paintButtons();
    const known = new Set(this.chats.map((c) => c.id));
    const body = { message: question, planMode: this.planMode };
    if (thread.id) body.chatId = thread.id;
    else if (this.pendingModel) body.model = this.pendingModel;
    let done = null;
    try {
      await streamEvents(`${this.base}/chat/stream`, body, {
        signal: controller.signal,
        onEvent: (type, data) => {
          view.onEvent(type, data);
          if (type === "done") done = data;
        },
      });
      if (!done && !view.noticesEl.childElementCount) view.fail(new Error("The answer ended early: the connection closed."), () => this.ask(thread, question));
    } catch (error) {
      if (error.name === "AbortError") {
        view.stopped();
        announce("Answer stopped");
      } else if (error.status !== 401) {
        view.fail(error, () => { view.el.remove(); thread.el.lastElementChild.remove(); this.ask(thread, question); });
      }
    } finally {
      thread.controller = null;
      if (this.current === thread) {
        this.paintButtons();
        if (!document.querySelector("dialog[open]") && !this.panel.contains(document.activeElement)) this.focusComposer();
      }
    }
    if (done) announce("Answer complete");
    await this.afterAnswer(thread, view, done, known);
  }

  async afterAnswer(thread, view, done, known) {
    const chatId = done ? done.chatId : null;
    if (!thread.id) {
      let id = chatId;
      if (!id) {
        const chats = await this.loadHistory();
        const adopted = chats.find((c) => !known.has(c.id));
        id = adopted ? adopted.id : null;
      }
      if (id) {
        thread.id = id;
        this.threads.delete("new");
        this.threads.set(id, thread);
        this.pendingModel = null;
        if (this.current === thread) setHashQuietly(`#/chat/${id}`);
      }
    }
    await this.loadHistory();
    if (thread.id) thread.chat = this.chats.find((c) => c.id === thread.id) || thread.chat;
    if (done && done.dlp_warning) {
      this.showStoredQuestion(thread, view);
      trackMessage(view.el, done.messageId, view.text, (t) => { view.text = t; view.paint(); });
      view.notice("warn", [h("strong", {}, "Sensitive data was redacted. "),
        "Data-loss prevention replaced part of the question, the answer or its sources with [REDACTED].",
        app.can("dlp:admin") ? h("span", {}, " ", h("a", { href: "#/admin/dlp" }, "DLP history")) : null]);
    }
    if (done && done.requestedModel && done.requestedModel !== done.modelUsed && thread.id) {
      await this.fallback(thread, view, done);
    }
    if (this.current === thread) this.paintThread();
  }

  /** After a redaction: the question as it was stored and sent, [REDACTED] included. */
  async showStoredQuestion(thread, view) {
    if (!thread.id) return;
    try {
      const chat = await api(`${this.base}/chats/${thread.id}`);
      const asked = [...chat.messageList].reverse().find((m) => m.role === "user");
      const bubble = view.el.previousElementSibling && view.el.previousElementSibling.querySelector(".bubble");
      if (asked && bubble && asked.content !== bubble.textContent) {
        bubble.replaceChildren(richSnippet(asked.content));
        bubble.title = "As sent: data-loss prevention redacted part of it";
      }
      if (asked && bubble) trackMessage(bubble.parentElement, asked.id, asked.content, (t) => bubble.replaceChildren(richSnippet(t)));
    } catch { /* the local echo stays */ }
  }

  async fallback(thread, view, done) {
    const requested = done.requestedModel;
    const used = done.modelUsed;
    let switched = false;
    try {
      const chat = await api(`${this.base}/chats/${thread.id}/model`, { method: "PATCH", body: { model: used } });
      thread.chat = { ...thread.chat, ...chat };
      switched = true;
    } catch { /* the notice still says what happened */ }
    const undo = h("button", { class: "btn small", type: "button", "aria-label": `Undo: use ${requested} again` }, icon("undo", "sm"), "Undo");
    const prefix = `${requested} is unavailable: `;
    const reason = (done.fallbackReason || "").startsWith(prefix) ? done.fallbackReason.slice(prefix.length) : done.fallbackReason;
    const body = [h("strong", {}, `${requested} is unavailable`), `: ${used} answered instead.`,
      switched ? ` This chat now uses ${used}.` : "", reason ? h("span", { class: "why" }, reason) : null];
    const el = view.notice("info", body, switched ? undo : null);
    el.classList.add("fallback");
    if (switched) this.loadHistory();
    undo.addEventListener("click", async () => {
      undo.disabled = true;
      try {
        const chat = await api(`${this.base}/chats/${thread.id}/model`, { method: "PATCH", body: { model: requested } });
        thread.chat = { ...thread.chat, ...chat };
        clear(el.querySelector(".notice-body"), `This chat uses ${requested} again. While it is unavailable, answers fall back.`);
        undo.remove();
        this.paintModel();
        this.loadHistory();
        announce(`Model set back to ${requested}`);
        this.focusComposer();
      } catch (error) {
        undo.disabled = false;
        toast(error.message, { kind: "error" });
      }
    });
    this.paintModel();
  }

  // -- the source panel --
  showSource(view, n, opener) {
    this.sourceView = view;
    this.sourceNumber = n;
    if (this.sourceOpener && this.sourceOpener !== opener) this.sourceOpener.setAttribute("aria-expanded", "false");
    this.sourceOpener = opener;
    if (opener) opener.setAttribute("aria-expanded", "true");
    this.paintSource();
    this.panel.hidden = false;
    this.el.classList.add("with-source");
    this.panelTitle.focus();
  }

  paintSource() {
    const view = this.sourceView;
    const n = this.sourceNumber;
    const source = view.sources.find((s) => s.number === n);
    this.panelTitle.textContent = `Source [${n}]`;
    const index = view.sources.findIndex((s) => s.number === n);
    this.prevButton.disabled = index <= 0;
    this.nextButton.disabled = index === -1 || index >= view.sources.length - 1;
    if (!source) {
      clear(this.panelBody, emptyState({ iconName: "file", title: view.streaming ? "Sources are on their way" : "Source not sent", body: view.streaming ? "The sources arrive when the answer is complete." : `The answer cites [${n}], but no such source came with it.` }));
      return;
    }
    const passage = source.chunkId > 0 ? `?chunk=${source.chunkId}` : "";
    // An archive page opens in the wiki; a document of this workspace in its viewer.
    const documentLink = source.archive && source.pagePath
      ? h("a", { class: "btn small", href: wikiHash(source.archive, source.pagePath) }, icon("book", "sm"), "Open in the wiki")
      : source.documentId > 0 && !source.peer
        ? h("a", { class: "btn small", href: `#/documents/${source.documentId}${passage}` }, icon("file", "sm"), "Open document") : null;
    clear(this.panelBody,
      h("div", { class: "doc-title" }, source.title || source.sourceId),
      h("dl", { class: "facts" },
        h("dt", {}, "Document"), h("dd", {}, source.title || "—"),
        source.section ? [h("dt", {}, "Section"), h("dd", {}, source.section)] : null,
        h("dt", {}, "Page"), h("dd", {}, source.page ? String(source.page) : "—"),
        h("dt", {}, "Found by"), h("dd", {}, legsBadges(source.match)),
        source.peer ? [h("dt", {}, "Peer"), h("dd", {}, source.peer)] : null,
        h("dt", {}, "Source"), h("dd", { class: "mono small" }, shownName(source.source || source.sourceId))),
      h("blockquote", { class: "snippet", "aria-label": "Passage" }, richSnippet(passageText(source.snippet))),
      h("div", { class: "btn-row" }, documentLink,
        // A YouTube passage: the video, opened at the second the passage starts.
        source.link ? h("a", { class: "btn small", href: source.link, target: "_blank", rel: "noopener noreferrer" }, icon("link", "sm"), "Watch from here") : null,
        h("button", { class: "btn small", type: "button", on: { click: async () => { await copyText(source.snippet); toast("Passage copied."); } } }, icon("copy", "sm"), "Copy passage")));
  }

  stepSource(delta) {
    const view = this.sourceView;
    if (!view) return;
    const index = view.sources.findIndex((s) => s.number === this.sourceNumber);
    const next = view.sources[index + delta];
    if (!next) return;
    this.sourceNumber = next.number;
    this.paintSource();
  }

  closeSource() {
    if (this.panel.hidden) return;
    const hadFocus = this.panel.contains(document.activeElement);
    this.panel.hidden = true;
    this.el.classList.remove("with-source");
    if (this.sourceOpener) {
      this.sourceOpener.setAttribute("aria-expanded", "false");
      if (hadFocus && this.sourceOpener.isConnected) this.sourceOpener.focus();
    }
  }
}

// -- compare two models side by side -------------------------------------------------------------
export async function openCompare() {
  if (!app.workspace || !app.can("chat:use")) return;
  const list = await models();
  const view = activeView();
  const chosenId = view ? view.effectiveModel().id : (list.defaults.environment || "extractive");
  const known = list.models.find((m) => m.id === chosenId || m.provider === chosenId);
  const current = known ? known.id : chosenId;  // "extractive" is extractive/extractive
  const ids = list.models.map((m) => m.id);
  if (!ids.includes(current)) ids.unshift(current);
  if (new Set(ids).size < 2) {
    toast(`Comparing needs two models, and only ${current} is on offer. Connect a model in Settings → Models.`, { timeout: 8000 });
    return;
  }
  const other = list.models.find((m) => m.id !== current && m.available !== false) || list.models.find((m) => m.id !== current);
  const select = (value, label) => {
    const el = h("select", { class: "input" }, ids.map((id) => {
      const entry = list.models.find((m) => m.id === id);
      return h("option", { value: id, selected: id === value }, `${id}${entry && entry.available === false ? " (unavailable)" : ""}`);
    }));
    return field(label, el);
  };
  const left = select(current, "Model A");
  const right = select(other ? other.id : current, "Model B");
  const seed = view ? (view.input.value.trim() && !view.input.value.startsWith("/") ? view.input.value.trim() : (view.current && view.current.question) || "") : "";
  const question = h("input", { class: "input", value: seed, placeholder: "The question both models answer", "aria-label": "Question" });
  const run = h("button", { class: "btn primary", type: "submit" }, icon("columns", "sm"), "Compare");
  const stop = h("button", { class: "btn danger", type: "button", hidden: true }, icon("stop", "sm"), "Stop both");
  const close = h("button", { class: "btn ghost icon-only", type: "button", "aria-label": "Close comparison" }, icon("x"));
  const form = h("form", { class: "compare-head" },
    h("div", { class: "row" }, h("h2", { id: "compare-title", class: "spacer" }, "Compare models"), close),
    h("div", { class: "grid-form" }, left, right),
    h("div", { class: "row" }, h("div", { class: "compare-question" }, question), run, stop));
  const cols = h("div", { class: "compare-cols" },
    compareColumn("A"), compareColumn("B"));
  const dialog = h("dialog", { class: "compare", "aria-labelledby": "compare-title" }, form, cols);
  const opener = document.activeElement;
  let controllers = [];
  dialog.addEventListener("close", () => {
    for (const c of controllers) c.abort();
    dialog.remove();
    if (opener && opener.isConnected) opener.focus();
  });
  close.addEventListener("click", () => dialog.close());
  stop.addEventListener("click", () => { for (const c of controllers) c.abort(); });
  document.body.append(dialog);
  dialog.showModal();
  (seed ? run : question).focus();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = question.value.trim();
    if (!text) { question.focus(); return; }
    const chosen = [left.querySelector("select").value, right.querySelector("select").value];
    if (chosen[0] === chosen[1]) { toast("Choose two different models to compare.", { kind: "error" }); return; }
    run.hidden = true;
    stop.hidden = false;
    controllers = chosen.map(() => new AbortController());
    const base = ws(app.workspace);
    await Promise.all(chosen.map(async (model, i) => {
      const col = cols.children[i];
      col.querySelector(".col-name").textContent = model;
      const answer = new AnswerView({ compact: true, onCite: (v, n) => revealSource(col, n) });
      answer.live = true;
      const body = col.querySelector(".col-body");
      const srcList = h("div", { class: "stack" });
      body.replaceChildren(answer.el, srcList);
      answer.start();
      let done = null;
      try {
        await streamEvents(`${base}/chat/stream`, { message: text, model }, {
          signal: controllers[i].signal,
          onEvent: (type, data) => {
            answer.onEvent(type, data);
            if (type === "citations") paintCompareSources(srcList, answer.sources);
            if (type === "done") done = data;
          },
        });
      } catch (error) {
        if (error.name === "AbortError") answer.stopped();
        else answer.fail(error);
      }
      if (done && done.requestedModel && done.requestedModel !== done.modelUsed) {
        answer.notice("info", `${done.requestedModel} is unavailable${done.fallbackReason ? ` (${done.fallbackReason})` : ""}: ${done.modelUsed} answered.`);
      }
      if (done && done.dlp_warning) answer.notice("warn", "Data-loss prevention redacted part of this exchange.");
      if (done && done.chatId) {
        api(`${base}/chats/${done.chatId}`, { method: "PATCH", body: { title: `⇄ ${model}: ${text}`.slice(0, 200) } }).catch(() => {});
      }
    }));
    run.hidden = false;
    stop.hidden = true;
    announce("Comparison complete");
    if (view) view.loadHistory();
  });
}

function compareColumn(label) {
  return h("section", { class: "compare-col", "aria-label": `Answer ${label}` },
    h("header", {}, h("span", { class: "badge info" }, label), h("strong", { class: "col-name truncate" }, "—")),
    h("div", { class: "col-body" }, h("p", { class: "muted" }, "Choose two models and a question, then Compare.")));
}

function paintCompareSources(list, sources) {
  clear(list, sources.map((s) => h("details", { class: "src", dataset: { n: String(s.number) } },
    h("summary", {}, h("span", { class: "badge info" }, String(s.number)), " ", s.title || s.sourceId, sourceWhere(s, sources) ? ` · ${sourceWhere(s, sources)}` : ""),
    h("blockquote", { class: "snippet" }, richSnippet(passageText(s.snippet))))));
}

/** Where in its document a source is: its section and/or page; with the paragraph too
 *  when another source of the same document would read the same, and which part of it
 *  when that is the same paragraph too (a long paragraph is split into passages). */
function sourceWhere(source, sources) {
  const parts = [];
  if (source.section) parts.push(source.section);
  if (source.page) parts.push(`p. ${source.page}`);
  const twins = sources.filter((s) => s.documentId === source.documentId && s.section === source.section && s.page === source.page);
  if (twins.length > 1) {
    const passages = twins.filter((s) => s.paragraph === source.paragraph).map((s) => s.chunkId).sort((a, b) => a - b);
    const part = passages.length > 1 ? ` (part ${passages.indexOf(source.chunkId) + 1})` : "";
    parts.push(`¶ ${source.paragraph + 1}${part}`);
  }
  return parts.join(" · ");
}

function revealSource(col, n) {
  const item = col.querySelector(`details.src[data-n="${n}"]`);
  if (!item) return;
  item.open = true;
  item.scrollIntoView({ block: "nearest" });
  item.querySelector("summary").focus();
}

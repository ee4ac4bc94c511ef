/* AutoRAG chat widget: served at /widget.js, embedded by a site with one tag:
 *
 *   <script src="https://autorag.example.com/widget.js" data-widget-id="wgt_…" async></script>
 *
 * It draws a chat bubble inside a shadow root (the host page's styles cannot reach in,
 * its own cannot leak out), asks the AutoRAG server that served it
 * (fetch with credentials omitted: no cookie is read, sent or set) and streams the
 * answer as server-sent events read from the response body. It defines no global name
 * and stores nothing: the conversation lives in this closure, and the last turns go
 * with each question. Everything shown is set as text, never parsed as HTML.
 */
(function () {
  "use strict";

  var script =
    document.currentScript || document.querySelector("script[data-widget-id][src*='widget.js']");
  if (!script || !script.dataset.widgetId) return;
  var widgetId = script.dataset.widgetId;
  var server = new URL(script.src, document.baseURI).origin;
  var base = server + "/api/widget/" + encodeURIComponent(widgetId);
  var MAX_TURNS = 6; // what the server accepts of the conversation so far

  var WORDS = {
    open: "Open chat",
    close: "Close chat",
    title: "Ask us",
    placeholder: "Type your question…",
    send: "Send",
    thinking: "Thinking…",
    sources: "Sources",
    unreachable:
      "This chat is not available here: the site may not be allowed to use it, or the " +
      "server cannot be reached.",
    failed: "Sorry, the answer failed. Please try again.",
    pii:
      "Part of this conversation looked like personal data (an email address, a card or " +
      "ID number…) and was hidden. Please do not share personal information here.",
    understood: "Understood",
  };

  var CSS = [
    ":host { all: initial; }",
    ".root { position: fixed; right: 16px; bottom: 16px; z-index: 2147483000;",
    "  font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif;",
    "  color: var(--text); }",
    ".bubble { width: 56px; height: 56px; border-radius: 50%; border: 0; cursor: pointer;",
    "  background: var(--primary); color: #fff; box-shadow: 0 4px 14px rgba(0,0,0,.25);",
    "  display: grid; place-items: center; margin-left: auto; }",
    ".bubble:focus-visible, button:focus-visible, textarea:focus-visible {",
    "  outline: 3px solid var(--primary); outline-offset: 2px; }",
    ".bubble svg { width: 26px; height: 26px; fill: currentColor; }",
    ".panel { position: absolute; right: 0; bottom: 68px; width: 360px;",
    "  max-width: calc(100vw - 32px); height: 520px; max-height: calc(100vh - 100px);",
    "  background: var(--background); border-radius: 12px; display: flex;",
    "  flex-direction: column; overflow: hidden; box-shadow: 0 8px 30px rgba(0,0,0,.3); }",
    ".panel[hidden] { display: none; }",
    "header { display: flex; align-items: center; gap: 8px; padding: 10px 12px;",
    "  background: var(--primary); color: #fff; }",
    "header h2 { font-size: 15px; margin: 0; flex: 1; }",
    "header button { background: transparent; color: inherit; border: 0; font-size: 20px;",
    "  cursor: pointer; min-width: 32px; min-height: 32px; border-radius: 6px; }",
    ".log { flex: 1; overflow-y: auto; padding: 12px; display: flex; flex-direction: column;",
    "  gap: 10px; }",
    ".msg { max-width: 85%; padding: 8px 10px; border-radius: 10px; white-space: pre-wrap;",
    "  overflow-wrap: anywhere; }",
    ".msg.user { align-self: flex-end; background: var(--primary); color: #fff; }",
    ".msg.assistant { align-self: flex-start; background: rgba(127,127,127,.14); }",
    ".msg.error { align-self: stretch; background: #fdecea; color: #8a1c12; }",
    ".status { font-size: 12px; opacity: .7; }",
    ".sources { margin: 6px 0 0; padding: 0; list-style: none; font-size: 12px; }",
    ".sources li { margin-top: 4px; }",
    ".sources a { color: inherit; }",
    ".pii { margin: 0 12px 8px; padding: 8px 10px; border-radius: 8px; background: #fff4ce;",
    "  color: #5c4400; font-size: 13px; }",
    ".pii button { margin-top: 6px; }",
    "form { display: flex; gap: 8px; padding: 10px; border-top: 1px solid rgba(127,127,127,.3); }",
    "textarea { flex: 1; resize: none; font: inherit; color: inherit; padding: 8px;",
    "  border-radius: 8px; border: 1px solid rgba(127,127,127,.5); background: transparent;",
    "  min-height: 40px; max-height: 120px; }",
    "button.send, .pii button { background: var(--primary); color: #fff; border: 0;",
    "  border-radius: 8px; padding: 0 14px; min-height: 40px; cursor: pointer; font: inherit; }",
    "button:disabled { opacity: .6; cursor: default; }",
    "@media (max-width: 480px) {",
    "  .root { right: 8px; bottom: 8px; }",
    "  .panel { position: fixed; inset: 0; width: auto; height: auto; max-width: none;",
    "    max-height: none; border-radius: 0; }",
    "}",
  ].join("\n");

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      node.setAttribute(key, attrs[key]);
    });
    if (text != null) node.textContent = text;
    return node;
  }

  // -- the shadow DOM ---------------------------------------------------------------------
  var host = el("div", { "data-autorag-widget": "" });
  var shadow = host.attachShadow({ mode: "open" });
  if (typeof CSSStyleSheet === "function" && "adoptedStyleSheets" in shadow) {
    // A constructed sheet: no <style> element that a strict host CSP would refuse.
    var sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    shadow.adoptedStyleSheets = [sheet];
  } else {
    shadow.appendChild(el("style", {}, CSS));
  }
  var root = el("div", { class: "root" });
  var panelId = "autorag-panel";
  var bubble = el("button", {
    class: "bubble",
    type: "button",
    "aria-label": WORDS.open,
    "aria-expanded": "false",
    "aria-controls": panelId,
  });
  var SVG = "http://www.w3.org/2000/svg";
  var icon = document.createElementNS(SVG, "svg");
  icon.setAttribute("viewBox", "0 0 24 24");
  icon.setAttribute("aria-hidden", "true");
  var path = document.createElementNS(SVG, "path");
  path.setAttribute("d", "M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z");
  icon.appendChild(path);
  bubble.appendChild(icon);
  var panel = el("section", { class: "panel", id: panelId, role: "dialog", "aria-label": WORDS.title });
  panel.hidden = true;
  var header = el("header");
  var heading = el("h2", {}, WORDS.title);
  var closer = el("button", { type: "button", "aria-label": WORDS.close }, "×");
  header.append(heading, closer);
  var log = el("div", { class: "log", role: "log", "aria-live": "polite" });
  var notice = el("div", { class: "pii", role: "alert" });
  notice.hidden = true;
  var form = el("form");
  var input = el("textarea", { rows: "1", "aria-label": WORDS.placeholder, placeholder: WORDS.placeholder, maxlength: "2000" });
  var send = el("button", { class: "send", type: "submit" }, WORDS.send);
  form.append(input, send);
  panel.append(header, log, notice, form);
  root.append(panel, bubble);
  shadow.appendChild(root);

  var history = []; // {role, content}: this visitor's conversation, in this page only
  var busy = false;
  var available = true;

  function setTheme(theme) {
    ["primary", "background", "text"].forEach(function (key) {
      var value = theme && theme[key];
      if (typeof value === "string" && /^#[0-9a-fA-F]{6}$/.test(value)) {
        root.style.setProperty("--" + key, value);
      }
    });
  }
  setTheme({ primary: "#2563eb", background: "#ffffff", text: "#111827" });

  function say(role, text) {
    var node = el("div", { class: "msg " + role }, text);
    log.appendChild(node);
    log.scrollTop = log.scrollHeight;
    return node;
  }

  function open(show) {
    panel.hidden = !show;
    bubble.setAttribute("aria-expanded", String(show));
    bubble.setAttribute("aria-label", show ? WORDS.close : WORDS.open);
    if (show) input.focus();
    else bubble.focus();
  }

  bubble.addEventListener("click", function () {
    open(panel.hidden);
  });
  closer.addEventListener("click", function () {
    open(false);
  });
  panel.addEventListener("keydown", function (event) {
    if (event.key === "Escape") open(false);
  });
  input.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit ? form.requestSubmit() : form.dispatchEvent(new Event("submit"));
    }
  });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var question = input.value.trim();
    if (!question || busy || !available) return;
    input.value = "";
    ask(question);
  });

  // -- talking to the server ------------------------------------------------------------------
  function request(path, init) {
    init = init || {};
    init.mode = "cors";
    init.credentials = "omit"; // never the host page's cookies, nor the server's
    init.cache = "no-store";
    init.referrerPolicy = "strict-origin";
    return fetch(base + path, init);
  }

  function unavailable(message) {
    available = false;
    input.disabled = true;
    send.disabled = true;
    say("error", message);
  }

  request("/config")
    .then(function (response) {
      if (!response.ok) throw new Error("status " + response.status);
      return response.json();
    })
    .then(function (config) {
      setTheme(config.theme);
      if (config.greeting) say("assistant", config.greeting);
    })
    .catch(function () {
      unavailable(WORDS.unreachable);
    });

  function ask(question) {
    busy = true;
    send.disabled = true;
    say("user", question);
    var answer = say("assistant", "");
    var words = el("span");
    var status = el("div", { class: "status" }, WORDS.thinking);
    answer.append(words, status);
    var text = "";
    function fail(message) {
      answer.className = "msg error";
      words.textContent = message;
    }
    var body = JSON.stringify({ message: question, history: history.slice(-MAX_TURNS) });
    request("/chat/stream", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Widget-Id": widgetId },
      body: body,
    })
      .then(function (response) {
        if (!response.ok) return refused(response).then(fail);
        return readEvents(response.body, function (name, data) {
          if (name === "token") {
            text += data.text;
            words.textContent = text;
          } else if (name === "status") {
            status.textContent = data.message || WORDS.thinking;
          } else if (name === "citations") {
            showSources(answer, data.sources || []);
          } else if (name === "done") {
            if (typeof data.answer === "string") words.textContent = text = data.answer;
            history.push({ role: "user", content: question }, { role: "assistant", content: text });
            if (data.dlp_warning) warnPii();
          } else if (name === "error") {
            fail(data.message || WORDS.failed);
          }
          log.scrollTop = log.scrollHeight;
        });
      })
      .catch(function () {
        fail(WORDS.unreachable);
      })
      .then(function () {
        status.remove();
        busy = false;
        send.disabled = !available;
        if (!words.textContent) fail(WORDS.failed);
      });
  }

  // The words for a refused question: the server's own, or when to try again.
  function refused(response) {
    return response
      .json()
      .catch(function () {
        return {};
      })
      .then(function (problem) {
        var wait = response.headers.get("Retry-After");
        if (response.status === 429 && wait) return "Too many questions: try again in " + wait + " s.";
        return problem.detail || WORDS.failed;
      });
  }

  // Server-sent events from a fetch body: "event:" and "data:" lines, a blank line ends one.
  function readEvents(stream, onEvent) {
    var reader = stream.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    function dispatch(block) {
      var name = "message";
      var data = [];
      block.split("\n").forEach(function (line) {
        if (line.indexOf("event:") === 0) name = line.slice(6).trim();
        else if (line.indexOf("data:") === 0) data.push(line.slice(5).replace(/^ /, ""));
      });
      if (!data.length) return;
      try {
        onEvent(name, JSON.parse(data.join("\n")));
      } catch (error) {
        /* a malformed event is skipped */
      }
    }
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) {
          if (buffer.trim()) dispatch(buffer);
          return;
        }
        buffer += decoder.decode(chunk.value, { stream: true }).replace(/\r\n?/g, "\n");
        var end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          dispatch(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
        return pump();
      });
    }
    return pump();
  }

  function showSources(answer, sources) {
    var cited = sources.filter(function (source) {
      return source.cited !== false;
    });
    if (!cited.length) return;
    var list = el("ol", { class: "sources", "aria-label": WORDS.sources });
    cited.forEach(function (source) {
      var item = el("li");
      var label = "[" + source.number + "] " + (source.title || source.source || "");
      if (typeof source.link === "string" && /^https:\/\//.test(source.link)) {
        item.appendChild(el("a", { href: source.link, target: "_blank", rel: "noopener noreferrer" }, label));
      } else {
        item.textContent = label;
      }
      item.title = source.snippet || "";
      list.appendChild(item);
    });
    answer.appendChild(list);
  }

  function warnPii() {
    notice.textContent = WORDS.pii;
    var ok = el("button", { type: "button" }, WORDS.understood);
    ok.addEventListener("click", function () {
      notice.hidden = true;
      input.focus();
    });
    notice.appendChild(el("br"));
    notice.appendChild(ok);
    notice.hidden = false;
    ok.focus();
  }

  (document.body || document.documentElement).appendChild(host);
})();

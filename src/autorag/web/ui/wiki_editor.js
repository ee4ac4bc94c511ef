// The page editor: title, address (new pages), a template to start from, Markdown with a
// live preview and "[[" completion of page titles, and a save that carries the version it
// edits. A stale save never loses the text: it says someone saved since, shows their
// version beside the changes, and lets you keep yours.

import { api, ApiError } from "./api.js";
import { confirmDialog, copyText, debounce, field, h, icon, modal, modKey, setFieldError, toast, uid } from "./dom.js";
import { renderDiff } from "./wiki_diff.js";
import { pagePart, pageUrl, savePage, sourceOf, wikiHash } from "./wiki_api.js";
import { renderMarkdown, toPath } from "./wiki_markdown.js";

const MAX_SUGGESTIONS = 8;

/**
 * options: archive (name), page (the page edited, or null for a new one), path, title
 * (a new page's proposed address and title), pages (summaries, for completion and
 * previews), templates, wikilink(parts) -> Node (how previews draw links),
 * onSaved(page), onCancel().
 * Answers {el, focus, dirty}.
 */
export function pageEditor({ archive, page = null, path = "", title = "", pages = [], templates = [], wikilink, onSaved, onCancel }) {
  const creating = !page;
  let baseVersion = page ? page.version : null;
  let pathTouched = Boolean(path);
  const original = page ? sourceOf(page) : "";

  const titleInput = h("input", { class: "input", type: "text", value: page ? page.title : title, autocomplete: "off", required: true });
  const pathInput = h("input", { class: "input mono", type: "text", value: path || toPath(title), autocomplete: "off", spellcheck: "false", required: true });
  const area = h("textarea", { class: "input wiki-source", value: original, spellcheck: "true", rows: 18,
    "aria-autocomplete": "list", "aria-haspopup": "listbox", "aria-expanded": "false" });
  const suggest = h("ul", { class: "wiki-suggest", role: "listbox", id: uid("suggest"), "aria-label": "Pages to link", hidden: true });
  area.setAttribute("aria-controls", suggest.id);
  const preview = h("div", { class: "wiki-body preview", "aria-live": "off" });
  const conflict = h("div", { class: "stack", "aria-live": "polite" });
  const status = h("span", { class: "muted small", "aria-live": "polite" });
  const saveButton = h("button", { class: "btn primary", type: "submit" }, icon("check", "sm"), creating ? "Create page" : "Save");

  let templateSelect = null;
  if (creating && templates.length) {
    templateSelect = h("select", { class: "input" }, h("option", { value: "" }, "A blank page"),
      templates.map((t) => h("option", { value: t.name }, t.title || t.name)));
    templateSelect.addEventListener("change", async () => {
      const chosen = templates.find((t) => t.name === templateSelect.value);
      if (area.value.trim() && area.value !== lastTemplateText
        && !(await confirmDialog({ title: "Replace your text?", message: "The template replaces the text you wrote.", confirm: "Replace" }))) {
        templateSelect.value = lastTemplate;
        return;
      }
      lastTemplate = templateSelect.value;
      lastTemplateText = chosen ? chosen.body.replaceAll("{{title}}", titleInput.value.trim() || "Untitled") : "";
      area.value = lastTemplateText;
      paintPreview();
    });
  }
  let lastTemplate = "";
  let lastTemplateText = "";

  titleInput.addEventListener("input", () => {
    if (creating && !pathTouched) pathInput.value = toPath(titleInput.value);
  });
  pathInput.addEventListener("input", () => { pathTouched = true; setFieldError(pathInput, ""); });

  const paintPreview = () => {
    renderMarkdown(preview, area.value.replace(/^---\n[\s\S]*?\n---\n?/, ""), { wikilink });
    if (!area.value.trim()) preview.replaceChildren(h("p", { class: "muted" }, "The preview shows here as you write."));
  };
  const later = debounce(paintPreview, 150);
  area.addEventListener("input", () => { later(); complete(); });
  area.addEventListener("keydown", onKey);
  area.addEventListener("blur", () => setTimeout(closeSuggest, 150));
  area.addEventListener("click", complete);

  // -- "[[" completion -------------------------------------------------------------------
  let options = [];
  let active = -1;
  function query() {
    const before = area.value.slice(0, area.selectionStart);
    const m = /\[\[([^[\]|#\n]{0,80})$/.exec(before);
    return m ? m[1] : null;
  }
  function complete() {
    const q = query();
    if (q === null) { closeSuggest(); return; }
    const needle = q.trim().toLowerCase();
    options = pages.filter((p) => !needle || p.title.toLowerCase().includes(needle) || p.path.includes(needle))
      .sort((a, b) => Number(!a.title.toLowerCase().startsWith(needle)) - Number(!b.title.toLowerCase().startsWith(needle)) || a.title.localeCompare(b.title))
      .slice(0, MAX_SUGGESTIONS);
    if (!options.length) {
      suggest.replaceChildren(h("li", { class: "muted small", role: "presentation" }, needle ? `No page called “${q.trim()}” yet: the link will offer to create it.` : "No pages yet."));
      active = -1;
    } else {
      active = 0;
      suggest.replaceChildren(...options.map((p, i) => h("li", {
        role: "option", id: `${suggest.id}-${i}`, "aria-selected": String(i === active),
        on: { mousedown: (e) => { e.preventDefault(); pick(i); } },
      }, h("strong", {}, p.title), h("small", { class: "muted mono" }, p.path))));
    }
    suggest.hidden = false;
    suggest.style.top = `${caretBottom(area)}px`;
    area.setAttribute("aria-expanded", "true");
    mark();
  }
  function mark() {
    [...suggest.querySelectorAll("[role=option]")].forEach((li, i) => li.setAttribute("aria-selected", String(i === active)));
    if (active >= 0) area.setAttribute("aria-activedescendant", `${suggest.id}-${active}`);
    else area.removeAttribute("aria-activedescendant");
  }
  function closeSuggest() {
    suggest.hidden = true;
    options = [];
    active = -1;
    area.setAttribute("aria-expanded", "false");
    area.removeAttribute("aria-activedescendant");
  }
  function pick(i) {
    const chosen = options[i];
    const q = query();
    if (!chosen || q === null) return;
    const at = area.selectionStart;
    const start = at - q.length;
    const after = area.value.slice(at);
    const close = after.startsWith("]]") ? "" : "]]";
    area.setRangeText(`${chosen.title}${close}`, start, at, "end");
    if (!close) area.selectionStart = area.selectionEnd = start + chosen.title.length + 2;
    closeSuggest();
    later();
    area.focus();
  }
  function onKey(event) {
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") {
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    if (suggest.hidden || !options.length) {
      if (event.key === "Escape" && !suggest.hidden) { event.preventDefault(); event.stopPropagation(); closeSuggest(); }
      return;
    }
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      active = (active + (event.key === "ArrowDown" ? 1 : -1) + options.length) % options.length;
      mark();
    } else if (event.key === "Enter" || event.key === "Tab") {
      event.preventDefault();
      pick(active);
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      closeSuggest();
    }
  }

  // -- saving ------------------------------------------------------------------------------
  const target = () => (creating ? pathInput.value.trim().replace(/^\/+|\/+$/g, "").replace(/\.md$/i, "") : page.path);
  let saving = false;
  async function save(event) {
    if (event) event.preventDefault();
    if (saving) return;
    const titleText = titleInput.value.trim();
    if (!titleText) { setFieldError(titleInput, "Give the page a title."); titleInput.focus(); return; }
    setFieldError(titleInput, "");
    if (creating && !target()) { setFieldError(pathInput, "Give the page an address, such as projects/apollo."); pathInput.focus(); return; }
    saving = true;
    saveButton.disabled = true;
    status.textContent = "Saving…";
    try {
      const saved = await savePage(archive, target(), {
        title: titleText, body: area.value, baseVersion,
        template: creating && templateSelect && templateSelect.value ? templateSelect.value : undefined,
      });
      status.textContent = "";
      conflict.replaceChildren();
      dirty = false;
      onSaved(saved);
    } catch (error) {
      status.textContent = "";
      if (error instanceof ApiError && error.code === "stale_version") showConflict(error.problem.currentVersion);
      else if (error instanceof ApiError && error.code === "page_exists") {
        conflict.replaceChildren(h("div", { class: "notice warn", role: "alert" }, icon("alert"),
          h("div", { class: "notice-body" }, "A page already has this address. Choose another address, or ",
            h("a", { href: wikiHash(archive, target()) }, "open that page"), ".")));
        if (creating) { setFieldError(pathInput, "A page already has this address."); pathInput.focus(); }
      } else if (error instanceof ApiError && error.code === "invalid_page_path") {
        setFieldError(pathInput, error.message);
        pathInput.focus();
      } else {
        conflict.replaceChildren(h("div", { class: "notice error", role: "alert" }, icon("alert"), h("div", { class: "notice-body" }, `Not saved: ${error.message}`)));
      }
    } finally {
      saving = false;
      saveButton.disabled = false;
    }
  }

  function showConflict(current) {
    const theirs = current ? `version ${current}` : "a newer version";
    conflict.replaceChildren(h("div", { class: "notice warn conflict", role: "alert" }, icon("alert"),
      h("div", { class: "notice-body" },
        h("strong", {}, "Someone saved this page since you opened it."),
        h("span", { class: "why" }, `They saved ${theirs}; you started from version ${baseVersion}. Your text is still here, not saved.`),
        h("div", { class: "btn-row conflict-actions" },
          h("button", { class: "btn small", type: "button", on: { click: () => compare(current) } }, icon("eye", "sm"), "See their version"),
          h("button", { class: "btn small", type: "button", on: { click: async () => { await copyText(area.value); toast("Your text is copied."); } } }, icon("copy", "sm"), "Copy my text"),
          h("button", { class: "btn small danger", type: "button", on: { click: () => keepMine(current) } }, "Save mine over theirs")))));
  }

  async function keepMine(current) {
    const ok = await confirmDialog({
      title: "Save your text over theirs?",
      message: "Your text becomes the newest version. Theirs stays in the page's history, so it can still be restored.",
      confirm: "Save mine",
      danger: true,
    });
    if (!ok) return;
    let version = current;
    if (!version) {
      const fresh = await api(pageUrl(archive, page.path));
      version = fresh.version;
    }
    baseVersion = version;
    save(null);
  }

  async function compare(current) {
    const body = h("div", { class: "stack" }, h("p", { class: "muted" }, "Loading their version…"));
    const useTheirs = h("button", { class: "btn", type: "button" }, "Use their version");
    const keep = h("button", { class: "btn primary", type: "button" }, "Keep editing mine");
    const dlg = modal({ title: "Their version and your changes", body, foot: [useTheirs, keep], className: "wide" });
    keep.addEventListener("click", () => dlg.close());
    try {
      const [fresh, proposed] = await Promise.all([
        api(pageUrl(archive, page.path)),
        api(pagePart(archive, page.path, "preview"), { method: "POST", body: { title: titleInput.value.trim(), body: area.value } }),
      ]);
      const rendered = h("div", { class: "wiki-body" });
      renderMarkdown(rendered, fresh.body || "", { wikilink });
      body.replaceChildren(
        h("h3", {}, `Your changes to their version ${fresh.version || current || ""}`.trim()),
        renderDiff(proposed.diff, { empty: "Your text is the same as theirs." }),
        h("details", {}, h("summary", {}, `Their version: “${fresh.title}”, saved by ${fresh.updatedBy || "someone"}`), rendered));
      useTheirs.addEventListener("click", async () => {
        await copyText(area.value).catch(() => {});
        area.value = sourceOf(fresh);
        titleInput.value = fresh.title;
        baseVersion = fresh.version;
        conflict.replaceChildren();
        paintPreview();
        dlg.close();
        toast("Their version is in the editor. Your text was copied, in case you need it.");
      });
    } catch (error) {
      body.replaceChildren(h("p", { class: "notice error" }, error.message));
    }
  }

  let dirty = false;
  const markDirty = () => { dirty = true; };
  area.addEventListener("input", markDirty);
  titleInput.addEventListener("input", markDirty);

  const cancel = h("button", { class: "btn", type: "button", on: { click: async () => {
    if (!dirty || await confirmDialog({ title: "Leave without saving?", message: "Your changes will be lost.", confirm: "Leave", danger: true })) onCancel();
  } } }, "Cancel");
  const form = h("form", { class: "wiki-editor stack", "aria-label": creating ? "New page" : `Edit ${page.title}`, novalidate: true, on: { submit: save } },
    h("div", { class: "grid-form" },
      field("Title", titleInput),
      creating ? field("Address", pathInput, { hint: "Lowercase words, “/” for sub-pages: projects/apollo" }) : null,
      templateSelect ? field("Start from", templateSelect, { hint: "A template fills in the page's outline." }) : null),
    h("div", { class: "editor-panes" },
      h("div", { class: "field pane" },
        h("label", { for: area.id || (area.id = uid("source")) }, "Text ", h("span", { class: "hint" }, "Markdown; type [[ to link a page")),
        h("div", { class: "suggest-host" }, area, suggest)),
      h("section", { class: "pane", "aria-label": "Preview" }, h("div", { class: "label small muted" }, "Preview"), preview)),
    conflict,
    h("div", { class: "btn-row" }, saveButton, cancel, status, h("span", { class: "spacer" }), h("span", { class: "hint keyboard-only" }, `${modKey}+S saves`)));
  paintPreview();
  return {
    el: form,
    focus: () => (creating && !titleInput.value ? titleInput : area).focus(),
    dirty: () => dirty,
  };
}

// How far below the textarea's top the caret's line ends (a hidden copy of the text up
// to the caret, laid out like the textarea, measures it): the list opens under the line
// being written.
const MIRRORED = ["boxSizing", "width", "paddingTop", "paddingRight", "paddingBottom", "paddingLeft", "borderTopWidth",
  "borderRightWidth", "borderBottomWidth", "borderLeftWidth", "fontFamily", "fontSize", "fontWeight", "lineHeight", "letterSpacing", "tabSize"];
function caretBottom(area) {
  const style = getComputedStyle(area);
  const mirror = document.createElement("div");
  for (const name of MIRRORED) mirror.style[name] = style[name];
  Object.assign(mirror.style, { position: "absolute", visibility: "hidden", whiteSpace: "pre-wrap", overflowWrap: "break-word", top: "0", left: "-9999px" });
  mirror.textContent = area.value.slice(0, area.selectionStart);
  const marker = document.createElement("span");
  marker.textContent = "\u200b";
  mirror.append(marker);
  document.body.append(mirror);
  const bottom = marker.offsetTop + marker.offsetHeight - area.scrollTop;
  mirror.remove();
  return Math.max(8, Math.min(area.clientHeight, bottom)) + 4;
}

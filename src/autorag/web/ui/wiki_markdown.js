// A wiki page's Markdown as nodes: headings, paragraphs, lists (nested, task lists),
// quotes, code, tables, rules, emphasis, links and [[wikilinks]]. Like render.js, every
// piece of text becomes a text node and every element is built here, so a page can never
// inject markup: "<script>" or "onerror=" in a page is shown as the text it is, and a
// link is a link only when its address is a web or mail address (never javascript:,
// data: or vbscript:).

import { h } from "./dom.js";

const FENCE = /^ {0,3}(```+|~~~+)\s*([\w+-]*)/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+|$)(.*?)(?:[ \t]+#+[ \t]*)?$/;
const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
const TABLE_RULE = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;
const INLINE = new RegExp([
  /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/.source, // 1,2 code
  /\[\[([^[\]\n]+?)\]\]/.source, // 3 wikilink
  /!\[([^\]\n]*)\]\(\s*([^()\s]+)(?:\s+"[^"\n]*")?\s*\)/.source, // 4,5 image
  /\[([^[\]\n]+)\]\(\s*([^()\s]+)(?:\s+"([^"\n]*)")?\s*\)/.source, // 6,7,8 link
  /<((?:https?:\/\/|mailto:)[^\s<>]+)>/.source, // 9 autolink
  /(https?:\/\/[^\s<>()]*[^\s<>().,;:!?'"\]])/.source, // 10 bare address
  /\*\*(?=\S)([^*\n]*?\S)\*\*|__(?=\S)([^_\n]*?\S)__/.source, // 11,12 strong
  /~~(?=\S)([^~\n]*?\S)~~/.source, // 13 strike
  /\*(?=[^\s*])([^*\n]*?[^\s*])\*|(?<![\w])_(?=[^\s_])([^_\n]*?[^\s_])_(?![\w])/.source, // 14,15 emphasis
  /\[\^([^\]\s]{1,40})\]/.source, // 16 footnote reference
].join("|"), "g");
// "[^1]: the note", its next lines indented (a synthesised page cites its sources so).
const FOOTNOTE = /^ {0,3}\[\^([^\]\s]{1,40})\]:[ \t]?(.*)$/;

/** The parts of a ``[[target#heading|label]]``'s inside. */
export function parseWikilink(inside) {
  const bar = inside.indexOf("|");
  const ref = (bar === -1 ? inside : inside.slice(0, bar)).trim();
  const label = bar === -1 ? null : inside.slice(bar + 1).trim() || null;
  const hash = ref.indexOf("#");
  const target = (hash === -1 ? ref : ref.slice(0, hash)).trim();
  const heading = hash === -1 ? null : ref.slice(hash + 1).trim() || null;
  return { target, heading, label };
}

/** A page path from a title or path as people type it, as the server normalises it:
 *  lowercase, spaces to "-", no ".md", no surrounding slashes (other odd characters
 *  become "-" here; the server has the last word). */
export function toPath(text) {
  return String(text || "").trim().toLowerCase()
    .replace(/\.md$/, "")
    .replace(/\s+/g, "-")
    .split("/")
    .map((part) => part.replace(/[^a-z0-9._-]+/g, "-").replace(/-{2,}/g, "-").replace(/^[-_.]+/, "").replace(/-+$/, ""))
    .filter(Boolean)
    .join("/");
}

/** A heading's anchor id. */
export function headingId(text) {
  return `h-${String(text).toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "-").replace(/^-|-$/g, "") || "section"}`;
}

/** The address a link may have, or null: web and mail addresses, and this site's own. */
export function safeHref(raw) {
  const text = String(raw || "").replace(/[\u0000-\u0020\u007f]+/g, "");
  if (!text) return null;
  let url;
  try { url = new URL(text, location.origin); } catch { return null; }
  if (url.protocol === "http:" || url.protocol === "https:" || url.protocol === "mailto:") return url.href;
  return null;
}

function hasScheme(text) { return /^[a-z][a-z0-9+.-]*:/i.test(text.trim()); }

/**
 * Render ``text`` into ``container``.
 * options.wikilink({target, heading, label}) -> Node  (a [[link]], or a relative .md link)
 * options.anchor(headingText) -> href                 (a "#heading" link within the page)
 */
export function renderMarkdown(container, text, options = {}) {
  const ids = new Map();
  const ctx = {
    wikilink: options.wikilink || (({ target, label }) => h("span", { class: "wikilink" }, label || target)),
    anchor: options.anchor || null,
    id(textValue) {
      const base = headingId(textValue);
      const n = (ids.get(base) || 0) + 1;
      ids.set(base, n);
      return n === 1 ? base : `${base}-${n}`;
    },
  };
  const lines = String(text || "").replace(/\r\n?/g, "\n").split("\n");
  ctx.notes = footnotes(lines);
  ctx.cited = [];
  ctx.container = container;
  container.replaceChildren(blocks(ctx.notes.rest, ctx));
  if (ctx.notes.byLabel.size) container.append(notesSection(ctx));
  return container;
}

// Footnote definitions taken out of the text (never inside a code fence): their text by
// label, and the other lines.
function footnotes(lines) {
  const byLabel = new Map();
  const rest = [];
  let fence = null;
  let open = null; // the definition whose indented lines continue it
  for (const line of lines) {
    const opening = FENCE.exec(line);
    if (fence) { if (opening && opening[1][0] === fence) fence = null; rest.push(line); continue; }
    if (opening) { fence = opening[1][0]; open = null; rest.push(line); continue; }
    const note = FOOTNOTE.exec(line);
    if (note) {
      open = note[1];
      if (!byLabel.has(open)) byLabel.set(open, note[2].trim());
      continue;
    }
    if (open && /^\s{2,}\S/.test(line)) { byLabel.set(open, `${byLabel.get(open)} ${line.trim()}`); continue; }
    open = null;
    rest.push(line);
  }
  return { byLabel, rest };
}

function jumpTo(ctx, selector) {
  return (event) => {
    event.preventDefault(); // a "#…" address would change the page's route
    ctx.container.querySelector(selector)?.scrollIntoView({ block: "center", behavior: "smooth" });
  };
}

// "[^label]": a numbered mark that leads to its note (and its text as a tooltip); a
// label nothing defines stays the text it is.
function footnoteRef(label, ctx) {
  const note = ctx.notes.byLabel.get(label);
  if (note === undefined) return `[^${label}]`;
  if (!ctx.cited.includes(label)) ctx.cited.push(label);
  const n = ctx.cited.indexOf(label) + 1;
  const key = CSS.escape(label);
  return h("sup", { class: "footnote-ref", "data-ref": label },
    h("a", { href: "#", title: note, on: { click: jumpTo(ctx, `[data-note="${key}"]`) } }, String(n)));
}

// The notes, in the order the text first cites them (then any it never cites).
function notesSection(ctx) {
  const labels = [...ctx.cited, ...[...ctx.notes.byLabel.keys()].filter((l) => !ctx.cited.includes(l))];
  return h("section", { class: "footnotes", "aria-label": "Notes" }, h("ol", {}, labels.map((label) => {
    const item = inline(h("li", { "data-note": label }), ctx.notes.byLabel.get(label), { ...ctx, cited: [...ctx.cited] });
    if (ctx.cited.includes(label)) {
      item.append(" ", h("a", { href: "#", class: "footnote-back", "aria-label": "Back to the text",
        on: { click: jumpTo(ctx, `[data-ref="${CSS.escape(label)}"]`) } }, "↩"));
    }
    return item;
  })));
}

function blocks(lines, ctx) {
  const frag = document.createDocumentFragment();
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i += 1; continue; }
    const fence = FENCE.exec(line);
    if (fence) {
      const body = [];
      const close = new RegExp(`^ {0,3}${fence[1][0] === "`" ? "`" : "~"}{${fence[1].length},}\\s*$`);
      i += 1;
      while (i < lines.length && !close.test(lines[i])) { body.push(lines[i]); i += 1; }
      i += 1;
      const code = h("code", {}, body.join("\n"));
      if (fence[2]) code.dataset.lang = fence[2];
      frag.append(h("pre", {}, code));
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = Math.min(6, heading[1].length + 1); // the page's title is the one h1
      const el = h(`h${level}`, { id: ctx.id(plain(heading[2])) });
      inline(el, heading[2], ctx);
      frag.append(el);
      i += 1;
      continue;
    }
    if (RULE.test(line)) { frag.append(h("hr")); i += 1; continue; }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && lines[i].trim() && QUOTE.test(lines[i])) { inner.push(lines[i].replace(QUOTE, "")); i += 1; }
      frag.append(h("blockquote", {}, blocks(inner, ctx)));
      continue;
    }
    if (ITEM.test(line)) {
      const start = i;
      // A blank line between items keeps the list going (a "loose" list).
      while (i < lines.length && (ITEM.test(lines[i]) || (lines[i].trim() && /^\s{2,}/.test(lines[i]))
        || (!lines[i].trim() && i + 1 < lines.length && ITEM.test(lines[i + 1])))) i += 1;
      frag.append(list(lines.slice(start, i), ctx));
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      const rows = [line];
      i += 2;
      while (i < lines.length && lines[i].trim() && lines[i].includes("|")) { rows.push(lines[i]); i += 1; }
      frag.append(table(rows, ctx));
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !FENCE.test(lines[i]) && !HEADING.test(lines[i])
      && !RULE.test(lines[i]) && !QUOTE.test(lines[i]) && !(para.length && ITEM.test(lines[i]))) {
      para.push(lines[i].trim());
      i += 1;
    }
    if (!para.length) { para.push(line.trim()); i += 1; }
    const p = h("p");
    para.forEach((part, index) => {
      if (index) p.append(h("br"));
      inline(p, part, ctx);
    });
    frag.append(p);
  }
  return frag;
}

// Items nest by their indentation; a task item ("- [x] done") gets a checkbox.
function list(lines, ctx) {
  const stack = []; // {indent, el}: the open lists, outermost first
  let lastLi = null;
  const open = (ordered, first) => {
    const el = h(ordered ? "ol" : "ul");
    if (ordered && first !== 1) el.start = first;
    return el;
  };
  for (const line of lines) {
    const m = ITEM.exec(line);
    if (!m) {
      if (lastLi && line.trim()) { lastLi.append(h("br")); inline(lastLi, line.trim(), ctx); }
      continue;
    }
    const indent = m[1].replace(/\t/g, "    ").length;
    const ordered = /\d/.test(m[2]);
    while (stack.length > 1 && indent < stack[stack.length - 1].indent) stack.pop();
    if (!stack.length) stack.push({ indent, el: open(ordered, Number.parseInt(m[2], 10)) });
    else if (indent >= stack[stack.length - 1].indent + 2 && lastLi) {
      const el = open(ordered, Number.parseInt(m[2], 10));
      lastLi.append(el);
      stack.push({ indent, el });
    }
    const li = h("li");
    const task = /^\[([ xX])\][ \t]+(.*)$/.exec(m[3]);
    if (task) {
      li.classList.add("task");
      li.append(h("input", { type: "checkbox", checked: task[1] !== " ", disabled: true, "aria-label": task[1] !== " " ? "Done" : "Not done" }), " ");
      inline(li, task[2], ctx);
    } else inline(li, m[3], ctx);
    stack[stack.length - 1].el.append(li);
    lastLi = li;
  }
  return stack.length ? stack[0].el : h("ul");
}

function cells(row) {
  let text = row.trim();
  if (text.startsWith("|")) text = text.slice(1);
  if (text.endsWith("|") && !text.endsWith("\\|")) text = text.slice(0, -1);
  return text.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

function table(rows, ctx) {
  const head = cells(rows[0]);
  const thead = h("thead", {}, h("tr", {}, head.map((c) => inline(h("th", { scope: "col" }), c, ctx))));
  const tbody = h("tbody", {}, rows.slice(1).map((row) => {
    const values = cells(row);
    return h("tr", {}, head.map((_, index) => inline(h("td"), values[index] || "", ctx)));
  }));
  return h("div", { class: "table-wrap" }, h("table", { class: "data" }, thead, tbody));
}

// Text without its Markdown marks (for a heading's anchor).
function plain(text) {
  return String(text).replace(/\[\[([^\]|]*\|)?([^\]]+)\]\]/g, "$2").replace(/[*_`~]/g, "");
}

function link(href, children, title) {
  const external = !href.startsWith(location.origin);
  return h("a", { href, title: title || undefined, target: external ? "_blank" : undefined, rel: external ? "noopener noreferrer nofollow" : undefined }, children);
}

function inline(el, text, ctx) {
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) el.append(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[1] !== undefined) el.append(h("code", {}, m[2].replace(/^ (.*) $/, "$1")));
    else if (m[3] !== undefined) el.append(ctx.wikilink(parseWikilink(m[3])));
    else if (m[5] !== undefined) el.append(image(m[4], m[5]));
    else if (m[7] !== undefined) el.append(mdLink(m[6], m[7], m[8], ctx));
    else if (m[9] !== undefined || m[10] !== undefined) {
      const address = m[9] || m[10];
      const href = safeHref(address);
      el.append(href ? link(href, address) : address);
    } else if (m[11] !== undefined || m[12] !== undefined) el.append(inline(h("strong"), m[11] ?? m[12], ctx));
    else if (m[13] !== undefined) el.append(inline(h("del"), m[13], ctx));
    else if (m[14] !== undefined || m[15] !== undefined) el.append(inline(h("em"), m[14] ?? m[15], ctx));
    else if (m[16] !== undefined) el.append(ctx.notes ? footnoteRef(m[16], ctx) : m[0]);
  }
  if (last < text.length) el.append(text.slice(last));
  return el;
}

// [text](address): a web or mail address is a link; "#heading" a place in this page;
// "other page.md" (an imported vault's link) the wiki page by that path; anything else
// (javascript:, data:, …) only its text.
function mdLink(label, address, title, ctx) {
  const content = inline(h("span"), label, ctx);
  const parts = [...content.childNodes];
  if (address.startsWith("#")) {
    let heading = address.slice(1);
    try { heading = decodeURIComponent(heading); } catch { /* as written: a bad escape is text */ }
    return ctx.anchor ? h("a", { href: ctx.anchor(heading) }, parts) : h("span", {}, parts);
  }
  if (!hasScheme(address) && !address.startsWith("/")) {
    let ref = address;
    try { ref = decodeURIComponent(address); } catch { /* as written */ }
    const [path, heading] = ref.split("#");
    return ctx.wikilink({ target: path.replace(/^\.\//, "").replace(/\.md$/i, ""), heading: heading || null, label: content.textContent, nodes: parts });
  }
  const href = safeHref(address);
  if (!href) return h("span", { class: "unsafe-link", title: "Link removed: only web and email addresses can be links" }, parts);
  return link(href, parts, title);
}

function image(alt, address) {
  const href = safeHref(address);
  if (href && href.startsWith(`${location.origin}/`)) return h("img", { src: href, alt, loading: "lazy" });
  if (/^data:image\/(png|gif|jpe?g|webp);base64,[a-z0-9+/=]+$/i.test(address)) return h("img", { src: address, alt, loading: "lazy" });
  return href ? link(href, `🖼 ${alt || "image"}`) : h("span", { class: "muted" }, `🖼 ${alt || "image"}`);
}

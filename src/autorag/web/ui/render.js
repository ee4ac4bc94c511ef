// Answers as nodes: paragraphs, lists, code, **bold**, `code`, [REDACTED] and the [n]
// citations as chips. Text never becomes markup.

import { h } from "./dom.js";

const INLINE = /(\*\*[^*\n]+\*\*|`[^`\n]+`|\[REDACTED\]|\[\d{1,3}(?:\s*[,;]\s*\d{1,3})*\])/g;

/** Render ``text`` into ``container``; ``cite(n)`` builds a citation chip. */
export function renderAnswer(container, text, cite) {
  const frag = document.createDocumentFragment();
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.startsWith("```")) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].startsWith("```")) { body.push(lines[i]); i += 1; }
      i += 1;
      frag.append(h("pre", {}, h("code", {}, body.join("\n"))));
      continue;
    }
    if (/^\s*([-*•]|\d+[.)])\s+/.test(line)) {
      const ordered = /^\s*\d+[.)]/.test(line);
      const list = h(ordered ? "ol" : "ul");
      while (i < lines.length && /^\s*([-*•]|\d+[.)])\s+/.test(lines[i])) {
        list.append(inline(h("li"), lines[i].replace(/^\s*([-*•]|\d+[.)])\s+/, ""), cite));
        i += 1;
      }
      frag.append(list);
      continue;
    }
    if (!line.trim()) { i += 1; continue; }
    const para = [];
    while (i < lines.length && lines[i].trim() && !lines[i].startsWith("```") && !/^\s*([-*•]|\d+[.)])\s+/.test(lines[i])) {
      para.push(lines[i].replace(/^#{1,6}\s+/, ""));
      i += 1;
    }
    const p = h("p");
    para.forEach((part, index) => {
      if (index) p.append(h("br"));
      inline(p, part, cite);
    });
    frag.append(p);
  }
  container.replaceChildren(frag);
  return container;
}

function inline(el, text, cite) {
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    el.append(text.slice(last, m.index));
    const token = m[0];
    if (token.startsWith("**")) el.append(h("strong", {}, token.slice(2, -2)));
    else if (token.startsWith("`")) el.append(h("code", {}, token.slice(1, -1)));
    else if (token === "[REDACTED]") el.append(h("span", { class: "redacted", title: "Redacted by data-loss prevention" }, "[REDACTED]"));
    else {
      for (const n of token.slice(1, -1).split(/[,;]/)) el.append(cite(Number(n.trim())));
    }
    last = m.index + token.length;
  }
  el.append(text.slice(last));
  return el;
}

export function legsLabel(legs) {
  return {
    both: ["semantic", "keyword"],
    "semantic+keyword": ["semantic", "keyword"],
    vector: ["semantic"],
    fts: ["keyword"],
  }[legs] || [legs];
}

export function legsBadges(legs) {
  return h("span", { class: "legs", title: "Which search found it: semantic (vectors) and/or keyword (full text)" },
    legsLabel(legs).map((leg) => h("span", { class: ["badge", leg === "semantic" ? "info" : "ok"] }, leg)));
}

// -- passages and documents: Markdown shown as text, never as markup ---------------------------

const MD_INLINE = /\*\*([^*\n]+)\*\*|`([^`\n]+)`|\[REDACTED\]/g;
const MD_HEADING = /^ {0,3}(#{1,6})[ \t]+/;
const MD_ITEM = /^\s*([-*•+]|\d+[.)])\s+/;

/** A passage on one line (a source's snippet) without Markdown's marks: "### 5.1 Leave"
 *  reads "5.1 Leave", "**bold**" reads "bold". */
export function passageText(text) {
  return String(text || "")
    .replace(/(^|\s)#{1,6}[ \t]+/g, "$1")
    .replace(/\*\*([^*\n]+)\*\*/g, "$1")
    .replace(/`([^`\n]+)`/g, "$1");
}

/** A document's text into ``container``: Markdown headings, lists, code and **bold** as
 *  elements (built as nodes: the text never becomes markup); the characters
 *  ``mark.start``..``mark.end`` of ``text`` (the cited passage) inside <mark> elements.
 *  Answers the first <mark>, or null. */
export function renderDocumentText(container, text, mark = null) {
  const frag = document.createDocumentFragment();
  const marks = [];
  let offset = 0;
  let block = null; // the paragraph or list being filled
  let fence = null;
  for (const line of String(text).split("\n")) {
    const start = offset;
    offset += line.length + 1;
    if (/^ {0,3}```/.test(line)) {
      if (fence) fence = null;
      else { fence = h("code"); frag.append(h("pre", {}, fence)); }
      block = null;
      continue;
    }
    if (fence) { marked(fence, `${line}\n`, start, mark, marks); continue; }
    if (!line.trim()) { block = null; continue; }
    const heading = MD_HEADING.exec(line);
    if (heading) {
      const el = h("p", { class: ["doc-heading", `level-${heading[1].length}`], role: "heading", "aria-level": String(Math.min(6, heading[1].length + 2)) });
      inlineMarked(el, line.slice(heading[0].length).replace(/[ \t]+#+[ \t]*$/, ""), start + heading[0].length, mark, marks);
      frag.append(el);
      block = null;
      continue;
    }
    const item = MD_ITEM.exec(line);
    if (item) {
      const ordered = /\d/.test(item[1]);
      if (!block || block.tagName !== (ordered ? "OL" : "UL")) { block = h(ordered ? "ol" : "ul"); frag.append(block); }
      block.append(inlineMarked(h("li"), line.slice(item[0].length), start + item[0].length, mark, marks));
      continue;
    }
    if (!block || block.tagName !== "P") { block = h("p"); frag.append(block); } else block.append(h("br"));
    inlineMarked(block, line, start, mark, marks);
  }
  container.replaceChildren(frag);
  return marks[0] || null;
}

function inlineMarked(el, text, base, mark, marks) {
  let last = 0;
  for (const m of text.matchAll(MD_INLINE)) {
    marked(el, text.slice(last, m.index), base + last, mark, marks);
    if (m[1] !== undefined) el.append(marked(h("strong"), m[1], base + m.index + 2, mark, marks));
    else if (m[2] !== undefined) el.append(marked(h("code"), m[2], base + m.index + 1, mark, marks));
    else el.append(marked(h("span", { class: "redacted", title: "Redacted by data-loss prevention" }), m[0], base + m.index, mark, marks));
    last = m.index + m[0].length;
  }
  marked(el, text.slice(last), base + last, mark, marks);
  return el;
}

/** Append ``text`` (at offset ``start`` of the document) to ``el``, the part inside
 *  ``mark`` wrapped in <mark class="cited">. */
function marked(el, text, start, mark, marks) {
  if (!text) return el;
  const from = mark ? Math.max(0, Math.min(text.length, mark.start - start)) : text.length;
  const to = mark ? Math.max(from, Math.min(text.length, mark.end - start)) : text.length;
  el.append(text.slice(0, from));
  if (to > from) {
    const cited = h("mark", { class: "cited" }, text.slice(from, to));
    marks.push(cited);
    el.append(cited);
  }
  el.append(text.slice(to));
  return el;
}

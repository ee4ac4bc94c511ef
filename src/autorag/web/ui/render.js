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

// A unified diff (as the wiki's API gives it) shown for people: removed lines red and
// struck, added lines green, unchanged lines plain, each hunk under "Around line n",
// with the +/- also said in words for screen readers. Built as nodes, never markup.

import { h } from "./dom.js";

/** ``diff``: unified diff text. Answers a <div class="wiki-diff">. */
export function renderDiff(diff, { empty = "No changes." } = {}) {
  const text = String(diff || "").replace(/\r\n?/g, "\n");
  const box = h("div", { class: "wiki-diff", role: "group", "aria-label": "Changes" });
  let added = 0;
  let removed = 0;
  const rows = h("ol", { class: "diff-lines" });
  for (const line of text.split("\n")) {
    if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ") || line.startsWith("index ")) continue;
    if (line.startsWith("\\")) continue; // "\ No newline at end of file"
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      rows.append(h("li", { class: "hunk" }, `Around line ${hunk[2]}`));
      continue;
    }
    if (line.startsWith("+")) {
      added += 1;
      rows.append(h("li", { class: "add" }, h("span", { class: "sr-only" }, "Added: "), h("ins", {}, line.slice(1) || " ")));
    } else if (line.startsWith("-")) {
      removed += 1;
      rows.append(h("li", { class: "del" }, h("span", { class: "sr-only" }, "Removed: "), h("del", {}, line.slice(1) || " ")));
    } else if (line.startsWith(" ")) {
      rows.append(h("li", { class: "same" }, line.slice(1) || " "));
    }
  }
  if (!added && !removed) {
    box.append(h("p", { class: "muted" }, empty));
    return box;
  }
  box.append(h("p", { class: "diff-sum small" },
    h("span", { class: "badge ok" }, `${added} line${added === 1 ? "" : "s"} added`), " ",
    h("span", { class: "badge danger" }, `${removed} line${removed === 1 ? "" : "s"} removed`)), rows);
  return box;
}

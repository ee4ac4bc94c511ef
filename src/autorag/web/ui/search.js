// Search: the hybrid search with type and date filters; each hit says which legs
// (semantic, keyword) found it. The query lives in the address: results can be linked.

import { api, ws } from "./api.js";
import { clear, emptyState, errorNotice, h, icon, loading, richSnippet } from "./dom.js";
import { app, setHashQuietly } from "./state.js";
import { legsBadges, passageText } from "./render.js";

const TYPES = ["pdf", "docx", "pptx", "xlsx", "csv", "txt", "md", "html"];
const MODES = [["hybrid", "Hybrid (semantic + keyword)"], ["vector", "Semantic only"], ["fts", "Keyword only"]];
// A search diagnostic's severity as a notice's look: an info notice is the plain one.
const NOTICE_KIND = { error: "error", warning: "warn", info: "" };

export async function render(container, { query }) {
  const base = ws(app.workspace);
  const q = h("input", { class: "input", type: "search", name: "q", placeholder: "Search the documents…", "aria-label": "Search query", autocomplete: "off", enterkeyhint: "search" });
  const typeBoxes = TYPES.map((t) => h("label", { class: "chip-toggle" }, h("input", { type: "checkbox", value: t, "aria-label": `Type ${t}` }), h("span", {}, t.toUpperCase())));
  const from = h("input", { class: "input", type: "date", id: "search-from" });
  const to = h("input", { class: "input", type: "date", id: "search-to" });
  const mode = h("select", { class: "input", id: "search-mode" }, MODES.map(([v, l]) => h("option", { value: v }, l)));
  const k = h("select", { class: "input", id: "search-k" }, [10, 20, 50, 100].map((n) => h("option", { value: n }, `${n} results`)));
  const perDoc = h("input", { type: "checkbox", id: "search-perdoc" });
  const submit = h("button", { class: "btn primary", type: "submit" }, icon("search", "sm"), "Search");
  const results = h("div", { class: "stack", "aria-live": "polite", "aria-busy": "false" });
  const form = h("form", { class: "card search-form", role: "search", "aria-label": "Search the documents" },
    h("div", { class: "search-bar" }, q, submit),
    h("details", { class: "filter-box", open: !window.matchMedia("(max-width: 760px)").matches }, h("summary", {}, "Filters"), h("div", { class: "stack" },
      h("div", { class: "field" }, h("span", { class: "label", id: "types-label" }, "Types"), h("div", { class: "type-chips", role: "group", "aria-labelledby": "types-label" }, typeBoxes)),
      h("div", { class: "grid-form" },
        h("div", { class: "field" }, h("label", { for: "search-from" }, "Document date from"), from),
        h("div", { class: "field" }, h("label", { for: "search-to" }, "Document date to"), to),
        h("div", { class: "field" }, h("label", { for: "search-mode" }, "Method"), mode),
        h("div", { class: "field" }, h("label", { for: "search-k" }, "Show"), k)),
      h("label", { class: "check" }, perDoc, h("span", {}, "One result per document")))),
    h("div", { class: "row" }, h("span", { class: "hint spacer" }, "A document's date is its own (from the file's properties), else when the file was last changed. Clear a filter to widen the search."),
      h("button", { class: "btn ghost small", type: "button", on: { click: reset } }, "Clear filters")));

  const phone = window.matchMedia("(max-width: 760px)");
  const fold = () => { form.querySelector("details.filter-box").open = !phone.matches; };
  phone.addEventListener("change", fold);
  container.append(h("div", { class: "page" }, h("div", { class: "page-inner" },
    h("div", { class: "page-head" }, h("h1", {}, "Search"), h("p", { class: "sub" }, `Hybrid search over ${app.workspace}: semantic vectors and keyword full text, fused.`)),
    form, results)));

  function fill(params) {
    q.value = params.get("q") || "";
    const types = (params.get("type") || "").split(",").filter(Boolean);
    for (const box of typeBoxes) box.querySelector("input").checked = types.includes(box.querySelector("input").value);
    from.value = params.get("from") || "";
    to.value = params.get("to") || "";
    mode.value = params.get("mode") || "hybrid";
    k.value = params.get("k") || "10";
    perDoc.checked = params.get("perDocument") === "1";
  }

  function params() {
    const out = new URLSearchParams();
    if (q.value.trim()) out.set("q", q.value.trim());
    const types = typeBoxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value);
    if (types.length) out.set("type", types.join(","));
    if (from.value) out.set("from", from.value);
    if (to.value) out.set("to", to.value);
    if (mode.value !== "hybrid") out.set("mode", mode.value);
    if (k.value !== "10") out.set("k", k.value);
    if (perDoc.checked) out.set("perDocument", "1");
    return out;
  }

  function reset() {
    for (const box of typeBoxes) box.querySelector("input").checked = false;
    from.value = "";
    to.value = "";
    mode.value = "hybrid";
    k.value = "10";
    perDoc.checked = false;
    if (q.value.trim()) run();
  }

  let controller = null;
  async function run() {
    const text = q.value.trim();
    const p = params();
    setHashQuietly(`#/search${p.toString() ? `?${p}` : ""}`);
    if (!text) {
      clear(results, emptyState({ iconName: "search", title: "Search your documents", body: "Type words or a question. Filters narrow by type and by date; each result shows whether semantic search, keyword search or both found it." }));
      return;
    }
    if (from.value && to.value && from.value > to.value) {
      clear(results, errorNotice(new Error("The first document date is after the second.")));
      return;
    }
    if (controller) controller.abort();
    controller = new AbortController();
    results.setAttribute("aria-busy", "true");
    clear(results, loading("Searching…"));
    const body = { query: text, k: Number(k.value), mode: mode.value, perDocument: perDoc.checked };
    const types = p.get("type");
    if (types) body.documentTypes = types.split(",");
    if (from.value) body.dateFrom = from.value;
    if (to.value) body.dateTo = to.value;
    try {
      const out = await api(`${base}/search`, { method: "POST", body, signal: controller.signal });
      paint(out, text);
    } catch (error) {
      if (error.name === "AbortError") return;
      clear(results, errorNotice(error, run));
    } finally {
      results.setAttribute("aria-busy", "false");
    }
  }

  function paint(out, text) {
    const words = text.split(/\W+/).filter((w) => w.length > 2);
    const total = Object.values(out.timingsMs || {}).length ? Math.round(out.timingsMs.total ?? Object.values(out.timingsMs).reduce((a, b) => Math.max(a, b), 0)) : null;
    const outside = (out.diagnostics || []).find((d) => d.code === "outside_filters");
    const diagnostics = (out.diagnostics || []).filter((d) => d !== outside).map((d) => h("div", { class: ["notice", NOTICE_KIND[d.severity] ?? "warn"], role: "status" }, icon(d.severity === "info" ? "info" : "alert"), h("div", { class: "notice-body" }, d.message)));
    if (!out.hits.length) {
      clear(results, diagnostics, outside
        ? emptyState({ iconName: "search", title: "No results with these filters", body: `${outside.message[0].toUpperCase()}${outside.message.slice(1)}.`, action: h("button", { class: "btn", type: "button", on: { click: reset } }, "Clear filters") })
        : emptyState({ iconName: "search", title: "No results", body: "Nothing matched. Try other words, fewer filters, or check on the Documents page that the documents are ready." }));
      return;
    }
    clear(results, diagnostics,
      h("p", { class: "muted small" }, `${out.hits.length} result${out.hits.length === 1 ? "" : "s"}${total !== null ? ` in ${total} ms` : ""}`),
      h("ol", { class: "hits", "aria-label": "Results" }, out.hits.map((hit, i) => h("li", { class: "hit" },
        h("div", { class: "hit-head" },
          h("span", { class: "rank" }, `${i + 1}.`),
          h("a", { class: "title", href: `#/documents/${hit.documentId}` }, hit.title),
          h("span", { class: "badge" }, hit.type),
          hit.page ? h("span", { class: "badge" }, `page ${hit.page}`) : null,
          hit.redacted ? h("span", { class: "badge warn", title: "Data-loss prevention redacted part of this snippet" }, icon("shield", "sm"), "redacted") : null),
        h("div", { class: "snippet" }, richSnippet(passageText(hit.snippet), words)),
        h("div", { class: "hit-foot" }, legsBadges(hit.legs), h("span", { class: "truncate", title: hit.name }, hit.name))))));
  }

  form.addEventListener("submit", (e) => { e.preventDefault(); run(); });
  for (const control of [from, to, mode, k, perDoc, ...typeBoxes.map((b) => b.querySelector("input"))]) {
    control.addEventListener("change", () => { if (q.value.trim()) run(); });
  }
  fill(query);
  await run();
  return {
    title: "Search",
    update: ({ query: next }) => { if (next.toString() !== params().toString()) { fill(next); run(); } },
    cleanup: () => { if (controller) controller.abort(); phone.removeEventListener("change", fold); },
    focus: () => q.focus(),
  };
}

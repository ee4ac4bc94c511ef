// Synthesis in the wiki: start a run that reads documents into an archive, follow its
// five steps, then review what it proposes, item by item: a new page (its text), an
// update (the changes), a contradiction (both passages side by side), each with the
// source passages it rests on, and Approve / Reject. Nothing is written to the archive
// until someone approves.
// Addresses: #/wiki/<archive>?view=reviews (the runs) · ?view=review&run=<id> (one run).
// wiki.js calls these with its WikiView (layout, breadcrumbs, page cache).

import { api, ws } from "./api.js";
import {
  announce, append, clear, confirmDialog, emptyState, errorNotice, field, h, icon, loading, modal, timeEl, toast,
} from "./dom.js";
import { passageText } from "./render.js";
import { app, navigate, refreshModels } from "./state.js";
import {
  ACTIVE, DECIDABLE, POLL_MS, approve, cancelRun, getRun, listRuns, loadItems, reject, resumeRun, startRun,
} from "./synth_api.js";
import { wikiHash } from "./wiki_api.js";
import { renderDiff } from "./wiki_diff.js";
import { renderMarkdown, toPath } from "./wiki_markdown.js";
import {
  EXTRACTIVE_RUN, actionWords, itemStatusWords, modelWords, passWords, runStatusWords, shownName,
} from "./words.js";

const PASS_NAMES = ["entity_extraction", "summary_generation", "candidate_search", "llm_decision", "write_overview"];
const TYPES = ["pdf", "docx", "pptx", "xlsx", "csv", "txt", "md", "html"];
const REVIEWABLE = ["ready", "applied", "partially_applied", "rejected"];
const APPLICABLE = ["create", "update", "overview"]; // what approving saves as a page version
const HOME_RUNS = 5; // runs listed on the archive's home; the rest under "All reviews"

const reviewsHash = (archive) => wikiHash(archive, null, { view: "reviews" });
const runHash = (archive, id) => wikiHash(archive, null, { view: "review", run: id });
const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
// Changes approving would save; contradictions a person has to look at (and may dismiss).
const waitingOf = (items) => items.filter((i) => i.status === "pending" && APPLICABLE.includes(i.action)).length;
const openContradictions = (items) => items.filter((i) => i.status === "pending" && i.action === "contradiction").length;

function badge({ label, kind }, extra = {}) {
  const pulsing = String(kind).includes("pulse");
  return h("span", { class: ["badge", kind], ...extra }, pulsing ? h("span", { class: "dot", "aria-hidden": "true" }) : null, label);
}

function crumbs(ctx, last) {
  const parts = [
    h("a", { href: wikiHash(null) }, "Wiki"),
    h("a", { href: wikiHash(ctx.name) }, ctx.archive.title || ctx.name),
    last ? h("a", { href: reviewsHash(ctx.name) }, "Reviews") : h("span", { "aria-current": "page" }, "Reviews"),
  ];
  if (last) parts.push(h("span", { "aria-current": "page" }, last));
  return h("nav", { class: "crumbs small", "aria-label": "Breadcrumbs" }, h("ol", {}, parts.map((p) => h("li", {}, p))));
}

// One line per run: its number, status, what it proposed, who started it and when.
function runLine(ctx, run) {
  const counts = REVIEWABLE.includes(run.status)
    ? `${plural(run.items, "proposed change")}${run.pending ? `, ${run.pending} waiting` : ""}`
    : plural(run.sources, "document");
  return h("li", { class: "synth-run-line" },
    h("a", { href: runHash(ctx.name, run.id) }, `Run ${run.id}`), " ",
    badge(runStatusWords(run.status)), " ",
    h("span", { class: "muted small" }, `${counts} · ${run.mode === "extractive" ? "extractive" : modelWords(run.model)} · by ${run.createdBy}, `, timeEl(run.createdAt)));
}

// -- the archive's home: the action and the latest runs ------------------------------------------
export function startButton(ctx) {
  return h("button", {
    class: "btn small", type: "button", title: "Read documents into this archive: the changes they suggest wait for review",
    on: { click: () => startDialog(ctx) },
  }, icon("refresh", "sm"), "Synthesise from documents");
}

/** The "Reviews" card of an archive's home, or null when its runs cannot be read. */
export async function reviewsCard(ctx) {
  let runs;
  try { runs = await listRuns(ctx.name); } catch { return null; }
  if (!runs.length) return null; // the action beside the title says what synthesis is
  const more = runs.length > HOME_RUNS;
  return h("section", { class: "card synth-reviews", "aria-labelledby": "reviews-title" },
    h("header", {}, h("h2", { id: "reviews-title", class: "spacer" }, "Reviews"),
      h("a", { class: "btn small ghost", href: reviewsHash(ctx.name) }, more ? `All reviews (${runs.length})` : "All reviews")),
    h("ul", { class: "plain-list" }, runs.slice(0, HOME_RUNS).map((run) => runLine(ctx, run))));
}

/** #/wiki/<archive>?view=reviews */
export async function reviewsPage(view, ctx) {
  const runs = await listRuns(ctx.name);
  const main = h("div", { class: "stack" },
    crumbs(ctx, null),
    h("div", { class: "page-head" }, h("h1", {}, "Reviews"), h("span", { class: "spacer" }), startButton(ctx),
      h("p", { class: "sub" }, "Each synthesis run proposes changes to this archive; they wait here for someone to approve or reject them.")),
    runs.length
      ? h("section", { class: "card" }, h("ul", { class: "plain-list" }, runs.map((run) => runLine(ctx, run))))
      : emptyState({ iconName: "book", title: "No synthesis yet", body: "Start one: it reads the workspace's documents and proposes pages for this archive." }));
  return { el: view.layout(ctx, main), title: `Reviews · ${ctx.archive.title || ctx.name}` };
}

// -- starting a run ------------------------------------------------------------------------------
/** The dialog that starts a run: which documents, which model. */
export function startDialog(ctx) {
  const choice = (value, label, hint, checked = false) => {
    const radio = h("input", { type: "radio", name: "synth-docs", value, checked });
    return { radio, el: h("label", { class: "check" }, radio, h("span", {}, label, hint ? h("span", { class: "hint" }, hint) : null)) };
  };
  const all = choice("new", "All new documents", "Every ready document not yet read into this archive, or changed since.", true);
  const byType = choice("type", "Documents of one type");
  const bySince = choice("since", "Documents added since a date");
  const byPick = choice("pick", "Chosen documents");
  const typeSelect = h("select", { class: "input", "aria-label": "Type" }, TYPES.map((t) => h("option", { value: t }, t.toUpperCase())));
  const sinceInput = h("input", { class: "input", type: "date", "aria-label": "Added since" });
  const picks = h("div", { class: "synth-picks", hidden: true });
  const force = h("input", { type: "checkbox" });
  const modelSelect = h("select", { class: "input" }, h("option", { value: "" }, "The workspace's default model"));
  const problem = h("div", { "aria-live": "polite" });
  const start = h("button", { class: "btn primary", type: "submit", form: "synth-start" }, "Start");
  const cancel = h("button", { class: "btn", type: "button", on: { click: () => dlg.close() } }, "Cancel");

  const sync = () => {
    typeSelect.disabled = !byType.radio.checked;
    sinceInput.disabled = !bySince.radio.checked;
    picks.hidden = !byPick.radio.checked;
    if (byPick.radio.checked && !picks.dataset.loaded) loadPicks(picks);
  };
  for (const c of [all, byType, bySince, byPick]) c.radio.addEventListener("change", sync);
  sync();

  const form = h("form", { id: "synth-start", class: "stack", novalidate: true },
    h("p", { class: "muted small" }, "The documents are read and the changes they suggest are proposed for review. Nothing is saved to the archive until someone approves it."),
    h("fieldset", { class: "stack" }, h("legend", {}, "Documents to read"),
      all.el, byType.el, h("div", { class: "synth-sub" }, typeSelect), bySince.el, h("div", { class: "synth-sub" }, sinceInput), byPick.el, picks),
    h("label", { class: "check" }, force, h("span", {}, "Read again documents already read into this archive",
      h("span", { class: "hint" }, "Otherwise a document unchanged since an earlier run is skipped."))),
    field("Model", modelSelect, { hint: "The same models as in chat. Without one, the text is taken from the documents as it is (extractive)." }),
    problem);

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const selection = { force: force.checked };
    if (byType.radio.checked) selection.docType = typeSelect.value;
    if (bySince.radio.checked) {
      if (!sinceInput.value) { problem.replaceChildren(notice("Choose the date first.")); sinceInput.focus(); return; }
      selection.since = sinceInput.value;
    }
    if (byPick.radio.checked) {
      selection.documentIds = [...picks.querySelectorAll("input:checked")].map((box) => Number(box.value));
      if (!selection.documentIds.length) { problem.replaceChildren(notice("Choose at least one document.")); return; }
    }
    start.disabled = true;
    problem.replaceChildren();
    try {
      const run = await startRun(ctx.name, selection, modelSelect.value);
      dlg.close();
      toast(`Synthesis run ${run.id} started.`, { kind: "ok" });
      navigate(runHash(ctx.name, run.id));
    } catch (error) {
      // Nothing left to read: the problem says why each document was skipped.
      const skipped = error.problem && Array.isArray(error.problem.skipped) ? error.problem.skipped : [];
      problem.replaceChildren(notice(error.message, error.code === "nothing_to_synthesise" ? "warn" : "error",
        skipped.length ? h("ul", { class: "plain-list small" }, skipped.map((s) => h("li", {}, `${shownName(s.sourceId || s.source_id || "")} — ${s.reason}`))) : null));
    } finally { start.disabled = false; }
  });
  const dlg = modal({ title: "Synthesise from documents", body: form, foot: [cancel, start], className: "wide" });
  start.focus();
  fillModels(modelSelect);
}

function notice(text, kind = "error", more = null) {
  return h("div", { class: ["notice", kind], role: "alert" }, icon("alert"), h("div", { class: "notice-body" }, text, more));
}

async function fillModels(select) {
  try {
    const list = app.models || (await refreshModels());
    for (const m of (list && list.models) || []) {
      select.append(h("option", { value: m.id }, `${modelWords(m.id)}${m.available === false ? " (unavailable)" : ""}`));
    }
  } catch { /* the default model stays on offer */ }
}

// The workspace's ready documents, as boxes to tick (the first 500).
async function loadPicks(host) {
  host.dataset.loaded = "1";
  host.replaceChildren(loading("Loading documents…"));
  try {
    const page = await api(`${ws(app.workspace)}/documents`, { query: { status: "ready", limit: 500 } });
    const docs = page.items || [];
    clear(host, docs.length
      ? h("ul", { class: "plain-list synth-doc-list", "aria-label": "Documents" }, docs.map((d) => h("li", {},
        h("label", { class: "check" }, h("input", { type: "checkbox", value: String(d.id) }),
          h("span", {}, d.title, " ", h("span", { class: "badge" }, d.type))))))
      : h("p", { class: "muted small" }, "No document is ready yet."),
      page.total > docs.length ? h("p", { class: "muted small" }, `The first ${docs.length} of ${page.total} are shown.`) : null);
  } catch (error) {
    delete host.dataset.loaded;
    host.replaceChildren(errorNotice(error, () => loadPicks(host)));
  }
}

// -- one run: its progress, then its proposed changes ---------------------------------------------
/** #/wiki/<archive>?view=review&run=<id>. ``seq``: the view's render number; polling stops
 *  once the view shows something else. */
export async function runPage(view, ctx, runId, seq) {
  const page = new RunPage(view, ctx, runId, () => view.seq === seq);
  await page.load();
  return { el: view.layout(ctx, page.el), title: page.title };
}

class RunPage {
  constructor(view, ctx, runId, alive) {
    this.view = view;
    this.ctx = ctx;
    this.runId = runId;
    this.alive = alive;
    this.run = null;
    this.items = [];
    this.cards = new Map(); // item id -> its card
    this.head = h("div", { class: "page-head" });
    this.progress = h("div", {});
    this.review = h("div", { class: "stack" });
    this.el = h("div", { class: "stack" }, crumbs(ctx, `Run ${runId}`), this.head, this.progress, this.review);
    this.title = `Run ${runId} · ${ctx.archive.title || ctx.name}`;
  }

  async load() {
    this.run = await getRun(this.ctx.name, this.runId);
    if (REVIEWABLE.includes(this.run.status)) await this.fetchItems();
    this.paint();
    this.schedule();
  }

  // The change set, and the run as it stands with it.
  async fetchItems() {
    const { run, items } = await loadItems(this.ctx.name, this.runId);
    if (run) this.run = run;
    this.items = items;
  }

  // One timer at most: a Cancel or Resume while polling does not start a second loop.
  schedule() {
    clearTimeout(this.timer);
    if (ACTIVE.includes(this.run.status)) this.timer = setTimeout(() => this.poll(), POLL_MS);
  }

  async poll() {
    if (!this.alive() || !this.el.isConnected) return;
    try {
      const run = await getRun(this.ctx.name, this.runId);
      if (!this.alive()) return;
      const changed = run.status !== this.run.status;
      this.run = run;
      if (changed && REVIEWABLE.includes(run.status)) await this.fetchItems();
      if (!this.alive()) return;
      if (changed) {
        announce(`Run ${run.id}: ${runStatusWords(this.run.status).label}`);
        this.paint();
      } else this.paintSteps(); // the counts only: a focused Cancel button stays focused
      this.schedule();
    } catch (error) {
      if (this.alive()) this.progress.replaceChildren(errorNotice(error, () => this.load().catch(() => {})));
    }
  }

  paint() {
    this.paintHead();
    this.paintProgress();
    this.paintReview();
  }

  paintHead() {
    const run = this.run;
    clear(this.head,
      h("h1", {}, headline(run)), badge(runStatusWords(run.status)), h("span", { class: "spacer" }),
      h("p", { class: "sub" }, `Run ${run.id} · ${plural(run.sources, "document")} read · started by ${run.createdBy} `, timeEl(run.createdAt),
        run.mode === "extractive" ? null : ` · ${modelWords(run.model)}`),
      run.mode === "extractive" ? h("p", { class: "sub" }, h("span", { class: "badge warn synth-extractive" }, icon("info", "sm"), EXTRACTIVE_RUN)) : null);
  }

  // The five steps with their counts, and the model's use so far.
  steps() {
    const run = this.run;
    const byName = new Map((run.passes || []).map((p) => [p.name, p]));
    const steps = h("ol", { class: "synth-steps" }, PASS_NAMES.map((name) => {
      const p = byName.get(name) || { name, done: 0, total: 0, state: "waiting" };
      const label = passWords(name);
      const mark = p.state === "done" ? icon("check", "sm") : p.state === "running" && ACTIVE.includes(run.status) ? h("span", { class: "spinner" }) : h("span", { class: "step-dot", "aria-hidden": "true" });
      const counts = p.total ? `${p.done} of ${p.total}` : p.state === "done" ? "done" : "";
      return h("li", { class: ["synth-step", p.state] },
        mark, h("span", { class: "step-label" }, label), h("span", { class: "muted small num" }, counts),
        h("progress", { class: ["bar", p.state === "done" ? "done" : ""], max: Math.max(p.total, 1), value: p.state === "done" ? Math.max(p.total, 1) : p.done, "aria-label": label }),
        h("span", { class: "sr-only" }, p.state === "done" ? "done" : p.state === "running" ? "in progress" : "waiting"));
    }));
    const calls = run.modelCalls ? h("p", { class: "muted small" }, `${plural(run.modelCalls, "model call")} · ${(run.promptTokens + run.completionTokens).toLocaleString()} tokens`) : null;
    return h("div", { class: "stack synth-steps-box" }, steps, calls);
  }

  paintSteps() {
    const box = this.progress.querySelector(".synth-steps-box");
    if (box) box.replaceWith(this.steps());
    else this.paintProgress();
  }

  // The steps; what went wrong, and Resume / Cancel.
  paintProgress() {
    const run = this.run;
    const actions = h("div", { class: "btn-row" });
    let state = null;
    if (ACTIVE.includes(run.status)) {
      actions.append(h("button", { class: "btn small danger", type: "button", on: { click: (e) => this.cancel(e.currentTarget) } }, icon("stop", "sm"), "Cancel"));
      state = run.status === "queued" ? h("p", { class: "muted small" }, "Waiting for the worker to start it…") : null;
    } else if (run.status === "paused" || (run.status === "failed" && run.errorCode === "model_unavailable")) {
      state = h("div", { class: "notice warn", role: "alert" }, icon("alert"),
        h("div", { class: "notice-body" }, h("strong", {}, "The run stopped: "), run.error || "the model did not answer.",
          h("span", { class: "why" }, "Resume goes on from where it stopped; nothing done so far is lost.")),
        h("button", { class: "btn small", type: "button", on: { click: (e) => this.resume(e.currentTarget) } }, icon("refresh", "sm"), "Resume"));
    } else if (run.status === "failed") {
      state = h("div", { class: "notice error", role: "alert" }, icon("alert"), h("div", { class: "notice-body" }, h("strong", {}, "The run failed: "), run.error || "an error it cannot recover from."));
    } else if (run.status === "cancelled") {
      state = h("div", { class: "notice" }, icon("info"), h("div", { class: "notice-body" }, "This run was cancelled before it finished: it proposes nothing."), startButton(this.ctx));
    }
    const skipped = (run.skipped || []).length ? h("details", { class: "synth-skipped-sources" },
      h("summary", {}, `${plural(run.skipped.length, "document")} not read`),
      h("ul", { class: "plain-list small" }, run.skipped.map((s) => h("li", {}, h("span", { class: "mono" }, shownName(s.sourceId)), ` — ${s.reason}`)))) : null;
    const card = h("section", { class: "card synth-progress", "aria-labelledby": "progress-title" },
      h("header", {}, h("h2", { id: "progress-title", class: "spacer" }, "Progress"), actions), this.steps(), state, skipped);
    if (REVIEWABLE.includes(run.status)) {
      // Done: the steps fold away under the change set.
      this.progress.replaceChildren(h("details", { class: "synth-done-steps" }, h("summary", { class: "small" }, "How the run went"), card));
    } else this.progress.replaceChildren(card);
  }

  async cancel(button) {
    button.disabled = true;
    try {
      this.run = await cancelRun(this.ctx.name, this.runId);
      toast("The run stops after its current step.");
      this.paint();
      this.schedule();
    } catch (error) { toast(error.message, { kind: "error" }); button.disabled = false; }
  }

  async resume(button) {
    button.disabled = true;
    try {
      this.run = await resumeRun(this.ctx.name, this.runId);
      toast("The run goes on.", { kind: "ok" });
      this.paint();
      this.schedule();
    } catch (error) { toast(error.message, { kind: "error" }); button.disabled = false; }
  }

  // -- the change set ----------------------------------------------------------------------------
  decidable() {
    return DECIDABLE.includes(this.run.status);
  }

  paintReview() {
    this.cards.clear();
    if (!REVIEWABLE.includes(this.run.status)) { this.review.replaceChildren(); return; }
    const items = [...this.items].sort((a, b) => a.position - b.position);
    const shown = items.filter((i) => i.action !== "skip");
    const skips = items.filter((i) => i.action === "skip");
    const list = h("ol", { class: "plain-list synth-items", "aria-label": "Proposed changes" }, shown.map((item) => h("li", {}, this.card(item))));
    this.summary = h("div", { class: "synth-summary" });
    this.paintSummary();
    clear(this.review, this.summary,
      shown.length ? list : emptyState({ iconName: "book", title: "No change proposed", body: "The documents add nothing this archive does not already say." }),
      skips.length ? h("details", { class: "card synth-skips" }, h("summary", {}, `Skipped (${skips.length})`),
        h("ol", { class: "plain-list synth-items" }, skips.map((item) => h("li", {}, this.card(item))))) : null);
  }

  paintSummary() {
    const counts = new Map();
    for (const item of this.items) counts.set(item.action, (counts.get(item.action) || 0) + 1);
    const order = ["create", "update", "contradiction", "overview", "skip"];
    const waiting = waitingOf(this.items);
    const contradictions = openContradictions(this.items);
    const tally = order.filter((a) => counts.get(a)).map((a) => h("span", { class: ["badge", actionWords(a).kind] }, `${actionWords(a).label}: ${counts.get(a)}`));
    const bulk = this.decidable() ? [
      waiting ? h("button", { class: "btn small primary", type: "button", on: { click: () => this.decideAll("approve") } }, icon("check", "sm"), "Approve all") : null,
      waiting || contradictions ? h("button", { class: "btn small", type: "button", on: { click: () => this.decideAll("reject") } }, icon("x", "sm"), "Reject all") : null,
    ] : [];
    const open = [waiting ? `${plural(waiting, "change")} waiting for review` : "", contradictions ? `${plural(contradictions, "contradiction")} to look at` : ""].filter(Boolean);
    this.summary.replaceChildren(
      h("div", { class: "btn-row" }, tally, h("span", { class: "spacer" }), bulk),
      h("p", { class: "muted small", role: "status" }, open.length ? `${open.join(" · ")}.` : "Every change is decided."));
  }

  card(item) {
    const words = actionWords(item.action);
    const outcome = itemStatusWords(item.status);
    const title = item.action === "overview" ? item.title || "Overview" : item.title || item.entity || item.path;
    const card = h("section", { class: ["card", "synth-item", item.action, item.status], "aria-label": `${words.label}: ${title}`, dataset: { itemId: String(item.id) } },
      h("header", {}, h("span", { class: ["badge", words.kind] }, words.label),
        h("h3", { class: "spacer", tabindex: "-1" }, title),
        item.path && item.action !== "skip" ? h("span", { class: "mono small muted" }, item.path) : null,
        item.action === "skip" ? null : badge(outcome)),
      item.reason ? h("p", { class: "synth-reason small" }, h("strong", {}, "Why: "), item.reason) : null,
      item.stale && item.status === "pending" ? h("div", { class: "notice warn synth-stale" }, icon("alert", "sm"),
        h("div", { class: "notice-body" }, "Edited since — approving will not overwrite", h("span", { class: "why" }, "Someone saved this page after the run read it: approving leaves it as a conflict to look at."))) : null,
      this.body(item),
      item.action === "skip" ? null : this.decision(item));
    this.cards.set(item.id, card);
    return card;
  }

  // A skipped item: its sources folded; a contradiction: both passages side by side across
  // the card, the sources folded under them; else the change beside its sources.
  body(item) {
    if (item.action === "skip") return this.sources(item, { compact: true });
    if (item.action === "contradiction") return h("div", { class: "stack" }, this.contradiction(item), this.sources(item, { compact: true }));
    return h("div", { class: "synth-columns" }, this.change(item), this.sources(item));
  }

  // What would change: the new page's text, the changes to a page, or both sides of a contradiction.
  change(item) {
    const box = h("div", { class: "synth-change" });
    if (item.action === "create" || (item.action === "overview" && item.baseVersion == null)) {
      const { facts, body } = splitFrontMatter(item.body);
      const text = h("div", { class: "wiki-body synth-text" });
      renderMarkdown(text, body, { wikilink: this.linker() });
      append(box, [h("h4", { class: "small muted" }, "The new page"),
        facts.length ? h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])) : null, text]);
    } else {
      box.append(h("h4", { class: "small muted" }, `Changes to the page${item.baseVersion ? ` (version ${item.baseVersion})` : ""}`),
        renderDiff(item.diff, { empty: "The page would stay the same." }));
    }
    return box;
  }

  contradiction(item) {
    const sides = (item.contradiction || []).map((p) => {
      const onPage = Boolean(p.pagePath);
      const heading = onPage
        ? h("span", {}, "The page ", h("a", { href: wikiHash(this.ctx.name, p.pagePath) }, p.title || p.pagePath), " says")
        : h("span", {}, documentLink(p), " says");
      return h("figure", { class: ["synth-side", onPage ? "page-side" : "source-side"] },
        h("figcaption", { class: "small" }, heading, onPage || !p.sourceId ? null : h("span", { class: "mono muted" }, ` ${shownName(p.sourceId)}`)),
        h("blockquote", {}, passageText(p.text)));
    });
    return h("div", { class: "synth-change" }, h("h4", { class: "small muted" }, "The two passages disagree"),
      sides.length ? h("div", { class: "synth-pair" }, sides) : h("p", { class: "muted small" }, "No passage was kept."));
  }

  sources(item, { compact = false } = {}) {
    const passages = item.sources || [];
    if (!passages.length) return compact ? null : h("aside", { class: "synth-sources", "aria-label": "Sources" }, h("h4", { class: "small muted" }, "Sources"), h("p", { class: "muted small" }, "No passage cited."));
    const list = h("ol", { class: "plain-list" }, passages.map((p, i) => h("li", { class: "synth-source" },
      h("div", { class: "small" }, h("span", { class: "muted" }, `[${i + 1}] `), documentLink(p), p.page ? h("span", { class: "muted" }, ` · page ${p.page}`) : null),
      p.sourceId ? h("div", { class: "mono small muted source-id" }, shownName(p.sourceId)) : null,
      h("blockquote", { class: "small" }, passageText(p.text)))));
    if (compact) return h("details", { class: "synth-sources" }, h("summary", { class: "small" }, `Sources (${passages.length})`), list);
    return h("aside", { class: "synth-sources", "aria-label": "Sources" }, h("h4", { class: "small muted" }, `Sources (${passages.length})`), list);
  }

  // Approve / Reject while the item waits; its outcome once decided.
  decision(item) {
    const foot = h("div", { class: "synth-decision" });
    const pageLink = (text) => h("a", { href: wikiHash(this.ctx.name, item.path) }, text);
    if (item.status === "applied") {
      foot.append(h("p", { class: "small ok-text" }, icon("check", "sm"), ` Applied${item.appliedVersion ? ` as version ${item.appliedVersion}` : ""}. `, pageLink("Open the page")));
    } else if (item.status === "rejected") {
      foot.append(h("p", { class: "small muted" }, item.action === "contradiction" ? "Dismissed: the page was not changed." : "Rejected: the page was not changed."));
    } else if (item.status === "conflict") {
      foot.append(h("div", { class: "notice warn" }, icon("alert", "sm"),
        h("div", { class: "notice-body" }, "Not applied: someone saved the page after the run read it. ", pageLink("Open the page"), " to compare."),
        this.decidable() ? h("button", { class: "btn small", type: "button", on: { click: (e) => this.overwrite(item, e.currentTarget) } }, "Apply over their edit") : null));
    } else if (this.decidable() && item.action === "contradiction") {
      // Nothing to save: a person settles it on the page, or dismisses it.
      const dismiss = h("button", { class: "btn small", type: "button", "aria-label": `Dismiss: ${item.title || item.path}`, on: { click: () => this.decide(item, "reject", foot) } }, icon("x", "sm"), "Dismiss");
      foot.append(h("div", { class: "btn-row" },
        h("a", { class: "btn small", href: wikiHash(this.ctx.name, item.path, { view: "edit" }) }, icon("edit", "sm"), "Edit the page"), dismiss));
    } else if (this.decidable()) {
      const approveBtn = h("button", { class: "btn small primary", type: "button", on: { click: () => this.decide(item, "approve", foot) } }, icon("check", "sm"), "Approve");
      const rejectBtn = h("button", { class: "btn small", type: "button", on: { click: () => this.decide(item, "reject", foot) } }, icon("x", "sm"), "Reject");
      approveBtn.setAttribute("aria-label", `Approve: ${item.title || item.path}`);
      rejectBtn.setAttribute("aria-label", `Reject: ${item.title || item.path}`);
      foot.append(h("div", { class: "btn-row" }, approveBtn, rejectBtn));
    }
    return foot;
  }

  async decide(item, kind, foot) {
    for (const b of foot.querySelectorAll("button")) b.disabled = true;
    try {
      const decision = kind === "approve" ? await approve(this.ctx.name, this.runId, [item.id]) : await reject(this.ctx.name, this.runId, [item.id]);
      await this.reload(decision, [item.id]);
    } catch (error) {
      toast(error.message, { kind: "error" });
      for (const b of foot.querySelectorAll("button")) b.disabled = false;
    }
  }

  async overwrite(item, button) {
    const ok = await confirmDialog({ title: "Apply over their edit?", message: `“${item.title || item.path}” was saved by someone after the run read it. The proposal is applied to the page as it is now; their version stays in the page's history.`, confirm: "Apply" });
    if (!ok) return;
    button.disabled = true;
    try {
      await this.reload(await approve(this.ctx.name, this.runId, [item.id], { overwrite: true }), [item.id]);
    } catch (error) { toast(error.message, { kind: "error" }); button.disabled = false; }
  }

  async decideAll(kind) {
    const waiting = waitingOf(this.items);
    const all = waiting + openContradictions(this.items);
    const ok = await confirmDialog(kind === "approve"
      ? { title: `Approve all ${plural(waiting, "change")}?`, message: "Each is saved as a new version of its page. Pages edited since the run read them are left as conflicts.", confirm: "Approve all" }
      : { title: `Reject all ${plural(all, "change")}?`, message: "None of them is saved. The documents can be read again by a later run.", confirm: "Reject all", danger: true });
    if (!ok) return;
    try {
      await this.reload(kind === "approve" ? await approve(this.ctx.name, this.runId) : await reject(this.ctx.name, this.runId), null);
    } catch (error) { toast(error.message, { kind: "error" }); }
  }

  // After a decision: the run and its items again; the decided cards are drawn anew in place.
  async reload(decision, ids) {
    await this.fetchItems();
    const items = this.items;
    if ((decision.applied || []).length) {
      this.view.refresh(this.ctx).then((fresh) => {
        this.ctx = fresh;
        if (this.alive()) this.view.repaintTree(fresh);
      }).catch(() => {});
    }
    this.paintHead();
    this.paintProgress();
    if (ids) {
      for (const id of ids) {
        const old = this.cards.get(id);
        const item = items.find((i) => i.id === id);
        if (old && item) {
          const fresh = this.card(item);
          old.replaceWith(fresh);
          fresh.querySelector("h3").focus({ preventScroll: true });
        }
      }
      // Other cards may lose their buttons (the run is decided) or their stale note.
      if (!this.decidable()) this.paintReview();
      else this.paintSummary();
    } else this.paintReview();
    toast(decisionWords(decision), { kind: (decision.conflicts || []).length ? "warn" : "ok" });
    announce(decisionWords(decision));
  }

  // A [[link]] in a proposed text: to the page when it exists, else plain words (the page may
  // be one this run proposes).
  linker() {
    return ({ target, label, nodes }) => {
      const words = nodes && nodes.length ? nodes : [label || target || ""];
      const key = String(target || "").trim().toLowerCase();
      const hit = this.ctx.pages.find((p) => p.path === toPath(target)) || this.ctx.pages.find((p) => p.title.toLowerCase() === key);
      return hit ? h("a", { class: "wikilink", href: wikiHash(this.ctx.name, hit.path) }, words) : h("span", { class: "wikilink" }, words);
    };
  }
}

function headline(run) {
  if (REVIEWABLE.includes(run.status)) return "Proposed changes";
  if (ACTIVE.includes(run.status) || run.status === "paused") return "Reading the documents";
  return `Synthesis run ${run.id}`;
}

function documentLink(passage) {
  const title = passage.title || shownName(passage.sourceId) || "A document";
  return passage.documentId ? h("a", { href: `#/documents/${passage.documentId}` }, title) : h("strong", {}, title);
}

function decisionWords(decision) {
  const parts = [];
  const n = (list) => (list || []).length;
  if (n(decision.applied)) parts.push(`${plural(n(decision.applied), "change")} applied`);
  if (n(decision.rejected)) parts.push(`${plural(n(decision.rejected), "change")} rejected`);
  if (n(decision.conflicts)) parts.push(`${n(decision.conflicts)} not applied: edited since`);
  return parts.length ? `${parts.join(", ")}.` : "Nothing changed.";
}

// A proposed text's front matter (shown as facts) and the Markdown after it.
function splitFrontMatter(text) {
  const source = String(text || "").replace(/\r\n?/g, "\n");
  const m = /^---\n([\s\S]*?)\n(?:---|\.\.\.)\n?/.exec(source);
  if (!m) return { facts: [], body: source };
  const facts = m[1].split("\n").map((line) => /^([^:#\s][^:]*):\s*(.*)$/.exec(line)).filter(Boolean).map((f) => [f[1].trim(), f[2].replace(/^["']|["']$/g, "")]);
  return { facts, body: source.slice(m[0].length) };
}

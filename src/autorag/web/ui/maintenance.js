// Settings → Maintenance (admins confined to no workspace): re-index every workspace
// after the embedding model changed. A confirmation first; then a progress bar that
// follows the run (polled, while the card is on the page) to its end, each workspace's
// state listed. Routes: POST/GET /api/system/reindex-documents.

import { api } from "./api.js";
import { clear, confirmDialog, h, timeEl, toast } from "./dom.js";
import { app } from "./state.js";

const URL = "/api/system/reindex-documents";
const POLL_MS = 1000;
const STATUS = {
  queued: { label: "Waiting", kind: "info" },
  running: { label: "Re-indexing", kind: "info" },
  done: { label: "Done", kind: "ok" },
  failed: { label: "Failed", kind: "danger" },
  gone: { label: "Deleted meanwhile", kind: "" },
};

/** Whether this user sees the card: an admin of every workspace. */
export const canMaintain = () => app.can("workspaces:admin") && app.me.workspaces === null;

function badge(status) {
  const words = STATUS[status] || { label: status, kind: "" };
  return h("span", { class: ["badge", words.kind, status === "running" ? "pulse" : ""] }, h("span", { class: "dot" }), words.label);
}

export function maintenanceCard() {
  const button = h("button", { class: "btn primary", type: "button" }, "Re-index all workspaces");
  const bar = h("progress", { class: "bar", max: 1, value: 0, "aria-label": "Re-index progress" });
  const summary = h("p", { class: "hint", role: "status", "aria-live": "polite" });
  const list = h("ul", { class: "stack", style: "list-style: none; padding: 0; margin: 0" });
  const progress = h("div", { class: "stack", hidden: true }, bar, summary, list);
  const card = h("section", { class: "card stack", "aria-labelledby": "maintenance-title" },
    h("h2", { id: "maintenance-title" }, "Maintenance"),
    h("p", { class: "hint" }, "After the embedding model changes, every document's vectors must be made again with the new model. Search keeps answering from the old vectors until each workspace is done."),
    h("div", { class: "row" }, button), progress);
  let timer = null;

  function paint(run) {
    progress.hidden = false;
    bar.max = Math.max(run.total, 1);
    bar.value = run.done + run.failed;
    bar.classList.toggle("done", run.status === "done");
    const words = { running: "Re-indexing", done: "Re-index finished", failed: "Re-index finished with errors" }[run.status] || run.status;
    // Archives' hidden indexes are re-embedded too: counted apart, as one line.
    const people = run.workspaces.filter((w) => !w.hidden);
    const archives = run.workspaces.filter((w) => w.hidden);
    const finished = (ws) => ws.filter((w) => w.status === "done" || w.status === "gone").length;
    const failed = run.workspaces.filter((w) => w.status === "failed").length;
    summary.replaceChildren(`${words}: ${finished(people)} of ${people.length} workspaces done`,
      archives.length ? `, ${finished(archives)} of ${archives.length} archive indexes` : "",
      failed ? `, ${failed} failed` : "", ` · with ${run.model} · started `, timeEl(run.startedAt), run.startedBy ? ` by ${run.startedBy}` : "");
    const archiveStatus = archives.some((w) => w.status === "failed") ? "failed"
      : finished(archives) === archives.length ? "done" : "running";
    clear(list, people.map((w) => h("li", { class: "row", dataset: { workspace: w.workspace } },
      h("strong", {}, w.workspace), badge(w.status), h("span", { class: "hint" }, `${w.chunks} chunks`),
      w.error ? h("span", { class: "hint" }, w.error) : null)),
    archives.length ? h("li", { class: "row" }, h("strong", {}, "Archive indexes"), badge(archiveStatus),
      h("span", { class: "hint" }, `${finished(archives)} of ${archives.length} done`)) : null);
    button.disabled = run.status === "running";
  }

  async function poll() {
    timer = null;
    if (!card.isConnected) return; // the page was left: stop asking
    let state;
    try {
      state = await api(URL);
    } catch (error) {
      summary.textContent = error.message;
      return;
    }
    if (!state.run) return;
    paint(state.run);
    if (state.run.status === "running") timer = setTimeout(poll, POLL_MS);
  }

  button.addEventListener("click", async () => {
    const ok = await confirmDialog({
      title: "Re-index all workspaces?",
      message: "Every workspace's vectors are made again with the configured embedding model. It can take a while on large workspaces; search keeps working meanwhile.",
      confirm: "Re-index",
    });
    if (!ok) return;
    button.disabled = true;
    try {
      await api(URL, { method: "POST", body: {} });
      toast("Re-index started.", { kind: "ok" });
    } catch (error) {
      toast(error.message, { kind: "danger" });
    }
    if (timer) clearTimeout(timer);
    await poll();
  });
  // A run started earlier (here or elsewhere) shows where it is.
  setTimeout(poll, 0);
  return card;
}

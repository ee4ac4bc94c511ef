// Documents: drag-and-drop upload of many files with per-file progress and live status,
// the workspace's documents with filters, failures with their reasons, and delete; one
// document read page by page, the cited passage highlighted, and its file downloaded.

import { api, ApiError, session, uploadFile, ws } from "./api.js";
import {
  announce, clear, confirmDialog, emptyState, errorNotice, fmtBytes, fmtDate, h, icon, loading, modal, timeEl, toast,
} from "./dom.js";
import { renderDocumentText } from "./render.js";
import { app, currentRoute, setHashQuietly } from "./state.js";

const TYPES = ["pdf", "docx", "pptx", "xlsx", "csv", "txt", "md", "html"];
const EXTENSIONS = new Set([...TYPES, "htm", "markdown"]);
const STATUSES = ["pending", "processing", "ready", "failed", "skipped"];
const PAGE_SIZE = 50;
const POLL_MS = 1500;
const PARALLEL_UPLOADS = 3;
const REASONS = {
  corrupt: "The file is damaged or not what its name says.",
  encrypted: "The file is password-protected.",
  needs_ocr: "A scanned PDF: it has no text layer (OCR needed).",
  too_large: "The file is over the size limit.",
  zip_bomb: "The file expands to far more than it holds (refused as a decompression bomb).",
  unreadable: "The file could not be read.",
  empty: "The file has no text.",
  duplicate: "The same content is already in this workspace under another name; that copy is kept.",
  unsupported_type: "This type of file is not supported.",
  symlink_loop: "A symbolic link loops.",
};

// Uploads outlive the page: leave Documents and come back, they are still there.
const queues = new Map(); // workspace -> {items, listeners}
function queueOf(workspace) {
  if (!queues.has(workspace)) queues.set(workspace, { items: [], listeners: new Set(), running: 0 });
  return queues.get(workspace);
}
app.on("signout", () => queues.clear());

function statusBadge(status) {
  const kinds = { ready: "ok", failed: "danger", processing: "info pulse", pending: "pulse", skipped: "" };
  const labels = { ready: "Ready", failed: "Failed", processing: "Processing", pending: "Queued", skipped: "Skipped" };
  return h("span", { class: ["badge", kinds[status] || ""] }, h("span", { class: "dot", "aria-hidden": "true" }), labels[status] || status);
}

// Why a video could not be added, in words: the server's sentence says which video and
// which languages; this says what it means for the person.
function videoProblem(error) {
  const lead = {
    transcripts_disabled: "This video has no transcript: its uploader turned captions off.",
    no_transcript_in_languages: "No transcript in the languages this server prefers.",
    video_unavailable: "This video is unavailable.",
    youtube_blocked: "YouTube refused this server's request for now.",
    invalid_youtube_url: "That is not a YouTube video link.",
    youtube_unreachable: "YouTube cannot be reached from the server.",
  }[error.code];
  return lead ? [h("strong", {}, lead), h("div", { class: "small" }, error.message)] : error.message;
}

function reasonText(doc) {
  return doc.message || REASONS[doc.reason] || doc.reason || "Processing failed.";
}

export async function render(container, { rest, query }) {
  const workspace = app.workspace;
  const base = ws(workspace);
  const canWrite = app.can("documents:write");
  const queue = queueOf(workspace);
  const state = { items: [], total: 0, offset: 0, status: "", type: "", filter: "", loading: true, error: null };
  let timer = null;
  let alive = true;

  // -- upload area --
  const input = h("input", { type: "file", multiple: true, class: "sr-only", tabindex: "-1", "aria-hidden": "true", accept: ".pdf,.docx,.pptx,.xlsx,.csv,.txt,.md,.markdown,.html,.htm" });
  input.addEventListener("change", () => { enqueue([...input.files]); input.value = ""; });
  const choose = h("button", { class: "btn primary", type: "button", on: { click: () => input.click() } }, icon("upload", "sm"), "Choose files");
  const dropzone = h("section", { class: "dropzone", "aria-label": "Upload documents" },
    icon("upload"),
    h("strong", {}, "Drag and drop files here"),
    h("span", { class: "muted small" }, "PDF, Word, PowerPoint, Excel, CSV, text, Markdown or HTML · many at once"),
    choose, input);
  // -- a YouTube video: its transcript becomes a document (POST …/documents/youtube) --
  const videoInput = h("input", { class: "input", type: "text", inputmode: "url", id: "youtube-url", autocomplete: "off", spellcheck: "false", placeholder: "https://www.youtube.com/watch?v=…  or  https://youtu.be/…" });
  const videoButton = h("button", { class: "btn", type: "submit" }, icon("plus", "sm"), "Add video");
  const videoStatus = h("div", { class: "youtube-status", "aria-live": "polite" });
  const videoForm = h("form", { class: "youtube-add stack", "aria-label": "Add a YouTube video" },
    h("label", { class: "label", for: "youtube-url" }, "Add a YouTube video"),
    h("div", { class: "input-group" }, videoInput, videoButton),
    h("span", { class: "muted small" }, "Its transcript becomes a document; a citation of it opens the video at that moment."),
    videoStatus);
  videoForm.addEventListener("submit", (e) => { e.preventDefault(); addVideo(); });
  const uploadsList = h("ul", { class: "uploads", "aria-label": "Uploads" });
  const clearDone = h("button", { class: "btn ghost small", type: "button", on: { click: () => { queue.items = queue.items.filter((i) => !["ready", "duplicate", "failed"].includes(i.state)); paintUploads(); } } }, "Clear finished");
  const uploadsSection = h("section", { class: "card", "aria-labelledby": "uploads-title", hidden: true },
    h("header", {}, h("h2", { id: "uploads-title", class: "spacer" }, "Uploads"), h("span", { class: "muted small", "aria-live": "polite" }), clearDone),
    uploadsList);

  // -- filters and table --
  const search = h("input", { class: "input", type: "search", placeholder: "Filter by name", "aria-label": "Filter by name", on: { input: () => { state.filter = search.value.trim().toLowerCase(); paintTable(); } } });
  const statusSelect = h("select", { class: "input", "aria-label": "Status", on: { change: () => { state.status = statusSelect.value; state.offset = 0; load(); } } },
    h("option", { value: "" }, "Any status"), STATUSES.map((s) => h("option", { value: s }, s[0].toUpperCase() + s.slice(1))));
  const typeSelect = h("select", { class: "input", "aria-label": "Type", on: { change: () => { state.type = typeSelect.value; state.offset = 0; load(); } } },
    h("option", { value: "" }, "Any type"), TYPES.map((t) => h("option", { value: t }, t.toUpperCase())));
  const tableHost = h("div", { "aria-live": "off" });
  const pager = h("nav", { class: "pager", "aria-label": "Pages of documents" });
  const sub = h("p", { class: "sub" }, " ");
  const overlay = h("div", { class: "drop-overlay", "aria-hidden": "true" }, h("div", {}, "Drop files to upload them to ", workspace));

  const pageEl = h("div", { class: "page documents-page" },
    h("div", { class: "page-inner" },
      h("div", { class: "page-head" }, h("h1", {}, "Documents"),
        h("span", { class: "spacer" }),
        h("button", { class: "btn ghost small", type: "button", on: { click: () => load() } }, icon("refresh", "sm"), "Refresh"),
        sub),
      canWrite ? dropzone : h("div", { class: "notice" }, icon("info"), h("div", { class: "notice-body" }, "You may read this workspace's documents, not upload or delete them.")),
      canWrite ? videoForm : null,
      uploadsSection,
      h("section", { class: "stack", "aria-labelledby": "docs-title" },
        h("h2", { id: "docs-title", class: "sr-only" }, "All documents"),
        h("div", { class: "filters", role: "search", "aria-label": "Filter documents" },
          h("div", { class: "field grow" }, h("label", { class: "label", for: search.id || (search.id = "doc-filter") }, "Name"), search),
          h("div", { class: "field" }, h("label", { class: "label", for: (statusSelect.id = "doc-status") }, "Status"), statusSelect),
          h("div", { class: "field" }, h("label", { class: "label", for: (typeSelect.id = "doc-type") }, "Type"), typeSelect)),
        tableHost, pager)),
    overlay);
  container.append(pageEl);

  // -- drag and drop anywhere on the page --
  let depth = 0;
  const hasFiles = (e) => e.dataTransfer && [...(e.dataTransfer.types || [])].includes("Files");
  if (canWrite) {
    pageEl.addEventListener("dragenter", (e) => { if (!hasFiles(e)) return; e.preventDefault(); depth += 1; pageEl.classList.add("dragging"); });
    pageEl.addEventListener("dragover", (e) => { if (!hasFiles(e)) return; e.preventDefault(); e.dataTransfer.dropEffect = "copy"; });
    pageEl.addEventListener("dragleave", () => { depth = Math.max(0, depth - 1); if (!depth) pageEl.classList.remove("dragging"); });
    pageEl.addEventListener("drop", (e) => {
      e.preventDefault();
      depth = 0;
      pageEl.classList.remove("dragging");
      const files = [...((e.dataTransfer && e.dataTransfer.files) || [])];
      if (files.length) enqueue(files);
    });
  }

  // -- uploads --
  function enqueue(files) {
    for (const file of files) {
      const ext = (file.name.split(".").pop() || "").toLowerCase();
      const item = { key: `${Date.now()}-${Math.random()}`, file, name: file.name, size: file.size, progress: 0, state: "queued", doc: null, error: null };
      if (!EXTENSIONS.has(ext)) {
        item.state = "failed";
        item.error = `Not a supported type (.${ext || "?"}). Accepted: ${TYPES.join(", ")}.`;
      }
      queue.items.unshift(item);
    }
    announce(`${files.length} file${files.length === 1 ? "" : "s"} added to the uploads`);
    pump();
    paintUploads();
  }

  function pump() {
    while (queue.running < PARALLEL_UPLOADS) {
      const next = [...queue.items].reverse().find((i) => i.state === "queued");
      if (!next) break;
      queue.running += 1;
      send(next).finally(() => { queue.running -= 1; pump(); });
    }
  }

  async function send(item) {
    item.state = "uploading";
    notify();
    try {
      const { status, body } = await uploadFile(`${base}/documents`, item.file, {
        onProgress: (p) => { item.progress = p; notify(); },
      });
      item.progress = 1;
      item.doc = body;
      item.file = null; // the bytes are on the server now
      if (status === 200 && body.duplicate) {
        item.state = "duplicate";
        toast(`“${item.name}” is already in ${workspace}.`);
      } else {
        item.state = body.status === "ready" ? "ready" : body.status === "failed" ? "failed" : "processing";
        if (item.state === "failed") item.error = reasonText(body);
      }
    } catch (error) {
      item.state = "failed";
      item.error = error.message;
    }
    notify();
    schedule();
    load(true);
  }

  async function addVideo() {
    const url = videoInput.value.trim();
    if (!url) { videoInput.focus(); return; }
    videoButton.disabled = true;
    clear(videoStatus, h("span", { class: "spinner", "aria-hidden": "true" }), h("span", {}, " Fetching the transcript and indexing it…"));
    try {
      const doc = await api(`${base}/documents/youtube`, { method: "POST", body: { url } });
      const verb = { created: "Added", updated: "Updated", unchanged: "Already up to date:" }[doc.outcome] || "Added";
      clear(videoStatus, h("div", { class: "notice", role: "status" }, icon("check"), h("div", { class: "notice-body" },
        `${verb} “${doc.title}” · transcript in ${doc.language}${doc.generated ? " (auto-generated)" : ""} · ${doc.chunks} chunk${doc.chunks === 1 ? "" : "s"} · `,
        h("a", { href: `#/documents/${doc.id}` }, "Details"))));
      videoInput.value = "";
      load(true);
    } catch (error) {
      clear(videoStatus, h("div", { class: "notice error", role: "alert" }, icon("alert"), h("div", { class: "notice-body" }, videoProblem(error))));
    } finally {
      videoButton.disabled = false;
    }
  }

  function notify() { for (const fn of queue.listeners) fn(); }
  queue.listeners.add(paintUploads);

  function paintUploads() {
    uploadsSection.hidden = !queue.items.length;
    const counts = { done: 0, total: queue.items.length };
    clear(uploadsList, queue.items.map((item) => {
      if (["ready", "duplicate", "failed"].includes(item.state)) counts.done += 1;
      const pct = Math.round(item.progress * 100);
      const spin = () => h("span", { class: "spinner", "aria-hidden": "true" });
      let detail;
      if (item.state === "queued") detail = [icon("history", "sm"), h("span", {}, "Waiting to upload…")];
      else if (item.state === "uploading") detail = [spin(), h("span", {}, `Uploading… ${pct}%`)];
      else if (item.state === "processing") detail = [spin(), h("span", {}, item.doc && item.doc.status === "processing" ? "Processing: parsing, chunking, embedding…" : "Uploaded · queued for processing")];
      else if (item.state === "ready") detail = [icon("check", "sm"), h("span", {}, `Ready · ${item.doc.chunks} chunk${item.doc.chunks === 1 ? "" : "s"}${item.doc.pages ? ` · ${item.doc.pages} page${item.doc.pages === 1 ? "" : "s"}` : ""} · `, h("a", { href: `#/documents/${item.doc.id}` }, "Details"))];
      else if (item.state === "duplicate") detail = [icon("info", "sm"), h("span", {}, "Already in this workspace: the same content is ", h("a", { href: `#/documents/${item.doc.id}` }, `“${item.doc.name}”`), ` (added ${fmtDate(item.doc.createdAt)}), which is kept. Not stored twice.`)];
      else detail = [icon("alert", "sm"), h("span", {}, item.error || "Failed.")];
      return h("li", { class: ["upload", item.state], dataset: { name: item.name, state: item.state } },
        h("span", { class: "name", title: item.name }, item.name),
        h("span", { class: "muted small nowrap" }, fmtBytes(item.size)),
        h("progress", { class: ["bar", item.state === "ready" ? "done" : ""], max: 100, value: item.state === "failed" ? 0 : (["uploading", "queued"].includes(item.state) ? pct : 100), "aria-label": `${item.name}: upload progress` }),
        h("div", { class: "detail", role: item.state === "failed" ? "alert" : undefined }, detail));
    }));
    uploadsSection.querySelector("header .muted").textContent = `${counts.done} of ${counts.total} done`;
  }

  // -- polling --
  function inFlight() {
    return queue.items.some((i) => ["uploading", "queued", "processing"].includes(i.state))
      || state.items.some((d) => d.status === "pending" || d.status === "processing");
  }

  function schedule() {
    if (timer || !alive) return;
    timer = setTimeout(async () => {
      timer = null;
      if (!alive) return;
      await refreshProcessing();
      await load(true);
      if (inFlight()) schedule();
    }, POLL_MS);
  }

  async function refreshProcessing() {
    const waiting = queue.items.filter((i) => i.state === "processing" && i.doc);
    await Promise.all(waiting.map(async (item) => {
      try {
        const doc = await api(`${base}/documents/${item.doc.id}`);
        item.doc = { ...item.doc, ...doc };
        if (doc.status === "ready") { item.state = "ready"; announce(`${item.name} is ready`); } else if (doc.status === "failed" || doc.status === "skipped") { item.state = "failed"; item.error = doc.status === "skipped" ? `Skipped: ${reasonText(doc)}` : reasonText(doc); announce(`${item.name} ${doc.status}`); }
      } catch (error) {
        if (error.status === 404) { item.state = "failed"; item.error = "The document was deleted."; }
      }
    }));
    if (waiting.length) notify();
  }

  // -- the table --
  async function load(quiet = false) {
    if (!quiet) { state.loading = true; paintTable(); }
    try {
      const page = await api(`${base}/documents`, { query: { status: state.status, type: state.type, limit: PAGE_SIZE, offset: state.offset } });
      state.items = page.items;
      state.total = page.total;
      state.error = null;
    } catch (error) {
      state.error = error;
    }
    state.loading = false;
    if (!alive) return;
    paintTable();
    if (inFlight()) schedule();
  }

  function paintTable() {
    const filtering = state.status || state.type || state.filter;
    sub.textContent = state.loading && !state.items.length ? " " : `${state.total.toLocaleString()} document${state.total === 1 ? "" : "s"}${filtering ? (state.total === 1 ? " matches the filters" : " match the filters") : ` in ${workspace}`}`;
    if (state.loading && !state.items.length) { clear(tableHost, loading("Loading documents…")); pager.replaceChildren(); return; }
    if (state.error) { clear(tableHost, errorNotice(state.error, () => load())); pager.replaceChildren(); return; }
    const rows = state.items.filter((d) => !state.filter || `${d.title} ${d.name}`.toLowerCase().includes(state.filter));
    if (!rows.length) {
      clear(tableHost, filtering
        ? emptyState({ iconName: "search", title: "No document matches", body: "Change or clear the filters.", action: h("button", { class: "btn", type: "button", on: { click: resetFilters } }, "Clear filters") })
        : emptyState({ iconName: "file", title: "No documents yet", body: canWrite ? "Drop files above, or choose them, to index them in this workspace. Each one is parsed, chunked and embedded, then searchable and citable." : "Nobody has added documents to this workspace yet." }));
      pager.replaceChildren();
      return;
    }
    const target = Number(currentRoute().rest[0]) || null;
    clear(tableHost, h("div", { class: "table-wrap responsive docs-table" }, h("table", { class: "data", "aria-label": "Documents" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Type"), h("th", { scope: "col" }, "Status"),
        h("th", { scope: "col", class: "num" }, "Pages"), h("th", { scope: "col", class: "num" }, "Chunks"), h("th", { scope: "col", class: "num" }, "Size"),
        h("th", { scope: "col" }, "Added"), canWrite ? h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions")) : null)),
      h("tbody", {}, rows.map((d) => h("tr", { class: d.id === target ? "highlight" : "", dataset: { id: String(d.id), status: d.status } },
        h("td", { class: "primary-cell" }, h("div", { class: "cell-title" }, h("a", { href: `#/documents/${d.id}` }, d.title), h("small", {}, d.name))),
        h("td", { "data-label": "Type" }, h("span", { class: "badge" }, d.type)),
        h("td", { "data-label": "Status" }, h("div", { class: "status-cell" }, statusBadge(d.status), ["failed", "skipped"].includes(d.status) ? h("span", { class: "why", title: reasonText(d) }, reasonText(d)) : null)),
        h("td", { class: "num pages-cell", "data-label": "Pages" }, d.pages ?? "—"),
        h("td", { class: "num chunks-cell", "data-label": "Chunks" }, d.status === "ready" ? String(d.chunks) : "—"),
        h("td", { class: "num nowrap size-cell", "data-label": "Size" }, fmtBytes(d.size)),
        h("td", { class: "nowrap added-cell", "data-label": "Added" }, timeEl(d.createdAt)),
        canWrite ? h("td", { class: "actions" }, h("button", { class: "btn ghost small icon-only", type: "button", "aria-label": `Delete ${d.title}`, title: "Delete", on: { click: () => remove(d) } }, icon("trash", "sm"))) : null))))));
    const from = state.total ? state.offset + 1 : 0;
    const to = Math.min(state.offset + PAGE_SIZE, state.total);
    clear(pager, h("span", { class: "muted small" }, `${from}–${to} of ${state.total}`),
      h("button", { class: "btn small", type: "button", disabled: state.offset === 0, on: { click: () => { state.offset = Math.max(0, state.offset - PAGE_SIZE); load(); } } }, "Previous"),
      h("button", { class: "btn small", type: "button", disabled: to >= state.total, on: { click: () => { state.offset += PAGE_SIZE; load(); } } }, "Next"));
  }

  function resetFilters() {
    search.value = "";
    statusSelect.value = "";
    typeSelect.value = "";
    Object.assign(state, { filter: "", status: "", type: "", offset: 0 });
    load();
  }

  async function remove(doc, after) {
    const ok = await confirmDialog({ title: `Delete “${doc.title}”?`, message: "It leaves the search index, the vectors and the uploads folder. Answers can no longer cite it.", confirm: "Delete", danger: true });
    if (!ok) return;
    try {
      await api(`${base}/documents/${doc.id}`, { method: "DELETE" });
      toast(`Deleted “${doc.title}”.`);
      if (after) after();
      load(true);
    } catch (error) {
      toast(error.message, { kind: "error" });
    }
  }

  // -- one document (#/documents/ID, ?chunk=C: a cited passage) --
  let detail = null;
  async function showDetail(id, chunk = null) {
    if (detail) { detail.close(); detail = null; }
    if (!id) return;
    const body = h("div", { class: "stack" }, loading());
    const closeButton = h("button", { class: "btn", type: "button", on: { click: () => detail && detail.close() } }, "Close");
    const deleteButton = canWrite ? h("button", { class: "btn danger", type: "button", disabled: true }, icon("trash", "sm"), "Delete") : null;
    detail = modal({ title: "Document", body, foot: [deleteButton, h("span", { class: "spacer" }), closeButton], className: "reader", onClose: () => { detail = null; if (currentRoute().page === "documents" && currentRoute().rest.length) setHashQuietly("#/documents"); } });
    try {
      const d = await api(`${base}/documents/${id}`);
      detail.querySelector("h2").textContent = d.title;
      const downloadButton = h("button", { class: "btn small", type: "button" }, icon("download", "sm"), "Download");
      downloadButton.addEventListener("click", () => download(d, downloadButton));
      clear(body,
        h("div", { class: "row" }, statusBadge(d.status), h("span", { class: "badge" }, d.type), h("span", { class: "badge" }, d.origin),
          h("span", { class: "spacer" }), downloadButton,
          h("a", { class: "btn small ghost", href: `#/search?q=${encodeURIComponent(d.title)}` }, icon("search", "sm"), "Search for it")),
        d.status === "failed" ? h("div", { class: "notice error", role: "alert" }, icon("alert"), h("div", { class: "notice-body" }, h("strong", {}, d.reason || "failed"), ": ", reasonText(d))) : null,
        reader(d, chunk),
        h("details", { class: "doc-facts" }, h("summary", {}, "Details"),
          h("dl", { class: "facts" },
            h("dt", {}, "Source"), h("dd", { class: "mono small" }, d.name),
            h("dt", {}, "Pages"), h("dd", {}, d.pages ?? "—"),
            h("dt", {}, "Chunks"), h("dd", {}, String(d.chunks)),
            h("dt", {}, "Size"), h("dd", {}, fmtBytes(d.size)),
            h("dt", {}, "Added"), h("dd", {}, fmtDate(d.createdAt)),
            h("dt", {}, "Document date"), h("dd", {}, fmtDate(d.documentDate)),
            h("dt", {}, "Indexed"), h("dd", {}, fmtDate(d.indexedAt)),
            h("dt", {}, "Id"), h("dd", {}, String(d.id)))));
      if (deleteButton) {
        deleteButton.disabled = false;
        deleteButton.addEventListener("click", () => remove(d, () => detail && detail.close()));
      }
    } catch (error) {
      clear(body, error.status === 404 ? emptyState({ iconName: "file", title: "No such document", body: "It may have been deleted, or it belongs to another workspace." }) : errorNotice(error));
    }
  }

  // The text, a page (or part) at a time, with the cited passage marked and in view.
  function reader(d, chunk) {
    const textEl = h("div", { class: "doc-text", tabindex: "0", "aria-label": "Document text" }, loading("Loading the text…"));
    const picker = h("select", { class: "input", "aria-label": "Page" });
    const prev = h("button", { class: "btn small", type: "button" }, "Previous");
    const next = h("button", { class: "btn small", type: "button" }, "Next");
    const where = h("span", { class: "muted small", "aria-live": "polite" });
    const nav = h("nav", { class: "pager doc-pager", "aria-label": "Pages of the document", hidden: true }, prev, picker, next, where);
    const note = h("div");
    let shown = null;
    picker.addEventListener("change", () => show(Number(picker.value)));
    prev.addEventListener("click", () => shown && show(shown.page - 1));
    next.addEventListener("click", () => shown && show(shown.page + 1));

    async function show(page) {
      try {
        const t = await api(`${base}/documents/${d.id}/text`, { query: { page, chunk } });
        paint(t);
      } catch (error) {
        clear(textEl, errorNotice(error, () => show(page)));
      }
    }

    function paint(t) {
      shown = t;
      if (!t.pageCount) {
        nav.hidden = true;
        clear(textEl, emptyState({ iconName: "file", title: "No text to show", body: d.status === "ready" ? "No text was found in this document." : "The text is shown once the document is processed." }));
        return;
      }
      const kind = t.paged ? (d.type === "pptx" ? "Slide" : "Page") : "Part";
      nav.hidden = t.pageCount < 2;
      picker.setAttribute("aria-label", kind);
      if (picker.options.length !== t.pageCount) {
        clear(picker, Array.from({ length: t.pageCount }, (_, i) => h("option", { value: String(i + 1) }, `${kind} ${i + 1} of ${t.pageCount}`)));
      }
      picker.value = String(t.page);
      prev.disabled = t.page <= 1;
      next.disabled = t.page >= t.pageCount;
      where.textContent = t.highlight ? "The cited passage is marked." : "";
      clear(note, t.redacted ? h("div", { class: "notice warn" }, icon("shield"), h("div", { class: "notice-body" }, "Data-loss prevention replaced part of this page with [REDACTED].")) : null);
      if (!t.text.trim()) { clear(textEl, h("p", { class: "muted" }, `No text on this ${kind.toLowerCase()}.`)); return; }
      const cited = renderDocumentText(textEl, t.text, t.highlight);
      if (cited) {
        cited.id = "cited-passage";
        requestAnimationFrame(() => cited.scrollIntoView({ block: "center" }));
      } else textEl.scrollTop = 0;
    }

    show(undefined);
    return h("section", { class: "stack doc-reader", "aria-label": "Text" }, nav, note, textEl);
  }

  // The original file: fetched with the session (a plain link would carry none) and
  // saved under its own name; never opened in the page.
  async function download(d, button) {
    button.disabled = true;
    try {
      const current = session();
      const response = await fetch(`${base}/documents/${d.id}/file`, { headers: current ? { Authorization: `Bearer ${current.token}` } : {} });
      if (!response.ok) {
        let problem = {};
        try { problem = await response.json(); } catch { /* not JSON */ }
        throw new ApiError(response.status, problem);
      }
      const blob = await response.blob();
      const url = URL.createObjectURL(blob);
      const link = h("a", { href: url, download: fileName(response.headers.get("content-disposition")) || d.title, class: "sr-only" });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (error) {
      toast(error.message, { kind: "error" });
    } finally {
      button.disabled = false;
    }
  }

  paintUploads();
  await load();
  if (queue.items.length) pump();
  const initial = Number(rest[0]) || null;
  if (initial) showDetail(initial, passageOf(query));

  return {
    title: "Documents",
    update: ({ rest: next, query: nextQuery }) => {
      const id = Number(next[0]) || null;
      paintTable();
      if (id) showDetail(id, passageOf(nextQuery));
      else if (detail) detail.close();
    },
    cleanup: () => {
      alive = false;
      clearTimeout(timer);
      queue.listeners.delete(paintUploads);
      if (detail) detail.close();
    },
  };
}

/** The passage to highlight, from ``?chunk=`` in the address. */
function passageOf(query) {
  const chunk = Number(query && query.get("chunk"));
  return Number.isInteger(chunk) && chunk > 0 ? chunk : null;
}

/** The file name a Content-Disposition header gives (``filename*`` first). */
function fileName(header) {
  if (!header) return null;
  const exact = /filename\*=UTF-8''([^;]+)/i.exec(header);
  if (exact) { try { return decodeURIComponent(exact[1]); } catch { /* fall back */ } }
  const plain = /filename="([^"]*)"/i.exec(header);
  return plain ? plain[1] : null;
}

// OCR settings of the workspace: how scans and images are read (the engine, or off;
// Tesseract's languages; the vision model, from the configured providers), the
// instructions added to the vision prompt, and the OCR jobs: each one's pages previewed,
// and those below the quality bar approved (indexed) or rejected. Managers and admins
// change; everyone else reads.

import { approveJob, getInstructions, getJob, getOcrSettings, listJobs, rejectJob, saveInstructions, saveOcrSettings } from "./ocr_api.js";
import { clear, emptyState, errorNotice, field, h, icon, loading, setFieldError, timeEl, toast } from "./dom.js";
import { app, refreshModels } from "./state.js";

// -- words for people ------------------------------------------------------------------------
const ENGINES = {
  auto: "Automatic: Tesseract, else RapidOCR",
  tesseract: "Tesseract",
  rapidocr: "RapidOCR",
  vision: "A vision model",
  off: "Off: scans and images are not read",
};
const STATUS = {
  queued: { label: "Queued", kind: "info" },
  running: { label: "Reading", kind: "info" },
  review: { label: "Waiting for review", kind: "warn" },
  indexed: { label: "Indexed", kind: "ok" },
  rejected: { label: "Rejected", kind: "danger" },
  failed: { label: "Failed", kind: "danger" },
  no_text: { label: "No text found", kind: "" },
};
const FILTERS = [["", "All jobs"], ["review", "Waiting for review"], ["indexed", "Indexed"], ["rejected", "Rejected"], ["failed", "Failed"]];
const PREVIEW_CHARS = 4000;

const engineWords = (name) => ENGINES[name] || name;
const percent = (x) => (x == null ? "—" : `${Math.round(x * 100)} %`);

function statusBadge(status) {
  const words = STATUS[status] || { label: status, kind: "" };
  return h("span", { class: ["badge", words.kind] }, h("span", { class: "dot" }), words.label);
}

async function busy(button, label, fn) {
  const text = button.textContent;
  button.disabled = true;
  button.replaceChildren(h("span", { class: "spinner", "aria-hidden": "true" }), label);
  try { return await fn(); } finally {
    button.disabled = false;
    button.replaceChildren(text);
  }
}

// -- the page ---------------------------------------------------------------------------------
export async function render(container) {
  const workspace = app.workspace;
  const canWrite = app.can("workspaces:write");
  const inner = h("div", { class: "page-inner stack" },
    h("div", { class: "page-head" }, h("h1", {}, "OCR"),
      h("p", { class: "sub" }, `How scans and images in workspace ${workspace} are read, and the results waiting for a review.`)));
  container.append(h("div", { class: "page" }, inner));
  const host = h("div", { class: "stack" }, loading("Loading OCR settings…"));
  inner.append(host);

  let settings; let instructions; let models;
  try {
    [settings, instructions, models] = await Promise.all([
      getOcrSettings(workspace),
      getInstructions(workspace),
      app.can("chat:use") ? refreshModels().catch(() => null) : Promise.resolve(null),
    ]);
  } catch (error) {
    clear(host, errorNotice(error, () => { container.replaceChildren(); render(container); }));
    return { title: "OCR" };
  }
  let alive = true;
  const jobs = jobsCard(workspace, canWrite, () => alive);
  clear(host,
    canWrite ? null : h("div", { class: "notice" }, icon("info"), h("div", { class: "notice-body" }, "You can read these settings; changing them needs a manager or an admin.")),
    h("div", { class: "cards-2" },
      engineForm(workspace, settings, (models && models.models) || [], canWrite),
      instructionsForm(workspace, instructions, canWrite)),
    jobs.card);
  await jobs.load();
  return { title: "OCR", cleanup: () => { alive = false; } };
}

// -- engine, languages, vision model ----------------------------------------------------------------
function engineForm(workspace, settings, models, canWrite) {
  const server = settings.server;
  const engine = h("select", { class: "input", name: "engine", disabled: !canWrite },
    h("option", { value: "" }, `The server's setting (${server.enabled ? engineWords(server.engine) : "off"})`),
    settings.engines.map((name) => h("option", { value: name }, engineWords(name))));
  engine.value = settings.engine || "";
  const installed = settings.installedLanguages || [];
  const languages = h("input", {
    class: "input", name: "languages", disabled: !canWrite, autocomplete: "off", spellcheck: false,
    value: (settings.languages || []).join(", "), placeholder: `The server's: ${server.languages.join(", ")}`,
  });
  const vision = h("select", { class: "input", name: "visionModel", disabled: !canWrite },
    h("option", { value: "" }, `The server's setting (${server.visionModel || "none"})`),
    models.map((m) => h("option", { value: m.id }, m.available === false ? `${m.id} — unavailable` : m.id)));
  if (settings.visionModel && !models.some((m) => m.id === settings.visionModel)) {
    vision.append(h("option", { value: settings.visionModel }, settings.visionModel));
  }
  vision.value = settings.visionModel || "";
  const effective = h("p", { class: "hint", "aria-live": "polite" });
  const paintEffective = (s) => {
    const e = s.effective;
    effective.textContent = e.enabled
      ? `Scans are read with: ${engineWords(e.engine)}; languages ${e.languages.join(", ")}${e.visionModel ? `; vision model ${e.visionModel}` : ""}.`
      : "OCR is off in this workspace: scans and images are kept without their text.";
  };
  paintEffective(settings);
  const save = h("button", { class: "btn primary", type: "submit", hidden: !canWrite }, "Save");
  const form = h("form", { class: "card stack", "aria-labelledby": "ocr-engine-title", novalidate: true },
    h("h2", { id: "ocr-engine-title" }, "Reading scans"),
    field("Engine", engine),
    field("Languages", languages, { hint: `Tesseract's codes, separated by commas (eng, deu, fra…). Installed here: ${installed.join(", ") || "none"}.` }),
    field("Vision model", vision, { hint: "Used by the vision engine, and for uploads that ask for it. Listed: the configured model providers." }),
    effective,
    h("div", { class: "row" }, save));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    setFieldError(languages, "");
    const codes = languages.value.split(/[\s,]+/).filter(Boolean);
    const body = { engine: engine.value || null, languages: codes.length ? codes : null, visionModel: vision.value || null };
    await busy(save, "Saving…", async () => {
      try {
        const saved = await saveOcrSettings(workspace, body);
        languages.value = (saved.languages || []).join(", ");
        paintEffective(saved);
        toast("OCR settings saved.", { kind: "ok" });
      } catch (error) {
        if (/language/i.test(error.message)) setFieldError(languages, error.message);
        else toast(error.message, { kind: "danger" });
      }
    });
  });
  return form;
}

// -- the vision prompt's instructions -----------------------------------------------------------
function instructionsForm(workspace, instructions, canWrite) {
  const text = h("textarea", {
    class: "input", name: "instructions", rows: 6, maxLength: 4000, disabled: !canWrite, value: instructions || "",
    placeholder: "For example: transcribe tables row by row, keep the original spelling.",
  });
  const save = h("button", { class: "btn primary", type: "submit", hidden: !canWrite }, "Save instructions");
  const form = h("form", { class: "card stack", "aria-labelledby": "ocr-instructions-title" },
    h("h2", { id: "ocr-instructions-title" }, "Instructions for the vision model"),
    field("Instructions", text, { hint: "Added to the prompt of the vision engine, for this workspace only. Up to 4000 characters." }),
    h("div", { class: "row" }, save));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await busy(save, "Saving…", async () => {
      try {
        text.value = await saveInstructions(workspace, text.value);
        toast("Instructions saved.", { kind: "ok" });
      } catch (error) {
        setFieldError(text, error.message);
      }
    });
  });
  return form;
}

// -- jobs: the list, a preview of their text, the review ----------------------------------------------
function jobsCard(workspace, canWrite, isAlive) {
  const filter = h("select", { class: "input", "aria-label": "Show", style: "width: auto" }, FILTERS.map(([value, label]) => h("option", { value }, label)));
  const body = h("div", { "aria-live": "polite" }, loading("Loading OCR jobs…"));
  const heading = h("h2", { id: "ocr-jobs-title" }, "OCR jobs");
  const card = h("section", { class: "card stack", "aria-labelledby": "ocr-jobs-title" },
    h("div", { class: "row" }, heading, h("span", { class: "spacer" }), filter), body);

  async function load() {
    let answer;
    try {
      answer = await listJobs(workspace, { status: filter.value });
    } catch (error) {
      if (isAlive()) clear(body, errorNotice(error, load));
      return;
    }
    if (!isAlive()) return;
    heading.textContent = `OCR jobs (${answer.total})`;
    if (!answer.items.length) {
      clear(body, emptyState({ iconName: "file", title: "No OCR jobs", body: "Scans and images uploaded to this workspace are read here." }));
      return;
    }
    clear(body, h("div", { class: "table-wrap responsive" }, h("table", { class: "data", "aria-label": "OCR jobs" },
      h("thead", {}, h("tr", {}, ["Document", "Status", "Pages", "Quality", "Credibility", "Updated", ""].map((t) => h("th", { scope: "col" }, t || h("span", { class: "sr-only" }, "Actions"))))),
      h("tbody", {}, answer.items.map((job) => jobRows(workspace, job, canWrite, load))))));
  }
  filter.addEventListener("change", load);
  return { card, load };
}

function jobRows(workspace, job, canWrite, reload) {
  const preview = h("div", { class: "stack" });
  const previewRow = h("tr", { class: "log-row", hidden: true }, h("td", { colspan: 7, "aria-label": `Text of ${job.title}` }, preview));
  const show = h("button", { class: "btn small", type: "button", "aria-expanded": "false" }, icon("eye"), "Preview");
  show.addEventListener("click", async () => {
    const open = previewRow.hidden;
    previewRow.hidden = !open;
    show.setAttribute("aria-expanded", String(open));
    if (open && !preview.firstChild) await paintPreview(workspace, job.id, preview);
  });
  const actions = [show];
  if (canWrite && job.status === "review") {
    const review = (label, fn, done) => h("button", {
      class: ["btn small", label === "Approve" ? "primary" : "danger"], type: "button",
      on: { click: async (e) => {
        await busy(e.currentTarget, "…", async () => {
          try { await fn(workspace, job.id); toast(done, { kind: "ok" }); await reload(); } catch (error) { toast(error.message, { kind: "danger" }); }
        });
      } },
    }, label);
    actions.push(review("Approve", approveJob, `“${job.title}” approved: its text is indexed.`),
      review("Reject", rejectJob, `“${job.title}” rejected: its text is not indexed.`));
  }
  const row = h("tr", { dataset: { job: String(job.id) } },
    h("td", { "data-label": "Document" }, h("strong", {}, job.title), job.reason ? h("span", { class: "hint" }, ` ${job.reason}`) : null),
    h("td", { "data-label": "Status" }, statusBadge(job.status)),
    h("td", { "data-label": "Pages" }, `${job.pagesDone} / ${job.pagesTotal}`),
    h("td", { "data-label": "Quality" }, percent(job.quality)),
    h("td", { "data-label": "Credibility" }, percent(job.credibility)),
    h("td", { "data-label": "Updated" }, timeEl(job.updatedAt)),
    h("td", { class: "actions" }, h("div", { class: "row" }, actions)));
  return [row, previewRow];
}

async function paintPreview(workspace, id, host) {
  clear(host, loading("Loading the text…"));
  let job;
  try {
    job = await getJob(workspace, id);
  } catch (error) {
    clear(host, errorNotice(error, () => paintPreview(workspace, id, host)));
    return;
  }
  const pages = job.pages.filter((p) => p.text);
  if (!pages.length) {
    clear(host, h("p", { class: "hint" }, "No text was read from this document."));
    return;
  }
  // The text is data read from a scan: shown as text, never as markup.
  clear(host, pages.map((p) => h("div", { class: "stack" },
    h("strong", {}, `Page ${p.page} · ${percent(p.confidence)} confidence${p.engine ? ` · ${engineWords(p.engine)}` : ""}`),
    h("div", { class: "doc-text" }, h("pre", {}, p.text.length > PREVIEW_CHARS ? `${p.text.slice(0, PREVIEW_CHARS)}…` : p.text)))));
}

// Backups (admins): the backups made, newest first, with how each went and its log; a
// backup made now; one downloaded, checked or put back (a restore, after typing a
// confirmation); and the scheduled backups: added, changed, paused, removed.

import { ApiError } from "./api.js";
import {
  addJob, backUpNow, downloadBackup, getBackup, listBackups, listJobs, POLL_MS, rekey, removeJob, restoreBackup,
  restoreStatus, updateJob, verifyBackup,
} from "./backups_api.js";
import {
  clear, confirmDialog, emptyState, errorNotice, field, fmtBytes, fmtDate, h, icon, loading, modal, setFieldError, timeEl, toast,
} from "./dom.js";
import { app, signOut } from "./state.js";

// -- words for people ------------------------------------------------------------------------------
const STATUS = {
  running: { label: "In progress", kind: "info pulse" },
  succeeded: { label: "Done", kind: "ok" },
  failed: { label: "Failed", kind: "danger" },
};
const STEPS = {
  waiting: "Waiting for requests to finish",
  verify: "Checking the backup",
  safety: "Backing up what is here now",
  dump: "Copying the database",
  collect: "Gathering files",
  archive: "Packing and encrypting",
  upload: "Sending",
  restore: "Putting the backup back",
  vectors: "Rebuilding the search index",
  migrate: "Updating the database",
  ready: "Checking everything works",
};
const VECTORS = {
  restored: "The search index was restored from the backup.",
  rebuilt: "The search index was rebuilt from the documents.",
  none: "There was no search index to restore.",
};

function startedBy(run) {
  if (run.trigger === "scheduled") return run.job ? `Scheduled (${run.job})` : "Scheduled";
  if (run.trigger === "safety") return "Safety copy before a restore";
  return "Started by hand";
}

// Where a backup went, as people say it: the folder or the service, without the scheme.
export function whereWords(destination) {
  const text = String(destination || "");
  const kinds = [[/^s3:\/\//, "Amazon S3: "], [/^sftp:\/\//, "SFTP: "], [/^ftps?:\/\//, "FTP: "], [/^email:/, "E-mail to "],
    [/^dropbox:/, "Dropbox: "], [/^gdrive:/, "Google Drive folder "], [/^local:/, ""]];
  for (const [pattern, label] of kinds) if (pattern.test(text)) return label + text.replace(pattern, "");
  return text || "This server's backup folder";
}

const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const pad = (n) => String(n).padStart(2, "0");

// A five-field cron schedule in words, for the usual shapes; null for the others.
export function scheduleWords(cron) {
  const parts = String(cron || "").trim().split(/\s+/);
  if (parts.length !== 5) return null;
  const [minute, hour, day, month, weekday] = parts;
  const number = (text, max) => /^\d+$/.test(text) && Number(text) <= max;
  if (!number(minute, 59)) return null;
  if (hour === "*" && day === "*" && month === "*" && weekday === "*") return `Every hour at ${pad(minute)} minutes past`;
  if (!number(hour, 23)) return null;
  const at = `at ${pad(hour)}:${pad(minute)}`;
  if (day === "*" && month === "*" && weekday === "*") return `Every day ${at}`;
  if (day === "*" && month === "*" && /^[0-7]$/.test(weekday)) return `Every ${DAYS[Number(weekday) % 7]} ${at}`;
  if (day === "*" && month === "*" && weekday === "1-5") return `Every weekday ${at}`;
  if (number(day, 31) && Number(day) >= 1 && month === "*" && weekday === "*") return `On day ${day} of every month ${at}`;
  return null;
}

function statusBadge(run) {
  const words = STATUS[run.status] || { label: run.status, kind: "" };
  return h("span", { class: ["badge", words.kind] }, h("span", { class: "dot" }), words.label);
}

// -- the page ------------------------------------------------------------------------------------------
export async function render(container) {
  const runsHost = h("section", { class: "stack", "aria-labelledby": "backups-title" }, loading());
  const jobsHost = h("section", { class: "stack", "aria-labelledby": "jobs-title" });
  const nowCard = h("div", {});
  container.append(h("div", { class: "page" }, h("div", { class: "page-inner stack" },
    h("div", { class: "page-head" }, h("h1", {}, "Backups"),
      h("p", { class: "sub" }, "Encrypted copies of everything on this server: documents, chats, users, settings, the wiki and the search index.")),
    nowCard, runsHost, jobsHost, keyCard())));

  let timer = null;
  let alive = true;
  let runs = [];
  const schedule = () => {
    clearTimeout(timer);
    if (alive && runs.some((r) => r.status === "running")) timer = setTimeout(() => loadRuns().catch(() => {}), POLL_MS);
  };

  async function loadRuns() {
    try {
      runs = await listBackups();
    } catch (error) {
      if (alive) clear(runsHost, errorNotice(error, () => loadRuns()));
      return;
    }
    if (!alive) return;
    paintRuns();
    paintNow();
    schedule();
  }

  // The form is built once (what is typed stays while the list refreshes); its button
  // waits while a backup runs.
  const where = h("input", { class: "input", placeholder: "This server's backup folder", spellcheck: "false", autocomplete: "off", autocapitalize: "none" });
  const index = h("input", { type: "checkbox", checked: true });
  const go = h("button", { class: "btn primary", type: "submit" }, icon("download", "sm"), h("span", {}, "Back up now"));
  const nowForm = h("form", { class: "card", "aria-labelledby": "now-title" },
    h("header", {}, h("h2", { id: "now-title" }, "Back up now"), h("p", {}, "Makes an encrypted copy; the page shows it once it is done.")),
    h("div", { class: "grid-form" },
      field("Where", where, { hint: "Empty: this server's backup folder. Or a folder, s3://bucket/prefix, sftp://user@host/folder…" }),
      h("label", { class: "check" }, index, h("span", {}, "Include the search index", h("span", { class: "hint" }, "Without it the backup is smaller, and a restore rebuilds the index from the documents.")))),
    h("div", { class: "save-bar" }, go));
  nowForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    go.disabled = true;
    setFieldError(where, "");
    try {
      const run = await backUpNow({ destination: where.value.trim(), includeVectors: index.checked });
      toast("Backup started.");
      runs = [run, ...runs.filter((r) => r.id !== run.id)];
      paintRuns();
      paintNow();
      schedule();
    } catch (error) {
      paintNow();
      if (error instanceof ApiError && error.status === 409) toast(error.message, { kind: "error" });
      else setFieldError(where, error.message);
    }
  });
  nowCard.append(nowForm);

  function paintNow() {
    const busy = runs.some((r) => r.status === "running");
    go.disabled = busy;
    go.querySelector("span").textContent = busy ? "Backing up…" : "Back up now";
  }

  function paintRuns() {
    const heading = h("h2", { id: "backups-title" }, `Backups (${runs.length})`);
    if (!runs.length) {
      clear(runsHost, heading, emptyState({ iconName: "history", title: "No backups yet", body: "Back up now, or add a schedule below." }));
      return;
    }
    const table = h("div", { class: "table-wrap responsive" }, h("table", { class: "data", "aria-label": "Backups" },
      h("thead", {}, h("tr", {}, ["When", "Status", "Size", "Where", ""].map((t) => h("th", { scope: "col" }, t || h("span", { class: "sr-only" }, "Actions"))))),
      h("tbody", {}, runs.map((run) => runRow(run, { reload: loadRuns })))));
    clear(runsHost, heading, table);
  }

  async function loadJobs() {
    let jobs;
    try {
      jobs = await listJobs();
    } catch (error) {
      if (alive) clear(jobsHost, errorNotice(error, () => loadJobs()));
      return;
    }
    if (alive) paintJobs(jobsHost, jobs, loadJobs);
  }

  await Promise.all([loadRuns(), loadJobs()]);
  return { title: "Backups", cleanup: () => { alive = false; clearTimeout(timer); } };
}

// -- one backup ------------------------------------------------------------------------------------------
// A backup's row, and the row below it that shows its log when asked.
function runRow(run, { reload }) {
  const logBody = h("pre", { class: "preview small", "aria-live": "polite" }, "Loading…");
  const logRow = h("tr", { class: "log-row", hidden: true }, h("td", { colspan: 5, "aria-label": "Log" }, logBody));
  const toggle = h("button", { class: "btn ghost small", type: "button", "aria-expanded": "false" }, icon("list", "sm"), "Log");
  toggle.addEventListener("click", async () => {
    const open = logRow.hidden;
    logRow.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    if (!open) return;
    try {
      const full = await getBackup(run.id);
      logBody.textContent = full.log.length ? full.log.join("\n") : "Nothing was logged.";
    } catch (error) { logBody.textContent = error.message; }
  });
  const done = run.status === "succeeded";
  const action = (label, iconName, fn, extra = {}) => h("button", { class: ["btn small", extra.danger ? "danger" : ""], type: "button", "aria-label": `${label}: backup of ${fmtDate(run.startedAt)}`, on: { click: fn } }, icon(iconName, "sm"), label);
  const row = h("tr", { dataset: { run: String(run.id) } },
    h("td", { class: "primary-cell" }, h("div", { class: "cell-title" }, h("strong", {}, timeEl(run.startedAt)), h("small", {}, startedBy(run)))),
    h("td", { "data-label": "Status" }, h("div", { class: "row" }, statusBadge(run), toggle),
      run.error ? h("div", { class: "small field-error" }, run.error) : null),
    h("td", { "data-label": "Size" }, fmtBytes(run.sizeBytes)),
    h("td", { "data-label": "Where", class: "small" }, whereWords(run.destination)),
    h("td", { class: "actions" }, done ? h("div", { class: "row" },
      action("Download", "download", (e) => download(run, e.currentTarget)),
      action("Check", "check", (e) => verify(run, e.currentTarget)),
      app.can("backup:restore") ? action("Restore", "undo", () => openRestore(run, reload), { danger: true }) : null) : null));
  return [row, logRow];
}

async function download(run, button) {
  button.disabled = true;
  try { await downloadBackup(run.id); } catch (error) { toast(error.message, { kind: "error" }); } finally { button.disabled = false; }
}

async function verify(run, button) {
  button.disabled = true;
  const body = h("div", { class: "stack" }, loading("Checking every file of the backup…"));
  const close = h("button", { class: "btn primary", type: "button", on: { click: () => dlg.close() } }, "Close");
  const dlg = modal({ title: `Check the backup of ${fmtDate(run.startedAt)}`, body, foot: [close] });
  try {
    const report = await verifyBackup(run.id);
    clear(body, report.ok
      ? h("div", { class: "notice ok", role: "status" }, icon("check"), h("div", { class: "notice-body" },
        `The backup is intact: it opens with this server's key, and all ${report.filesChecked} files match what was saved.`))
      : h("div", { class: "notice error", role: "alert" }, icon("alert"), h("div", { class: "notice-body" },
        h("strong", {}, "This backup cannot be trusted."), h("ul", {}, report.problems.map((p) => h("li", {}, p))))),
    h("p", { class: "small muted" }, `${fmtBytes(report.sizeBytes)}${report.manifest ? ` · made ${fmtDate(report.manifest.createdAt)} by version ${report.manifest.productVersion}` : ""}`));
  } catch (error) {
    clear(body, errorNotice(error));
  } finally {
    button.disabled = false;
  }
}

// -- restore ---------------------------------------------------------------------------------------------
function openRestore(run, reload) {
  const word = app.workspace || "RESTORE";
  const typed = h("input", { class: "input", autocomplete: "off", autocapitalize: "none", spellcheck: "false" });
  const go = h("button", { class: "btn danger solid", type: "button", disabled: true }, "Restore");
  const cancel = h("button", { class: "btn", type: "button", on: { click: () => dlg.close() } }, "Cancel");
  const matches = () => [word, "RESTORE"].includes(typed.value.trim());
  typed.addEventListener("input", () => { go.disabled = !matches(); });
  const body = h("div", { class: "stack" },
    h("div", { class: "notice warn" }, icon("alert"), h("div", { class: "notice-body" },
      h("strong", {}, "Everything on this server is replaced by the backup: "),
      "every workspace's documents and their files, chats, users and their passwords, API keys, settings, the wiki and the search index. ",
      "What was added or changed since the backup is lost.")),
    h("p", {}, "A safety copy of what is here now is made first, so this can be undone. The server answers nothing else while it restores; everyone may have to sign in again."),
    field(`Type ${word}${word === "RESTORE" ? "" : " or RESTORE"} to confirm`, typed));
  const dlg = modal({ title: `Restore the backup of ${fmtDate(run.startedAt)}?`, body, foot: [cancel, go] });
  typed.focus();
  go.addEventListener("click", async () => {
    if (!matches()) return;
    go.disabled = true;
    cancel.disabled = true;
    typed.disabled = true;
    const restored = await runRestore(run, body, dlg, reload);
    dlg.querySelector("h2").textContent = restored ? "Backup restored" : "Nothing was restored";
    go.remove();
    cancel.disabled = false;
    cancel.textContent = "Close";
  });
}

async function runRestore(run, body, dlg, reload) {
  const step = h("p", { "aria-live": "polite" }, "Starting…");
  const bar = h("progress", { class: "bar", "aria-label": "Restore progress" });
  clear(body, h("div", { class: "stack", role: "status" }, h("strong", {}, "Restoring…"), step, bar));
  let watching = true;
  const watch = async () => {
    while (watching) {
      try {
        const status = await restoreStatus();
        if (!status.restoring) break;
        step.textContent = status.message || STEPS[status.step] || "Working…";
        if (status.total) { bar.max = status.total; bar.value = status.done; } else bar.removeAttribute("value");
      } catch { /* the server is busy: ask again */ }
      await new Promise((resolve) => { setTimeout(resolve, POLL_MS); });
    }
  };
  watch();
  try {
    const report = await restoreBackup(run.id);
    watching = false;
    const signIn = h("button", { class: "btn primary", type: "button", on: { click: () => { dlg.close(); signOut({ kind: "ok", text: "The backup was restored. Sign in again." }); } } }, "Sign in again");
    clear(body, h("div", { class: "notice ok", role: "status" }, icon("check"), h("div", { class: "notice-body" },
      h("strong", {}, "The backup was restored. "), VECTORS[report.vectors] || "",
      report.safetyRun ? ` A safety copy of what was here is kept (${fmtBytes(report.safetyRun.sizeBytes)}).` : "")),
    report.warnings.length ? h("ul", { class: "small" }, report.warnings.map((w) => h("li", {}, w))) : null,
    h("div", { class: "btn-row" }, signIn));
    reload().catch(() => {});
    return true;
  } catch (error) {
    watching = false;
    clear(body, h("div", { class: "notice error", role: "alert" }, icon("alert"), h("div", { class: "notice-body" },
      h("strong", {}, "Nothing was restored. "), error.message)));
    reload().catch(() => {});
    return false;
  }
}

// -- scheduled backups --------------------------------------------------------------------------------
function paintJobs(host, jobs, reload) {
  const heading = h("h2", { id: "jobs-title" }, "Scheduled backups");
  const list = jobs.length
    ? h("div", { class: "table-wrap responsive" }, h("table", { class: "data", "aria-label": "Scheduled backups" },
      h("thead", {}, h("tr", {}, ["Name", "When", "Where", "Kept", "On", ""].map((t) => h("th", { scope: "col" }, t || h("span", { class: "sr-only" }, "Actions"))))),
      h("tbody", {}, jobs.map((job) => jobRow(job, reload)))))
    : emptyState({ iconName: "history", title: "No scheduled backups", body: "Add one to back up every night, say." });
  clear(host, heading, list, jobForm(null, reload));
}

function whenWords(job) {
  const words = scheduleWords(job.cron);
  return h("div", { class: "cell-title" }, h("span", {}, words || h("code", {}, job.cron)),
    job.enabled && job.nextRunAt ? h("small", {}, "Next: ", timeEl(job.nextRunAt, false)) : null,
    job.enabled ? null : h("small", {}, "Paused"));
}

function jobRow(job, reload) {
  const enabled = h("input", { type: "checkbox", checked: job.enabled, "aria-label": `Run ${job.name} on schedule` });
  enabled.addEventListener("change", async () => {
    try {
      await updateJob(job.name, { enabled: enabled.checked });
      toast(`${job.name} ${enabled.checked ? "runs on schedule again" : "is paused"}.`);
      reload();
    } catch (error) { enabled.checked = job.enabled; toast(error.message, { kind: "error" }); }
  });
  const edit = h("button", { class: "btn ghost small icon-only", type: "button", "aria-label": `Change ${job.name}`, on: { click: () => {
    const form = jobForm(job, reload);
    const dlg = modal({ title: `Change ${job.name}`, body: form });
    form.addEventListener("saved", () => dlg.close());
  } } }, icon("edit", "sm"));
  const remove = h("button", { class: "btn ghost small icon-only", type: "button", "aria-label": `Remove ${job.name}`, on: { click: async () => {
    if (!(await confirmDialog({ title: `Remove ${job.name}?`, message: "It runs no more. The backups it made stay.", confirm: "Remove", danger: true }))) return;
    try { await removeJob(job.name); toast(`${job.name} removed.`); reload(); } catch (error) { toast(error.message, { kind: "error" }); }
  } } }, icon("trash", "sm"));
  return h("tr", { dataset: { job: job.name } },
    h("td", { class: "primary-cell" }, h("div", { class: "cell-title" }, h("strong", {}, job.name),
      job.lastRun ? h("small", {}, "Last: ", STATUS[job.lastRun.status] ? STATUS[job.lastRun.status].label.toLowerCase() : job.lastRun.status, " ", timeEl(job.lastRun.startedAt)) : h("small", {}, "Not run yet"))),
    h("td", { "data-label": "When" }, whenWords(job)),
    h("td", { "data-label": "Where", class: "small" }, whereWords(job.destination), job.includeVectors ? null : h("div", { class: "muted small" }, "without the search index")),
    h("td", { "data-label": "Kept" }, `${job.retentionDays} day${job.retentionDays === 1 ? "" : "s"}`),
    h("td", { "data-label": "On" }, h("label", { class: "switch" }, enabled, h("span", { class: "small" }, job.enabled ? "on" : "paused"))),
    h("td", { class: "actions" }, edit, remove));
}

/** The form adding a job (``job`` null) or changing one; fires "saved" when it did. */
function jobForm(job, reload) {
  const name = h("input", { class: "input", value: job ? job.name : "", disabled: Boolean(job), placeholder: "e.g. nightly", autocapitalize: "none", spellcheck: "false", maxLength: 64 });
  const cron = h("input", { class: "input mono", value: job ? job.cron : "0 3 * * *", spellcheck: "false", autocomplete: "off" });
  const cronWords = h("span", { class: "hint", "aria-live": "polite" });
  const paintCron = () => { const words = scheduleWords(cron.value); cronWords.textContent = words ? `${words}.` : ""; };
  cron.addEventListener("input", paintCron);
  paintCron();
  const where = h("input", { class: "input", value: job ? job.destination : "", placeholder: "e.g. /mnt/backups or s3://bucket/autorag", spellcheck: "false", autocomplete: "off", autocapitalize: "none" });
  const kept = h("input", { class: "input", type: "number", min: 1, max: 36500, value: job ? job.retentionDays : 30, inputmode: "numeric" });
  const index = h("input", { type: "checkbox", checked: job ? job.includeVectors : true });
  const on = h("input", { type: "checkbox", checked: job ? job.enabled : true });
  const save = h("button", { class: "btn primary", type: "submit" }, job ? "Save" : h("span", {}, icon("plus", "sm"), " Add schedule"));
  const cronField = field("When", cron, { hint: "minute hour day month weekday, in the server's time: 0 3 * * * is every day at 03:00." });
  cronField.append(cronWords);
  const form = h("form", { class: job ? "stack" : "card", "aria-label": job ? `Change ${job.name}` : "Add a scheduled backup" },
    job ? null : h("header", {}, h("h3", {}, "Add a scheduled backup")),
    h("div", { class: "grid-form" }, job ? null : field("Name", name), cronField, field("Where", where, { hint: "A folder on this server, or s3://…, sftp://…, ftp://…, email:…, dropbox:…, gdrive:…" }),
      field("Keep backups for (days)", kept),
      h("label", { class: "check" }, index, h("span", {}, "Include the search index")),
      h("label", { class: "check" }, on, h("span", {}, "On"))),
    h("div", { class: "save-bar" }, save));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    for (const control of [name, cron, where, kept]) setFieldError(control, "");
    if (!job && !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(name.value)) { setFieldError(name, "Letters, digits, '.', '_' or '-' (up to 64)."); name.focus(); return; }
    if (!where.value.trim()) { setFieldError(where, "Say where the backups go."); where.focus(); return; }
    const days = Number(kept.value);
    if (!Number.isInteger(days) || days < 1) { setFieldError(kept, "A whole number of days, 1 or more."); kept.focus(); return; }
    const body = { cron: cron.value.trim(), destination: where.value.trim(), retentionDays: days, includeVectors: index.checked, enabled: on.checked };
    save.disabled = true;
    try {
      if (job) await updateJob(job.name, body);
      else await addJob({ name: name.value, ...body });
      toast(job ? `${job.name} saved.` : `${name.value} added.`);
      form.dispatchEvent(new Event("saved"));
      reload();
    } catch (error) {
      save.disabled = false;
      const target = /cron|schedule/i.test(error.message) ? cron : /name|exists|taken/i.test(error.message) && !job ? name : where;
      setFieldError(target, error.message.replace(/^cron: /, ""));
    }
  });
  return form;
}

// -- the encryption key -------------------------------------------------------------------------------
function keyCard() {
  if (!app.can("backup:restore")) return null;
  const go = h("button", { class: "btn", type: "button" }, icon("key", "sm"), "Re-encrypt secrets");
  const out = h("div", { "aria-live": "polite" });
  go.addEventListener("click", async () => {
    if (!(await confirmDialog({ title: "Re-encrypt stored secrets?", message: "The API keys of connected model servers and the originals of redacted text are encrypted again with the current key. Do this after changing the key.", confirm: "Re-encrypt" }))) return;
    go.disabled = true;
    try {
      const report = await rekey();
      const count = (m) => Object.values(m || {}).reduce((a, b) => a + b, 0);
      const failed = count(report.failed);
      clear(out, h("div", { class: ["notice", failed ? "warn" : "ok"] }, icon(failed ? "alert" : "check"), h("div", { class: "notice-body" },
        `${count(report.resealed)} secret${count(report.resealed) === 1 ? "" : "s"} re-encrypted.`, failed ? ` ${failed} could not be opened with any key and were left as they were.` : "")));
    } catch (error) { clear(out, errorNotice(error)); } finally { go.disabled = false; }
  });
  return h("section", { class: "card", "aria-labelledby": "key-title" },
    h("header", {}, h("h2", { id: "key-title" }, "Encryption key"), h("p", {}, "Backups and stored secrets are encrypted with this server's key. After changing it, re-encrypt the stored secrets; older backups still open with the previous key.")),
    h("div", { class: "btn-row" }, go), out);
}

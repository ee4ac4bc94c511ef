// The wiki: a workspace's archives, an archive's pages as a tree, a page with its
// Markdown rendered (wikilinks followable, missing pages offered for creation), the pages
// that link to it with the sentence around each link, the editor, the history with diffs
// and restore, the link graph, and search within an archive.
// Addresses: #/wiki · #/wiki/<archive> · #/wiki/<archive>/<page path>, with ?view=edit,
// history, graph, new, search (and ?h=<heading> to scroll to a heading).

import { api, ApiError } from "./api.js";
import {
  announce, confirmDialog, emptyState, errorNotice, field, fmtDate, h, icon, loading, modal, richSnippet,
  setFieldError, timeEl, toast,
} from "./dom.js";
import { app, navigate, setTitle } from "./state.js";
import { factValue } from "./words.js";
import {
  archiveUrl, archivesUrl, listOf, mayWrite, pagePart, pageUrl, templatesUrl, textOf, wikiHash,
} from "./wiki_api.js";
import { renderDiff } from "./wiki_diff.js";
import { drawGraph } from "./wiki_graph.js";
import { headingId, renderMarkdown, toPath } from "./wiki_markdown.js";

export async function render(container, { rest, query }) {
  if (!app.workspace) {
    container.append(h("div", { class: "page" }, h("div", { class: "page-inner" }, emptyState({ iconName: "book", title: "No workspace", body: "You are not a member of any workspace yet." }))));
    return { title: "Wiki" };
  }
  const view = new WikiView(container);
  await view.show(rest, query);
  return {
    title: view.title,
    update: ({ rest: next, query: q }) => view.show(next, q),
    cleanup: () => view.close(),
  };
}

class WikiView {
  constructor(container) {
    this.workspace = app.workspace;
    this.host = h("div", { class: "page wiki-page" });
    container.append(this.host);
    this.cache = new Map(); // archive name -> {archive, pages}
    this.editor = null;
    this.title = "Wiki";
    this.seq = 0;
  }

  close() {
    this.seq += 1;
    window.removeEventListener("beforeunload", this.guard);
  }

  // While the editor holds unsaved text, leaving the page asks first.
  guard = (event) => {
    if (this.editor && this.editor.dirty()) { event.preventDefault(); event.returnValue = ""; }
  };

  editing(editor) {
    this.editor = editor;
    this.editorHash = location.hash;
    window.addEventListener("beforeunload", this.guard);
  }

  async show(rest, query) {
    if (this.editor && this.editor.dirty()) {
      const editing = this.editorHash;
      if (!(await confirmDialog({ title: "Leave without saving?", message: "Your changes to the page will be lost.", confirm: "Leave", danger: true }))) {
        history.replaceState(null, "", editing); // stay: the editor and its text are untouched
        return;
      }
    }
    this.editor = null;
    const seq = ++this.seq;
    const [name, ...segments] = rest;
    const path = segments.join("/");
    const viewName = query.get("view") || "";
    this.host.replaceChildren(loading());
    try {
      let content;
      if (!name) content = await this.archivesPage();
      else {
        const ctx = await this.archive(name);
        if (seq !== this.seq) return;
        if (!path) {
          if (viewName === "new") content = await this.newPage(ctx, query);
          else if (viewName === "graph") content = await this.graphPage(ctx, null);
          else if (viewName === "search") content = await this.searchPage(ctx, query.get("q") || "");
          else if (viewName === "reviews") content = await (await synth()).reviewsPage(this, ctx);
          else if (viewName === "review") content = await (await synth()).runPage(this, ctx, query.get("run") || "", seq);
          else content = await this.archiveHome(ctx);
        } else if (viewName === "edit") content = await this.editPage(ctx, path);
        else if (viewName === "history") content = await this.historyPage(ctx, path);
        else if (viewName === "graph") content = await this.graphPage(ctx, path);
        else content = await this.pageView(ctx, path, query.get("h"));
      }
      if (seq !== this.seq) return;
      this.host.replaceChildren(content.el);
      this.title = content.title;
      setTitle(content.title);
      if (content.focus) content.focus();
      else {
        const heading = this.host.querySelector("h1");
        if (heading) { heading.setAttribute("tabindex", "-1"); heading.focus({ preventScroll: true }); }
      }
      if (content.after) content.after();
      else this.host.scrollTop = 0;
    } catch (error) {
      if (seq !== this.seq) return;
      const missing = error instanceof ApiError && error.status === 404;
      this.host.replaceChildren(h("div", { class: "page-inner" }, missing
        ? this.notFound(error, name, path)
        : errorNotice(error, () => this.show(rest, query))));
      this.title = "Wiki";
    }
  }

  notFound(error, name, path) {
    if (error.code === "page_not_found" && path && this.cache.get(name) && mayWrite(this.cache.get(name).archive)) {
      return emptyState({ iconName: "book", title: "This page is not written yet", body: `Nothing is at “${path}” in this archive.`,
        action: h("a", { class: "btn primary", href: wikiHash(name, null, { view: "new", path, title: "" }) }, icon("plus", "sm"), "Create this page") });
    }
    return emptyState({ iconName: "book", title: "Not found", body: error.message,
      action: h("a", { class: "btn", href: wikiHash(null) }, "All archives") });
  }

  // -- data ----------------------------------------------------------------------------------
  async archive(name, { fresh = false } = {}) {
    const known = this.cache.get(name);
    if (known && !fresh) return known;
    const [archive, listing] = await Promise.all([api(archiveUrl(name)), api(`${archiveUrl(name)}/pages`)]);
    const ctx = { name, archive, pages: listOf(listing, "pages") };
    this.cache.set(name, ctx);
    return ctx;
  }

  async refresh(ctx) {
    this.cache.delete(ctx.name);
    return this.archive(ctx.name);
  }

  // How a [[link]] is drawn: to its page when one answers to the name (by the server's
  // resolution when given, else by path or title here), else as a page to create.
  linker(ctx, resolved = new Map()) {
    const writable = mayWrite(ctx.archive);
    return ({ target, heading, label, nodes }) => {
      const words = nodes && nodes.length ? nodes : [label || (heading && !target ? heading : target) || ""];
      const key = String(target || "").trim().toLowerCase();
      let path = resolved.has(key) ? resolved.get(key) : undefined;
      if (path === undefined) {
        const asPath = toPath(target);
        const hit = ctx.pages.find((p) => p.path === asPath) || ctx.pages.find((p) => p.title.toLowerCase() === key);
        path = hit ? hit.path : null;
      }
      if (!target && heading) return h("a", { class: "wikilink", href: wikiHash(ctx.name, this.currentPath, { h: heading }) }, words);
      if (path) {
        const page = ctx.pages.find((p) => p.path === path);
        return h("a", { class: "wikilink", href: wikiHash(ctx.name, path, heading ? { h: heading } : null), title: page ? page.title : path }, words);
      }
      if (!writable) return h("span", { class: "wikilink dangling", title: `“${target}” is not written yet` }, words);
      const link = h("a", {
        class: "wikilink dangling", href: wikiHash(ctx.name, null, { view: "new", path: toPath(target), title: target }),
        title: `Create this page: ${target}`,
      }, words);
      link.setAttribute("aria-label", `${link.textContent} (not written yet: create it)`);
      return link;
    };
  }

  crumbs(ctx, path, last) {
    const parts = [h("a", { href: wikiHash(null) }, "Wiki")];
    if (ctx) parts.push(h("a", { href: wikiHash(ctx.name) }, ctx.archive.title || ctx.name));
    if (path) {
      const segs = path.split("/");
      segs.slice(0, -1).forEach((seg, i) => {
        const prefix = segs.slice(0, i + 1).join("/");
        const page = ctx.pages.find((p) => p.path === prefix);
        parts.push(page ? h("a", { href: wikiHash(ctx.name, prefix) }, page.title) : h("span", {}, seg));
      });
    }
    if (last) parts.push(h("span", { "aria-current": "page" }, last));
    return h("nav", { class: "crumbs small", "aria-label": "Breadcrumbs" }, h("ol", {}, parts.map((p) => h("li", {}, p))));
  }

  // The archive's side panel: search, new page, graph, and the pages as a tree.
  layout(ctx, main, { currentPath = null } = {}) {
    const searchInput = h("input", { class: "input", type: "search", placeholder: "Search this archive", "aria-label": "Search this archive", enterkeyhint: "search" });
    const searchForm = h("form", { role: "search", class: "wiki-search", on: { submit: (e) => { e.preventDefault(); const q = searchInput.value.trim(); if (q) navigate(wikiHash(ctx.name, null, { view: "search", q })); } } }, searchInput);
    const aside = h("aside", { class: "wiki-aside", "aria-label": "Pages" },
      searchForm,
      h("div", { class: "btn-row" },
        mayWrite(ctx.archive) ? h("a", { class: "btn small primary", href: wikiHash(ctx.name, null, { view: "new" }) }, icon("plus", "sm"), "New page") : null,
        h("a", { class: "btn small", href: wikiHash(ctx.name, null, { view: "graph" }) }, icon("peers", "sm"), "Graph")),
      h("details", { class: "wiki-tree-box", open: !window.matchMedia("(max-width: 760px)").matches },
        h("summary", {}, `Pages (${ctx.pages.length})`),
        this.tree(ctx, currentPath)));
    return h("div", { class: "wiki-layout" }, aside, h("div", { class: "wiki-main" }, main));
  }

  // The side panel's pages again, after pages were saved from elsewhere (a synthesis approval).
  repaintTree(ctx) {
    const box = this.host.querySelector(".wiki-tree-box");
    if (!box) return;
    box.querySelector("summary").textContent = `Pages (${ctx.pages.length})`;
    box.replaceChildren(box.querySelector("summary"), this.tree(ctx, null));
  }

  tree(ctx, currentPath) {
    if (!ctx.pages.length) return h("p", { class: "muted small" }, "No pages yet.");
    const root = { children: new Map(), page: null };
    for (const page of [...ctx.pages].sort((a, b) => a.path.localeCompare(b.path))) {
      let node = root;
      for (const seg of page.path.split("/")) {
        if (!node.children.has(seg)) node.children.set(seg, { children: new Map(), page: null, seg });
        node = node.children.get(seg);
      }
      node.page = page;
    }
    const link = (node) => (node.page
      ? h("a", { href: wikiHash(ctx.name, node.page.path), "aria-current": node.page.path === currentPath ? "page" : undefined }, node.page.title)
      : h("span", { class: "muted" }, node.seg));
    const few = ctx.pages.length <= 150;
    const build = (node, prefix) => h("ul", {}, [...node.children.values()].map((child) => {
      const here = prefix ? `${prefix}/${child.seg}` : child.seg;
      if (!child.children.size) return h("li", {}, link(child));
      const open = few || Boolean(currentPath && (currentPath === here || currentPath.startsWith(`${here}/`)));
      return h("li", {}, h("details", { open }, h("summary", {}, link(child)), build(child, here)));
    }));
    return h("nav", { class: "wiki-tree", "aria-label": "Pages of this archive" }, build(root, ""));
  }

  // -- the archives --------------------------------------------------------------------------
  async archivesPage() {
    const archives = listOf(await api(archivesUrl()), "archives");
    const canCreate = app.can("archive:write");
    const list = archives.length
      ? h("ul", { class: "archive-list" }, archives.map((a) => h("li", { class: "card archive-card" },
        h("h2", {}, h("a", { href: wikiHash(a.name) }, a.title || a.name)),
        a.description ? h("p", {}, a.description) : null,
        h("p", { class: "muted small" }, `${a.pageCount ?? 0} page${a.pageCount === 1 ? "" : "s"} · updated `, timeEl(a.updatedAt)))))
      : emptyState({ iconName: "book", title: "No archives yet",
        body: canCreate ? "An archive is a set of pages your team writes together, linked with [[wikilinks]]. The assistant can read them when it answers." : "An archive is a set of pages your team writes together. A manager can create the first one." });
    const el = h("div", { class: "page-inner" },
      h("div", { class: "page-head" }, h("h1", {}, "Wiki"), h("span", { class: "spacer" }),
        canCreate ? h("button", { class: "btn primary", type: "button", on: { click: () => this.createArchive() } }, icon("plus", "sm"), "New archive") : null,
        h("p", { class: "sub" }, "Archives of pages your team writes, linked to each other and searchable by the assistant.")),
      list);
    return { el, title: "Wiki" };
  }

  createArchive() {
    const titleInput = h("input", { class: "input", type: "text", required: true, autocomplete: "off" });
    const nameInput = h("input", { class: "input mono", type: "text", required: true, autocomplete: "off", spellcheck: "false" });
    const about = h("textarea", { class: "input", rows: 3 });
    let touched = false;
    titleInput.addEventListener("input", () => { if (!touched) nameInput.value = toPath(titleInput.value).replace(/[/.]/g, "-").slice(0, 63); });
    nameInput.addEventListener("input", () => { touched = true; setFieldError(nameInput, ""); });
    const create = h("button", { class: "btn primary", type: "submit", form: "new-archive" }, "Create archive");
    const cancel = h("button", { class: "btn", type: "button", on: { click: () => dlg.close() } }, "Cancel");
    const form = h("form", { id: "new-archive", class: "stack", novalidate: true },
      field("Title", titleInput),
      field("Short name", nameInput, { hint: "Used in addresses and commands: lowercase letters, digits, - and _." }),
      field("Description", about, { hint: "Optional: what goes in this archive." }));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      if (!titleInput.value.trim()) { setFieldError(titleInput, "Give the archive a title."); titleInput.focus(); return; }
      setFieldError(titleInput, "");
      create.disabled = true;
      try {
        const made = await api(archivesUrl(), { method: "POST", body: { name: nameInput.value.trim(), title: titleInput.value.trim(), description: about.value.trim() } });
        dlg.close();
        toast(`Archive “${made.title || made.name}” created.`, { kind: "ok" });
        navigate(wikiHash(made.name));
      } catch (error) {
        setFieldError(nameInput, error.code === "archive_exists" ? "An archive already has this name." : error.message);
        nameInput.focus();
      } finally { create.disabled = false; }
    });
    const dlg = modal({ title: "New archive", body: form, foot: [cancel, create] });
    titleInput.focus();
  }

  archiveSettings(ctx) {
    const a = ctx.archive;
    const titleInput = h("input", { class: "input", type: "text", value: a.title || "" });
    const about = h("textarea", { class: "input", rows: 3, value: a.description || "" });
    const writers = h("input", { class: "input", type: "text", value: ((a.config && a.config.writers) || []).join(", "), autocomplete: "off" });
    const direct = h("input", { type: "checkbox", checked: Boolean(a.config && a.config.allowAgentWrites) });
    const save = h("button", { class: "btn primary", type: "submit", form: "archive-settings" }, "Save");
    const cancel = h("button", { class: "btn", type: "button", on: { click: () => dlg.close() } }, "Cancel");
    const remove = h("button", { class: "btn danger", type: "button" }, icon("trash", "sm"), "Delete archive");
    const form = h("form", { id: "archive-settings", class: "stack", novalidate: true },
      field("Title", titleInput), field("Description", about),
      field("Members who may edit pages", writers, { hint: "User names, separated by commas. Managers and admins may always edit." }),
      h("label", { class: "check" }, direct, h("span", {}, "Let the assistant save its page edits without asking",
        h("span", { class: "hint" }, "Otherwise each edit it proposes waits for someone to apply it."))),
      h("div", { class: "btn-row" }, remove));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      save.disabled = true;
      try {
        const config = { allowAgentWrites: direct.checked, writers: writers.value.split(",").map((w) => w.trim()).filter(Boolean) };
        await api(archiveUrl(ctx.name), { method: "PATCH", body: { title: titleInput.value.trim(), description: about.value.trim(), config } });
        dlg.close();
        toast("Archive settings saved.", { kind: "ok" });
        await this.refresh(ctx);
        navigate(wikiHash(ctx.name), { replace: true });
      } catch (error) {
        toast(error.message, { kind: "error" });
      } finally { save.disabled = false; }
    });
    remove.addEventListener("click", async () => {
      const ok = await confirmDialog({ title: `Delete “${a.title || a.name}”?`, message: `All ${a.pageCount ?? ctx.pages.length} pages, their history and links are deleted. This cannot be undone.`, confirm: "Delete archive", danger: true });
      if (!ok) return;
      try {
        await api(archiveUrl(ctx.name), { method: "DELETE" });
        dlg.close();
        this.cache.delete(ctx.name);
        toast("Archive deleted.");
        navigate(wikiHash(null));
      } catch (error) { toast(error.message, { kind: "error" }); }
    });
    const dlg = modal({ title: "Archive settings", body: form, foot: [cancel, save] });
    titleInput.focus();
  }

  async archiveHome(ctx) {
    // Synthesis: its action and the runs waiting for review (for those who may start them).
    const synthesis = app.can("archive:write") ? await synth() : null;
    const reviews = synthesis ? await synthesis.reviewsCard(ctx) : null;
    const recent = [...ctx.pages].sort((a, b) => String(b.updatedAt).localeCompare(String(a.updatedAt))).slice(0, 8);
    const index = h("div", { class: "wiki-body" });
    if (ctx.pages.length) {
      try {
        const text = textOf(await api(`${archiveUrl(ctx.name)}/index`), "markdown", "body", "index")
          .replace(/^# [^\n]*\n+/, ""); // its title: the card's heading says it
        renderMarkdown(index, text, { wikilink: this.linker(ctx) });
      } catch (error) { index.replaceChildren(errorNotice(error)); }
    }
    const a = ctx.archive;
    const main = h("div", { class: "stack" },
      this.crumbs(ctx, null, null),
      h("div", { class: "page-head" }, h("h1", {}, a.title || a.name), h("span", { class: "spacer" }),
        synthesis ? synthesis.startButton(ctx) : null,
        app.can("archive:write") ? h("button", { class: "btn small", type: "button", on: { click: () => this.archiveSettings(ctx) } }, icon("settings", "sm"), "Settings") : null,
        a.description ? h("p", { class: "sub" }, a.description) : null),
      reviews,
      ctx.pages.length
        ? [h("section", { class: "card", "aria-labelledby": "recent-title" }, h("header", {}, h("h2", { id: "recent-title" }, "Recently edited")),
          h("ul", { class: "plain-list" }, recent.map((p) => h("li", {}, h("a", { href: wikiHash(ctx.name, p.path) }, p.title), " ",
            h("span", { class: "muted small" }, p.updatedBy ? `by ${p.updatedBy}, ` : "", timeEl(p.updatedAt)))))),
          h("section", { class: "card", "aria-labelledby": "index-title" }, h("header", {}, h("h2", { id: "index-title" }, "All pages")), index)]
        : emptyState({ iconName: "book", title: "No pages yet", body: mayWrite(a) ? "Write the first page; link others with [[Title]]." : "Nobody has written a page here yet.",
          action: mayWrite(a) ? h("a", { class: "btn primary", href: wikiHash(ctx.name, null, { view: "new" }) }, icon("plus", "sm"), "New page") : null }));
    return { el: this.layout(ctx, main), title: a.title || a.name };
  }

  // -- a page --------------------------------------------------------------------------------
  async pageView(ctx, path, heading) {
    const [page, links] = await Promise.all([
      api(pageUrl(ctx.name, path)),
      api(pagePart(ctx.name, path, "links")).catch(() => ({ outgoing: [], backlinks: [], dangling: [] })),
    ]);
    if (page.path !== path) {
      // An old address (renamed) or a title: the page lives at its path now.
      history.replaceState(null, "", wikiHash(ctx.name, page.path));
    }
    this.currentPath = page.path;
    const resolved = new Map();
    for (const link of links.outgoing || []) resolved.set(String(link.target).trim().toLowerCase(), link.targetPath || null);
    const body = h("article", { class: "wiki-body", "aria-label": page.title });
    renderMarkdown(body, page.body || "", { wikilink: this.linker(ctx, resolved), anchor: (text) => wikiHash(ctx.name, page.path, { h: text }) });
    const writable = mayWrite(ctx.archive);
    const facts = Object.entries(page.frontMatter || {});
    const head = h("div", { class: "page-head" },
      h("h1", {}, page.title), h("span", { class: "spacer" }),
      h("div", { class: "btn-row" },
        writable ? h("a", { class: "btn small primary", href: wikiHash(ctx.name, page.path, { view: "edit" }) }, icon("edit", "sm"), "Edit") : null,
        h("a", { class: "btn small", href: wikiHash(ctx.name, page.path, { view: "history" }) }, icon("history", "sm"), "History"),
        h("a", { class: "btn small", href: wikiHash(ctx.name, page.path, { view: "graph" }) }, icon("peers", "sm"), "Graph"),
        writable ? h("button", { class: "btn small", type: "button", on: { click: () => this.renamePage(ctx, page) } }, "Move or rename") : null,
        writable ? h("button", { class: "btn small danger icon-only", type: "button", "aria-label": "Delete page", title: "Delete page", on: { click: () => this.deletePage(ctx, page) } }, icon("trash", "sm")) : null),
      h("p", { class: "sub" }, `Version ${page.version} · edited `, timeEl(page.updatedAt), page.updatedBy ? ` by ${page.updatedBy}` : "", h("span", { class: "mono small path-note" }, ` · ${page.path}`)));
    const main = h("div", { class: "stack" },
      this.crumbs(ctx, page.path, page.title), head,
      facts.length ? h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, factValue(v))])) : null,
      h("div", { class: "wiki-columns" }, body, this.linksPanel(ctx, page, links)));
    return {
      el: this.layout(ctx, main, { currentPath: page.path }),
      title: page.title,
      after: () => {
        if (!heading) { this.host.scrollTop = 0; return; }
        const target = this.host.querySelector(`#${CSS.escape(headingId(heading))}`);
        if (target) target.scrollIntoView({ block: "start" });
      },
    };
  }

  linksPanel(ctx, page, links) {
    const backlinks = links.backlinks || [];
    const dangling = links.dangling || [];
    const titleOf = (path) => (ctx.pages.find((p) => p.path === path) || {}).title || path;
    const bySource = new Map();
    for (const link of backlinks) {
      if (!bySource.has(link.sourcePath)) bySource.set(link.sourcePath, []);
      bySource.get(link.sourcePath).push(link);
    }
    const writable = mayWrite(ctx.archive);
    const missing = [...new Map(dangling.map((l) => [String(l.target).toLowerCase(), l])).values()];
    return h("aside", { class: "wiki-links", "aria-label": "Links" },
      h("section", { class: "card backlinks", "aria-labelledby": "backlinks-title" },
        h("header", {}, h("h2", { id: "backlinks-title" }, `Linked from (${bySource.size})`)),
        bySource.size
          ? h("ul", { class: "plain-list" }, [...bySource.entries()].map(([source, items]) => h("li", {},
            h("a", { href: wikiHash(ctx.name, source) }, titleOf(source)),
            items.filter((l) => l.context).slice(0, 3).map((l) => h("blockquote", { class: "context small" }, contextWithLink(l))))))
          : h("p", { class: "muted small" }, "No page links here yet.")),
      missing.length ? h("section", { class: "card", "aria-labelledby": "missing-title" },
        h("header", {}, h("h2", { id: "missing-title" }, "Not written yet")),
        h("ul", { class: "plain-list" }, missing.map((l) => h("li", {},
          h("span", { class: "wikilink dangling" }, l.target), " ",
          writable ? h("a", { class: "btn small", href: wikiHash(ctx.name, null, { view: "new", path: toPath(l.target), title: l.target }) }, "Create this page") : null)))) : null);
  }

  renamePage(ctx, page) {
    const input = h("input", { class: "input mono", type: "text", value: page.path, spellcheck: "false", autocomplete: "off" });
    const ok = h("button", { class: "btn primary", type: "submit", form: "rename-page" }, "Move");
    const cancel = h("button", { class: "btn", type: "button", on: { click: () => dlg.close() } }, "Cancel");
    const form = h("form", { id: "rename-page", class: "stack", novalidate: true },
      field("New address", input, { hint: "Links to the old address and title keep working." }));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      ok.disabled = true;
      try {
        const moved = await api(pagePart(ctx.name, page.path, "rename"), { method: "POST", body: { newPath: input.value.trim(), baseVersion: page.version } });
        dlg.close();
        await this.refresh(ctx);
        toast("Page moved.", { kind: "ok" });
        navigate(wikiHash(ctx.name, moved.path));
      } catch (error) {
        setFieldError(input, error.code === "stale_version" ? "Someone saved this page since you opened it: reload it first." : error.message);
      } finally { ok.disabled = false; }
    });
    const dlg = modal({ title: `Move “${page.title}”`, body: form, foot: [cancel, ok] });
    input.focus();
  }

  async deletePage(ctx, page) {
    const ok = await confirmDialog({ title: `Delete “${page.title}”?`, message: "The page and its history are deleted. Links to it will offer to create it again.", confirm: "Delete page", danger: true });
    if (!ok) return;
    try {
      await api(pageUrl(ctx.name, page.path), { method: "DELETE" });
      await this.refresh(ctx);
      toast("Page deleted.");
      navigate(wikiHash(ctx.name));
    } catch (error) { toast(error.message, { kind: "error" }); }
  }

  // -- editing -------------------------------------------------------------------------------
  async templates() {
    try { return listOf(await api(templatesUrl()), "templates"); } catch { return []; }
  }

  async newPage(ctx, query) {
    const { pageEditor } = await import("./wiki_editor.js");
    const templates = await this.templates();
    const title = query.get("title") || "";
    const editor = pageEditor({
      archive: ctx.name, path: query.get("path") || "", title, pages: ctx.pages, templates,
      wikilink: this.linker(ctx),
      onSaved: async (page) => { this.editor = null; await this.refresh(ctx); toast("Page created.", { kind: "ok" }); navigate(wikiHash(ctx.name, page.path)); },
      onCancel: () => { this.editor = null; history.back(); },
    });
    this.editing(editor);
    const main = h("div", { class: "stack" }, this.crumbs(ctx, null, "New page"), h("div", { class: "page-head" }, h("h1", {}, "New page")), editor.el);
    return { el: this.layout(ctx, main), title: "New page", focus: editor.focus };
  }

  async editPage(ctx, path) {
    const { pageEditor } = await import("./wiki_editor.js");
    const page = await api(pageUrl(ctx.name, path));
    const editor = pageEditor({
      archive: ctx.name, page, pages: ctx.pages, wikilink: this.linker(ctx),
      onSaved: async (saved) => {
        this.editor = null;
        await this.refresh(ctx);
        toast(saved.version === page.version ? "Nothing changed." : `Saved as version ${saved.version}.`, { kind: "ok" });
        navigate(wikiHash(ctx.name, saved.path || page.path));
      },
      onCancel: () => { this.editor = null; navigate(wikiHash(ctx.name, page.path)); },
    });
    this.editing(editor);
    const main = h("div", { class: "stack" }, this.crumbs(ctx, page.path, "Edit"),
      h("div", { class: "page-head" }, h("h1", {}, `Edit “${page.title}”`), h("p", { class: "sub" }, `You are editing version ${page.version}.`)), editor.el);
    return { el: this.layout(ctx, main, { currentPath: page.path }), title: `Edit ${page.title}`, focus: editor.focus };
  }

  // -- history -------------------------------------------------------------------------------
  async historyPage(ctx, path) {
    const [page, listing] = await Promise.all([api(pageUrl(ctx.name, path)), api(pagePart(ctx.name, path, "history"))]);
    const versions = listOf(listing, "versions").sort((a, b) => b.version - a.version);
    const writable = mayWrite(ctx.archive);
    const diffHost = h("div", { class: "stack", "aria-live": "polite" });
    const pick = (name, value) => h("select", { class: "input", "aria-label": name }, versions.map((v) => h("option", { value: String(v.version), selected: v.version === value }, `Version ${v.version}`)));
    const fromSelect = pick("Compare from", versions[1] ? versions[1].version : versions[0]?.version);
    const toSelect = pick("Compare to", versions[0]?.version);
    const compare = async () => {
      const from = Number(fromSelect.value);
      const to = Number(toSelect.value);
      diffHost.replaceChildren(loading("Comparing…"));
      try {
        const diff = textOf(await api(pagePart(ctx.name, page.path, "diff"), { query: { from, to } }), "diff");
        diffHost.replaceChildren(h("h2", {}, `Changes from version ${from} to version ${to}`), renderDiff(diff, { empty: "These versions have the same text." }));
      } catch (error) { diffHost.replaceChildren(errorNotice(error)); }
    };
    const rows = versions.map((v) => h("tr", {},
      h("td", { class: "num" }, String(v.version)),
      h("td", {}, h("time", { datetime: v.savedAt }, fmtDate(v.savedAt))),
      h("td", {}, v.savedBy || "—"),
      h("td", {}, v.version === page.version ? h("span", { class: "badge ok" }, "Current") : null, v.note ? h("span", { class: "muted small" }, ` ${v.note}`) : null),
      h("td", { class: "actions" },
        h("button", { class: "btn small ghost", type: "button", on: { click: () => this.showVersion(ctx, page, v) } }, icon("eye", "sm"), "View"),
        writable && v.version !== page.version ? h("button", { class: "btn small", type: "button", on: { click: () => this.restore(ctx, page, v) } }, icon("undo", "sm"), `Restore version ${v.version}`) : null)));
    const main = h("div", { class: "stack" },
      this.crumbs(ctx, page.path, "History"),
      h("div", { class: "page-head" }, h("h1", {}, `History of “${page.title}”`), h("span", { class: "spacer" }),
        h("a", { class: "btn small", href: wikiHash(ctx.name, page.path) }, "Back to the page"),
        h("p", { class: "sub" }, `${versions.length} version${versions.length === 1 ? "" : "s"}, newest first. Restoring saves an old text as a new version: nothing is lost.`)),
      h("div", { class: "table-wrap" }, h("table", { class: "data history-table" },
        h("thead", {}, h("tr", {}, ["Version", "Saved", "By", "", ""].map((c, i) => h("th", { scope: "col", class: i === 0 ? "num" : undefined }, c)))),
        h("tbody", {}, rows))),
      versions.length > 1 ? h("section", { class: "card", "aria-label": "Compare versions" },
        h("div", { class: "row compare-row" }, field("From", fromSelect), field("To", toSelect),
          h("button", { class: "btn", type: "button", on: { click: compare } }, "Compare")), diffHost) : null);
    return { el: this.layout(ctx, main, { currentPath: page.path }), title: `History of ${page.title}`, after: versions.length > 1 ? compare : null };
  }

  async showVersion(ctx, page, v) {
    const body = h("div", { class: "wiki-body" });
    let full = v;
    if (typeof v.body !== "string") full = await api(pagePart(ctx.name, page.path, `versions/${v.version}`));
    renderMarkdown(body, full.body || "", { wikilink: this.linker(ctx) });
    const close = h("button", { class: "btn", type: "button", on: { click: () => dlg.close() } }, "Close");
    const restore = mayWrite(ctx.archive) && v.version !== page.version
      ? h("button", { class: "btn primary", type: "button", on: { click: () => { dlg.close(); this.restore(ctx, page, v); } } }, `Restore version ${v.version}`) : null;
    const dlg = modal({ title: `“${full.title}”, version ${v.version}`, className: "wide",
      body: h("div", { class: "stack" }, h("p", { class: "muted small" }, `Saved ${fmtDate(full.savedAt)}${full.savedBy ? ` by ${full.savedBy}` : ""}`), body),
      foot: [close, restore] });
    close.focus();
  }

  async restore(ctx, page, v) {
    const ok = await confirmDialog({ title: `Restore version ${v.version}?`, message: `The page gets the text of version ${v.version} as a new version ${page.version + 1}. The current text stays in the history.`, confirm: "Restore" });
    if (!ok) return;
    try {
      const restored = await api(pagePart(ctx.name, page.path, "restore"), { method: "POST", body: { version: v.version, baseVersion: page.version } });
      await this.refresh(ctx);
      toast(`Version ${v.version} restored as version ${restored.version}.`, { kind: "ok" });
      navigate(wikiHash(ctx.name, restored.path || page.path));
    } catch (error) {
      toast(error.code === "stale_version" ? "Someone saved this page since you opened its history. Look again before restoring." : error.message, { kind: "error" });
    }
  }

  // -- graph and search ----------------------------------------------------------------------
  async graphPage(ctx, path) {
    const depthSelect = h("select", { class: "input", "aria-label": "Depth" }, [1, 2, 3].map((d) => h("option", { value: String(d), selected: d === 2 }, d === 1 ? "Direct links" : `${d} links away`)));
    const host = h("div", {});
    let page = null;
    if (path) page = await api(pageUrl(ctx.name, path));
    const href = (node) => (node.dangling
      ? wikiHash(ctx.name, null, { view: "new", path: toPath(node.title), title: node.title })
      : wikiHash(ctx.name, node.path));
    const paint = async () => {
      host.replaceChildren(loading("Drawing the graph…"));
      try {
        const graph = path
          ? await api(pagePart(ctx.name, page.path, "graph"), { query: { depth: depthSelect.value } })
          : await api(`${archiveUrl(ctx.name)}/graph`);
        host.replaceChildren(drawGraph(graph, { href, current: page ? `page:${page.id}` : null, label: path ? `Pages linked with ${page.title}` : `Pages of ${ctx.archive.title || ctx.name} and their links` }));
      } catch (error) { host.replaceChildren(errorNotice(error, paint)); }
    };
    depthSelect.addEventListener("change", paint);
    const titleText = path ? `Graph around “${page.title}”` : "Graph";
    const main = h("div", { class: "stack" },
      this.crumbs(ctx, path ? page.path : null, "Graph"),
      h("div", { class: "page-head" }, h("h1", {}, titleText), h("span", { class: "spacer" }),
        path ? h("a", { class: "btn small", href: wikiHash(ctx.name, null, { view: "graph" }) }, "Whole archive") : null,
        path ? field("Show pages", depthSelect, { className: "inline-field" }) : null,
        h("p", { class: "sub" }, "Click a page to open it. Dashed circles are pages linked to but not written yet.")),
      host);
    await paint();
    return { el: this.layout(ctx, main, { currentPath: path ? page.path : null }), title: path ? `Graph of ${page.title}` : "Graph" };
  }

  async searchPage(ctx, q) {
    const hits = q ? listOf(await api(`${archiveUrl(ctx.name)}/search`, { query: { q, k: 20 } }), "hits") : [];
    const words = q.split(/\s+/).filter(Boolean);
    const main = h("div", { class: "stack" },
      this.crumbs(ctx, null, "Search"),
      h("div", { class: "page-head" }, h("h1", {}, `Search: “${q}”`),
        h("p", { class: "sub" }, hits.length ? `${hits.length} passage${hits.length === 1 ? "" : "s"} found.` : "No page matches. Try other words.")),
      h("ol", { class: "plain-list results" }, hits.map((hit) => h("li", { class: "card" },
        h("a", { href: wikiHash(ctx.name, hit.path) }, h("strong", {}, hit.title)),
        h("span", { class: "muted small mono" }, ` ${hit.path}`),
        h("p", { class: "snippet small" }, richSnippet(String(hit.text || "").slice(0, 400), words))))));
    announce(hits.length ? `${hits.length} results` : "No results");
    return { el: this.layout(ctx, main), title: `Search ${ctx.archive.title || ctx.name}` };
  }
}

// Synthesis's pages and actions (synth.js), loaded when first needed.
const synth = () => import("./synth.js");

// The sentence around a link, the link's own words marked.
function contextWithLink(link) {
  const text = String(link.context || "");
  const written = link.label || link.target;
  const raw = text.indexOf(`[[${link.target}`);
  if (raw !== -1) {
    const end = text.indexOf("]]", raw);
    if (end !== -1) return [text.slice(0, raw), h("mark", {}, written), text.slice(end + 2)];
  }
  const at = written ? text.toLowerCase().indexOf(String(written).toLowerCase()) : -1;
  if (at === -1) return [text];
  return [text.slice(0, at), h("mark", {}, text.slice(at, at + written.length)), text.slice(at + written.length)];
}

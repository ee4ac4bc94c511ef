// A page edit the assistant proposed in chat (the "wiki_edit" event): which page, a new
// one or a change, the changes as a diff, and Apply (saves it, carrying the version the
// edit was made against, so a page changed meanwhile is never overwritten) or Dismiss.
// An edit the assistant already saved (the archive allows it) shows as done.

import { ApiError } from "./api.js";
import { h, icon } from "./dom.js";
import { savePage, wikiHash } from "./wiki_api.js";
import { renderDiff } from "./wiki_diff.js";

export function wikiEditCard(edit) {
  const archive = String(edit.archive || "");
  const path = String(edit.path || "");
  const creating = edit.action === "create";
  const link = (text) => h("a", { href: wikiHash(archive, path) }, text);
  const status = h("p", { class: "small", role: "status" });
  const actions = h("div", { class: "btn-row" });
  const card = h("section", { class: "card wiki-edit-card", "aria-label": creating ? "Proposed new wiki page" : "Proposed wiki page edit" },
    h("header", {}, icon("edit", "sm"),
      h("h3", { class: "spacer" }, creating ? "New page proposed" : "Page edit proposed"),
      h("span", { class: "badge info" }, creating ? "New page" : "Change")),
    h("p", { class: "small" }, h("strong", {}, edit.title || path), " ", h("span", { class: "muted mono" }, `${archive} / ${path}`)),
    renderDiff(edit.diff, { empty: "The page would stay the same." }),
    status, actions);
  if (edit.applied) {
    status.append(icon("check", "sm"), " Saved to the wiki. ", link("Open the page"));
    return card;
  }
  const apply = h("button", { class: "btn primary small", type: "button" }, icon("check", "sm"), "Apply");
  const dismiss = h("button", { class: "btn small", type: "button" }, "Dismiss");
  apply.addEventListener("click", async () => {
    apply.disabled = true;
    dismiss.disabled = true;
    status.replaceChildren("Saving…");
    try {
      await savePage(archive, path, { title: edit.title, body: edit.body, baseVersion: edit.baseVersion ?? null });
      actions.replaceChildren();
      status.replaceChildren(icon("check", "sm"), " Applied. ", link("Open the page"));
    } catch (error) {
      apply.disabled = false;
      dismiss.disabled = false;
      const changed = error instanceof ApiError && (error.code === "stale_version" || error.code === "page_exists");
      status.replaceChildren(h("span", { class: "notice warn" }, icon("alert", "sm"),
        changed ? h("span", {}, "The page changed since this edit was proposed, so it was not applied. ", link("Open the page"), " to see it, or ask again.")
          : h("span", {}, `Not applied: ${error.message}`)));
      if (changed) apply.remove();
    }
  });
  dismiss.addEventListener("click", () => {
    actions.replaceChildren();
    status.replaceChildren(h("span", { class: "muted" }, "Dismissed: the page was not changed."));
  });
  actions.append(apply, dismiss);
  return card;
}

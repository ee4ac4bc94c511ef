// P2P: peer queries waiting for approval, trusted peers with the profiles they shared,
// the workspace's source policy with an "explain this source" tester, and asking a peer.

import { api, ws } from "./api.js";
import { announce, clear, confirmDialog, emptyState, errorNotice, field, h, icon, inlineField, loading, richSnippet, timeEl, toast } from "./dom.js";
import { factValue } from "./words.js";
import { app } from "./state.js";

const LEVELS = [["share", "share — trusted peers may get it"], ["ask", "ask — each peer query waits for approval"], ["private", "private — never leaves this machine"]];
const POLL_MS = 5000;

function levelBadge(level) { return h("span", { class: ["badge level", level] }, level); }

export async function render(container) {
  const admin = app.can("p2p:admin");
  const base = ws(app.workspace);
  const status = h("div", { "aria-live": "polite" });
  const requests = h("section", { class: "card", "aria-labelledby": "requests-title" });
  const peers = h("section", { class: "card", "aria-labelledby": "peers-title" });
  const policy = h("section", { class: "card", "aria-labelledby": "policy-title" });
  const explain = h("section", { class: "card", "aria-labelledby": "explain-title" });
  const ask = h("section", { class: "card", "aria-labelledby": "ask-title" });
  container.append(h("div", { class: "page" }, h("div", { class: "page-inner" },
    h("div", { class: "page-head" }, h("h1", {}, "P2P"), h("p", { class: "sub" }, "Trusted peers ask this instance over SimpleX; the source policy decides what may leave.")),
    status,
    admin ? requests : null,
    h("div", { class: "cards-2" }, h("div", { class: "stack" }, policy, explain), h("div", { class: "stack" }, admin ? peers : null, admin ? ask : null)))));

  let running = false;
  let timer = null;
  let alive = true;

  async function loadStatus() {
    if (!admin) return;
    try {
      running = (await api("/api/p2p/status")).running;
      clear(status, running
        ? h("div", { class: "notice ok" }, icon("check"), h("div", { class: "notice-body" }, h("strong", {}, "P2P is running. "), "Peer queries are answered as the policy allows."))
        : h("div", { class: "notice" }, icon("info"), h("div", { class: "notice-body" }, h("strong", {}, "P2P is not running. "), "Set ", h("code", {}, "[p2p] enabled = true"), " in autorag.toml and install simplex-chat to serve peers. Requests already waiting can still be decided here.")));
    } catch (error) { clear(status, errorNotice(error)); }
  }

  // -- pending approvals --
  async function loadRequests(quiet = false) {
    if (!admin) return;
    if (!quiet) clear(requests, header("requests-title", "Waiting for your approval"), loading());
    let list;
    try { list = await api("/api/p2p/requests"); } catch (error) {
      clear(requests, header("requests-title", "Waiting for your approval"), errorNotice(error, () => loadRequests()));
      return;
    }
    const pending = list.filter((r) => r.status === "pending").length;
    clear(requests, header("requests-title", "Waiting for your approval", pending ? h("span", { class: "badge warn" }, `${pending} pending`) : null,
      h("button", { class: "btn ghost small", type: "button", on: { click: () => loadRequests() } }, icon("refresh", "sm"), "Refresh"),
      h("p", {}, "A peer asked something whose results include sources at level “ask”. Approve to send them, deny to keep them here.")),
    list.length ? h("ul", { class: "requests", "aria-label": "Peer requests" }, list.map(requestItem)) : emptyState({ iconName: "check", title: "Nothing waiting", body: "Peer queries that need your approval appear here." }));
  }

  function requestItem(r) {
    const decide = async (decision, button) => {
      if (decision === "deny" && !(await confirmDialog({ title: "Deny this request?", message: `${r.peer} will be told the sources were withheld.`, confirm: "Deny", danger: true }))) return;
      button.disabled = true;
      try {
        await api(`/api/p2p/requests/${encodeURIComponent(r.id)}/${decision}`, { method: "POST" });
        toast(decision === "approve" ? `Approved: ${r.peer} gets the answer.` : `Denied: nothing was sent to ${r.peer}.`);
        announce(decision === "approve" ? "Request approved" : "Request denied");
        await loadRequests(true);
        const first = requests.querySelector(".request.pending button");
        if (first) first.focus();
      } catch (error) {
        button.disabled = false;
        toast(error.message, { kind: "error" });
        loadRequests(true);
      }
    };
    const approve = h("button", { class: "btn primary", type: "button", "aria-label": `Approve request from ${r.peer}` }, icon("check", "sm"), "Approve");
    const deny = h("button", { class: "btn danger", type: "button", "aria-label": `Deny request from ${r.peer}` }, icon("x", "sm"), "Deny");
    approve.addEventListener("click", () => decide("approve", approve));
    deny.addEventListener("click", () => decide("deny", deny));
    const badge = { pending: "warn", approved: "ok", denied: "danger", expired: "" }[r.status];
    return h("li", { class: ["request", r.status], dataset: { id: r.id, status: r.status } },
      h("div", { class: "row" }, h("span", { class: "badge info" }, r.peer), h("span", { class: ["badge", badge] }, r.status),
        h("span", { class: "spacer" }),
        h("span", { class: "muted small" }, "asked ", timeEl(r.createdAt), r.status === "pending" ? [" · expires ", timeEl(r.expiresAt)] : null)),
      h("div", { class: "query" }, `“${r.query}”`),
      r.sources.length ? h("div", {}, h("div", { class: "small muted" }, `${r.sources.length} source${r.sources.length === 1 ? "" : "s"} would leave:`),
        h("ul", { class: "srcs" }, r.sources.map((s) => h("li", {}, h("strong", {}, s.title || s.source), s.page ? ` · page ${s.page}` : "", h("div", { class: "snippet muted" }, richSnippet(s.snippet || "")), h("div", { class: "mono small muted" }, s.source))))) : null,
      r.status === "pending" ? h("div", { class: "btn-row" }, approve, deny) : null);
  }

  // -- trusted peers --
  async function loadPeers() {
    if (!admin) return;
    clear(peers, header("peers-title", "Trusted peers"), loading());
    try {
      const list = await api("/api/p2p/peers");
      clear(peers, header("peers-title", "Trusted peers", h("p", {}, "Add one with “autorag p2p peers add NAME CONTACT_ID”. Peers not listed here are never answered.")),
        list.length ? h("div", { class: "peers" }, list.map((p) => h("article", { class: "peer", "aria-label": `Peer ${p.name}` },
          h("h3", {}, icon("peers", "sm"), p.name, h("span", { class: "badge" }, `contact ${p.contactId}`)),
          p.note ? h("p", { class: "muted small" }, p.note) : null,
          profileFacts(p.profile),
          h("div", { class: "hint" }, p.profileSyncedAt ? ["Profile synced ", timeEl(p.profileSyncedAt)] : "Profile not shared yet.")))) : emptyState({ iconName: "peers", title: "No trusted peers", body: "Trust a SimpleX contact from the command line to let it ask this instance." }));
    } catch (error) { clear(peers, header("peers-title", "Trusted peers"), errorNotice(error, loadPeers)); }
  }

  const PROFILE_LABELS = { displayName: "Name", fullName: "Full name", shortDescr: "About", description: "Description" };
  function profileFacts(profile) {
    const entries = Object.entries(profile || {}).filter(([k, v]) => k !== "image" && v !== null && v !== "" && !(Array.isArray(v) && !v.length));
    const image = profile && typeof profile.image === "string" && /^data:image\/(png|jpe?g|gif|webp);base64,/.test(profile.image)
      ? h("img", { class: "peer-avatar", src: profile.image, alt: "" }) : null;
    if (!entries.length && !image) return h("p", { class: "muted small" }, "No shared profile yet.");
    return h("div", { class: "row peer-profile" }, image,
      h("dl", { class: "facts spacer" }, entries.map(([k, v]) => [h("dt", {}, PROFILE_LABELS[k] || k), h("dd", {}, factValue(v))])));
  }

  // -- policy --
  async function loadPolicy() {
    clear(policy, header("policy-title", `Source policy · ${app.workspace}`), loading());
    const canWrite = app.can("policy:write");
    let rules;
    try { rules = (await api(`${base}/policy`)).rules; } catch (error) {
      clear(policy, header("policy-title", `Source policy · ${app.workspace}`), errorNotice(error, loadPolicy));
      return;
    }
    const glob = h("input", { class: "input mono", placeholder: "/policies/public/**", spellcheck: "false" });
    const level = h("select", { class: "input" }, LEVELS.map(([v, l]) => h("option", { value: v }, l)));
    const form = h("form", { class: "stack" },
      h("div", { class: "grid-form" }, field("Glob", glob, { hint: "* within a segment, ** across segments." }), field("Level", level)),
      h("div", { class: "save-bar" }, h("button", { class: "btn primary", type: "submit" }, "Set rule")));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      if (!glob.value.trim()) { glob.focus(); return; }
      try {
        await api(`${base}/policy`, { method: "PUT", body: { glob: glob.value.trim(), level: level.value } });
        toast("Rule saved.");
        loadPolicy();
      } catch (error) { toast(error.message, { kind: "error" }); }
    });
    clear(policy, header("policy-title", `Source policy · ${app.workspace}`, h("p", {}, "Sources are private unless a rule says otherwise; the most specific rule wins.")),
      rules.length ? h("div", { class: "table-wrap responsive" }, h("table", { class: "data", "aria-label": "Policy rules" },
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Glob"), h("th", { scope: "col" }, "Level"), h("th", { scope: "col" }, "Changed"), h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions")))),
        h("tbody", {}, rules.map((r) => h("tr", {},
          h("td", { class: "primary-cell mono" }, r.glob),
          h("td", { "data-label": "Level" }, levelBadge(r.level)),
          h("td", { "data-label": "Changed" }, timeEl(r.updatedAt)),
          h("td", { class: "actions" }, canWrite ? h("button", { class: "btn ghost small icon-only", type: "button", "aria-label": `Remove rule ${r.glob}`, on: { click: async () => {
            try { await api(`${base}/policy`, { method: "DELETE", query: { glob: r.glob } }); toast("Rule removed."); loadPolicy(); } catch (error) { toast(error.message, { kind: "error" }); }
          } } }, icon("trash", "sm")) : null)))))) : emptyState({ iconName: "shield", title: "No rules", body: "Every source is private: nothing leaves this machine." }),
      canWrite ? form : h("p", { class: "hint" }, "Changing rules needs a manager or admin signed in with a password."));
  }

  // -- explain --
  function buildExplain() {
    const source = h("input", { class: "input mono", placeholder: "/home/me/Documents/policies/public/refund.md", spellcheck: "false" });
    const out = h("div", { class: "explain-out", "aria-live": "polite" });
    const form = h("form", { class: "stack" },
      inlineField("Source", source, h("button", { class: "btn", type: "submit" }, "Explain"), { hint: "A real path, a virtual id (/docs/a.md) or a datasource id." }));
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      if (!source.value.trim()) { source.focus(); return; }
      try {
        const x = await api(`${base}/policy/explain`, { method: "POST", body: { source: source.value.trim() } });
        clear(out,
          h("div", { class: "row" }, h("span", {}, "Level:"), levelBadge(x.level), h("span", { class: "muted small" }, { rule: "decided by a rule", default: "no rule matches: private by default", invalid: "not a valid source id: private" }[x.decidedBy] || x.decidedBy)),
          h("dl", { class: "facts" },
            h("dt", {}, "Canonical id"), h("dd", { class: "mono" }, x.canonical || "—"),
            x.invalidReason ? [h("dt", {}, "Why invalid"), h("dd", {}, x.invalidReason)] : null,
            h("dt", {}, "Matching rules"), h("dd", {}, x.matches.length ? h("ol", { class: "srcs" }, x.matches.map((m, i) => h("li", {}, h("span", { class: "mono" }, m.glob), " ", levelBadge(m.level), i === 0 ? h("span", { class: "badge ok" }, "wins") : null))) : "none")));
      } catch (error) { clear(out, errorNotice(error)); }
    });
    clear(explain, header("explain-title", "Explain this source", h("p", {}, "How a source resolves: its canonical id, every matching rule, and the level that wins.")), form, out);
  }

  // -- ask a peer --
  function buildAsk() {
    if (!admin) return;
    const peer = h("input", { class: "input", placeholder: "bob" });
    const query = h("input", { class: "input", placeholder: "What is the refund window?" });
    const out = h("div", { class: "stack", "aria-live": "polite" });
    const button = h("button", { class: "btn", type: "submit" }, "Ask");
    const form = h("form", { class: "stack" }, h("div", { class: "grid-form" }, field("Peer", peer), field("Question", query)), h("div", { class: "save-bar" }, button), out);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      if (!peer.value.trim() || !query.value.trim()) return;
      button.disabled = true;
      clear(out, loading("Waiting for the peer…"));
      try {
        const reply = await api("/api/p2p/ask", { method: "POST", body: { peer: peer.value.trim(), query: query.value.trim() } });
        clear(out, h("pre", { class: "preview" }, JSON.stringify(reply, null, 2)));
      } catch (error) { clear(out, errorNotice(error)); } finally { button.disabled = false; }
    });
    clear(ask, header("ask-title", "Ask a peer", h("p", {}, running ? "The answer comes from the peer's shareable sources only." : "Needs P2P running.")), form);
    button.disabled = !running;
  }

  function header(id, title, ...extra) {
    return h("header", {}, h("h2", { id, class: "spacer" }, title), ...extra);
  }

  await Promise.all([loadStatus(), loadRequests(), loadPolicy(), loadPeers()]);
  buildExplain();
  buildAsk();
  const poll = () => {
    timer = setTimeout(async () => {
      if (!alive) return;
      if (!document.hidden && !requests.contains(document.activeElement)) await loadRequests(true);
      poll();
    }, POLL_MS);
  };
  if (admin) poll();
  return { title: "P2P", cleanup: () => { alive = false; clearTimeout(timer); } };
}


// First-run setup (the one-time link `autorag serve` prints) and login.

import { api, ApiError, saveSession } from "./api.js";
import { clear, field, h, icon, setFieldError } from "./dom.js";
import { themeToggle } from "./theme.js";

const USERNAME = "[a-z0-9_.\\-]{2,64}";

function card(...children) {
  return h("main", { class: "auth-page" },
    h("div", { class: "auth-card" },
      h("div", { class: "brand" }, h("img", { src: "/ui/favicon.svg", alt: "" }), "AutoRAG"),
      ...children,
      h("div", { class: "auth-foot" }, h("a", { href: "/docs" }, "API documentation"), themeToggle())));
}

function notice(kind, text) {
  return h("div", { class: ["notice", kind], role: kind === "error" ? "alert" : "status" },
    icon(kind === "error" ? "alert" : kind === "ok" ? "check" : "info"), h("div", { class: "notice-body" }, text));
}

async function login(username, password) {
  const token = await api("/api/auth/login", { method: "POST", body: { username, password }, auth: false });
  saveSession(token.access_token, token.expires_in, username);
}

export function renderLogin(root, { onSignedIn, message } = {}) {
  document.title = "Sign in · AutoRAG";
  root.classList.remove("app-loading");
  root.removeAttribute("aria-busy");
  const username = h("input", { class: "input", name: "username", autocomplete: "username", required: true, autocapitalize: "none", spellcheck: "false" });
  const password = h("input", { class: "input", name: "password", type: "password", autocomplete: "current-password", required: true });
  const out = h("div", { class: "live", "aria-live": "polite" }, message ? notice(message.kind || "info", message.text) : null);
  const submit = h("button", { class: "btn primary", type: "submit" }, "Sign in");
  const form = h("form", { class: "stack", "aria-labelledby": "login-title", novalidate: true },
    field("Username", username), field("Password", password), submit);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    setFieldError(username, username.value.trim() ? "" : "Enter your username.");
    setFieldError(password, password.value ? "" : "Enter your password.");
    if (!username.value.trim()) return username.focus();
    if (!password.value) return password.focus();
    submit.disabled = true;
    submit.replaceChildren(h("span", { class: "spinner" }), "Signing in…");
    try {
      await login(username.value.trim(), password.value);
      onSignedIn();
    } catch (error) {
      const text = error instanceof ApiError && error.status === 401
        ? "That username and password do not match."
        : error.message;
      clear(out, notice("error", text));
      password.select();
      password.focus();
    } finally {
      submit.disabled = false;
      submit.replaceChildren("Sign in");
    }
  });
  clear(root, card(
    h("h1", { id: "login-title", tabindex: "-1" }, "Sign in"),
    out,
    form,
    h("p", { class: "hint" }, "First run? ", h("code", {}, "autorag serve"), " printed a one-time setup link: open it to create the first admin.")));
  username.focus();
}

export function renderSetup(root, { onSignedIn }) {
  // The token is in the fragment, which browsers never send; take it out of the address
  // bar (and the history) at once.
  const params = new URLSearchParams(location.hash.slice(1));
  const linkToken = params.get("token") || "";
  history.replaceState(null, "", location.pathname);
  document.title = "Create the first admin · AutoRAG";
  root.classList.remove("app-loading");
  root.removeAttribute("aria-busy");

  const token = h("input", { class: "input mono", name: "token", autocomplete: "off", spellcheck: "false", required: true, value: linkToken });
  const username = h("input", { class: "input", name: "username", autocomplete: "username", required: true, pattern: USERNAME, autocapitalize: "none", spellcheck: "false", value: "admin" });
  const password = h("input", { class: "input", name: "password", type: "password", autocomplete: "new-password", required: true, minLength: 10 });
  const again = h("input", { class: "input", name: "password2", type: "password", autocomplete: "new-password", required: true });
  const out = h("div", { class: "live", "aria-live": "polite" });
  const submit = h("button", { class: "btn primary", type: "submit" }, "Create admin and sign in");
  const tokenField = field("Setup token", token, { hint: "From the link `autorag serve` printed." });
  if (linkToken) tokenField.hidden = true;
  const form = h("form", { class: "stack", novalidate: true, "aria-labelledby": "setup-title" },
    tokenField,
    field("Username", username, { hint: "Lowercase letters, digits, '.', '_' or '-'." }),
    field("Password", password, { hint: "At least 10 characters." }),
    field("Repeat the password", again),
    submit);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const problems = [
      [token, token.value.trim() ? "" : "Paste the token from the setup link."],
      [username, new RegExp(`^${USERNAME}$`).test(username.value.trim()) ? "" : "2 to 64 lowercase letters, digits, '.', '_' or '-'."],
      [password, password.value.length >= 10 ? "" : "Use at least 10 characters."],
      [again, again.value === password.value ? "" : "The passwords differ."],
    ];
    for (const [control, text] of problems) setFieldError(control, text);
    const bad = problems.find(([, text]) => text);
    if (bad) {
      if (bad[0] === token) tokenField.hidden = false;
      bad[0].focus();
      return;
    }
    submit.disabled = true;
    submit.replaceChildren(h("span", { class: "spinner" }), "Creating…");
    try {
      await api("/api/setup", { method: "POST", auth: false, body: { token: token.value.trim(), username: username.value.trim(), password: password.value } });
      await login(username.value.trim(), password.value);
      clear(out, notice("ok", "Admin created."));
      const step = h("div");
      form.replaceWith(step);
      await import("./connections.js").then((c) => c.firstRunModelStep(step)).catch(() => {});
      clear(out, notice("ok", "Opening AutoRAG…"));
      onSignedIn();
    } catch (error) {
      let text = error.message;
      if (error.status === 403) {
        text = "This setup token is not valid (it is printed anew each time the server starts with no users).";
        tokenField.hidden = false;
      }
      clear(out, notice("error", text));
      if (error.status === 409) out.firstChild.append(h("a", { href: "/#/login" }, " Sign in instead."));
      submit.disabled = false;
      submit.replaceChildren("Create admin and sign in");
    }
  });
  clear(root, card(
    h("h1", { id: "setup-title", tabindex: "-1" }, "Create the first admin"),
    h("p", { class: "muted" }, "No one has an account yet. The admin you create here manages users, workspaces and data-loss prevention."),
    linkToken ? null : notice("warn", "This page needs the one-time token from the link `autorag serve` printed. Open that link, or paste its token below."),
    out,
    form));
  (linkToken ? username : token).focus();
  username.select();
}

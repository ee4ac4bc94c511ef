// The colour theme: system, light or dark, kept in localStorage.

import { announce, h, icon } from "./dom.js";

const THEME_KEY = "autorag.theme";
const THEMES = ["system", "light", "dark"];
export function theme() {
  const saved = localStorage.getItem(THEME_KEY);
  return THEMES.includes(saved) ? saved : "system";
}
export function setTheme(value) {
  if (value === "system") {
    localStorage.removeItem(THEME_KEY);
    delete document.documentElement.dataset.theme;
  } else {
    localStorage.setItem(THEME_KEY, value);
    document.documentElement.dataset.theme = value;
  }
  for (const button of document.querySelectorAll(".theme-toggle")) paintThemeToggle(button);
  announce(`Theme: ${value}`);
}
function paintThemeToggle(button) {
  const current = theme();
  const next = THEMES[(THEMES.indexOf(current) + 1) % THEMES.length];
  const name = { system: "monitor", light: "sun", dark: "moon" }[current];
  const label = button.querySelector(".label");
  button.replaceChildren(icon(name), label || h("span", { class: "label" }));
  const text = button.querySelector(".label");
  text.textContent = `${current[0].toUpperCase()}${current.slice(1)} theme`;
  button.setAttribute("aria-label", `Theme: ${current}. Switch to ${next}`);
  button.title = `Theme: ${current} (switch to ${next})`;
}
export function themeToggle({ compact = false } = {}) {
  const button = h("button", {
    class: ["btn ghost theme-toggle", compact ? "icon-only" : ""], type: "button",
    on: { click: () => setTheme(THEMES[(THEMES.indexOf(theme()) + 1) % THEMES.length]) },
  });
  paintThemeToggle(button);
  if (compact) button.querySelector(".label").classList.add("sr-only");
  return button;
}

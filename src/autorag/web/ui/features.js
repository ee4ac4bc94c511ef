// Which optional parts the main menu and the palette offer. P2P: to admins always (they
// set it up); to others who manage source policies only while P2P runs here, which the
// server shows by offering the peer search skill.

import { api, ws } from "./api.js";
import { app } from "./state.js";

let p2pRunning = false;

export function p2pInMenu() {
  return app.can("p2p:admin") || (app.can("policy:write") && p2pRunning);
}

// Learns whether P2P runs, for those who are not admins; quiet on any error (no menu item).
export async function detectP2P() {
  p2pRunning = false;
  if (app.can("p2p:admin") || !app.can("policy:write") || !app.can("chat:use") || !app.workspace) return;
  try {
    const skills = await api(`${ws(app.workspace)}/skills`);
    p2pRunning = skills.some((s) => s.name === "peer_search");
  } catch { /* no P2P item */ }
}

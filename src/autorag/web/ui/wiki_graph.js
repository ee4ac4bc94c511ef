// The wiki's link graph drawn in the page as SVG: a small force layout written here (no
// library, nothing fetched). Pages are filled circles you can click or reach with Tab;
// pages that are linked to but not written yet are dashed and say so.

import { h } from "./dom.js";

const MAX_NODES = 400; // beyond this, the most linked pages (the layout is O(n²) a step)
const STEPS = 260;

/**
 * Draw ``graph`` ({nodes, edges} as the API gives them) into a new <figure>.
 * options.href(node) -> address of a node; options.current: the key of the page shown.
 */
export function drawGraph(graph, { href, current = null, label = "Link graph" } = {}) {
  let nodes = graph.nodes || [];
  let edges = graph.edges || [];
  const total = nodes.length;
  if (nodes.length > MAX_NODES) {
    const degree = new Map();
    for (const e of edges) {
      degree.set(e.source, (degree.get(e.source) || 0) + 1);
      degree.set(e.target, (degree.get(e.target) || 0) + 1);
    }
    const keep = new Set([...nodes].sort((a, b) => (degree.get(b.key) || 0) - (degree.get(a.key) || 0)).slice(0, MAX_NODES).map((n) => n.key));
    if (current) keep.add(current);
    nodes = nodes.filter((n) => keep.has(n.key));
    edges = edges.filter((e) => keep.has(e.source) && keep.has(e.target));
  }
  const figure = h("figure", { class: "wiki-graph" });
  if (!nodes.length) {
    figure.append(h("p", { class: "muted" }, "No pages to draw yet."));
    return figure;
  }
  const pos = layout(nodes, edges);
  const xs = pos.map((p) => p.x);
  const ys = pos.map((p) => p.y);
  const pad = 60;
  const minX = Math.min(...xs) - pad;
  const minY = Math.min(...ys) - pad;
  const width = Math.max(200, Math.max(...xs) - minX + pad);
  const height = Math.max(160, Math.max(...ys) - minY + pad);
  const index = new Map(nodes.map((n, i) => [n.key, i]));
  const svg = h("svg:svg", { viewBox: `${minX.toFixed(1)} ${minY.toFixed(1)} ${width.toFixed(1)} ${height.toFixed(1)}`, role: "group", "aria-label": label, class: "graph-svg" });
  const lines = h("svg:g", { class: "edges" });
  for (const e of edges) {
    const a = index.get(e.source);
    const b = index.get(e.target);
    if (a === undefined || b === undefined || a === b) continue;
    lines.append(h("svg:line", { x1: pos[a].x.toFixed(1), y1: pos[a].y.toFixed(1), x2: pos[b].x.toFixed(1), y2: pos[b].y.toFixed(1), class: e.dangling ? "edge dangling" : "edge" }));
  }
  const dots = h("svg:g", { class: "nodes" });
  nodes.forEach((n, i) => {
    const name = n.title || n.path || n.key;
    const words = n.dangling ? `${name} (not written yet)` : name;
    const link = h("svg:a", { href: href(n), class: ["node", n.dangling ? "dangling" : "", n.key === current ? "current" : ""].filter(Boolean).join(" "), "aria-label": words, dataset: { key: n.key } },
      h("svg:title", {}, words),
      h("svg:circle", { cx: pos[i].x.toFixed(1), cy: pos[i].y.toFixed(1), r: n.key === current ? 11 : 8 }),
      h("svg:text", { x: pos[i].x.toFixed(1), y: (pos[i].y + 22).toFixed(1), "text-anchor": "middle" }, name.length > 28 ? `${name.slice(0, 27)}…` : name));
    dots.append(link);
  });
  svg.append(lines, dots);
  figure.append(h("div", { class: "graph-scroll" }, svg),
    h("figcaption", { class: "small muted" },
      `${nodes.length} page${nodes.length === 1 ? "" : "s"}${total > nodes.length ? ` (the ${nodes.length} most linked of ${total})` : ""}, ${edges.length} link${edges.length === 1 ? "" : "s"}. `,
      h("span", { class: "legend-dot" }), " written ",
      h("span", { class: "legend-dot dangling" }), " linked to, not written yet"));
  return figure;
}

// Fruchterman–Reingold: linked nodes pull together, all nodes push apart, the moves
// cool down step by step. Starts from a circle (in the API's order), so the same graph
// is always drawn the same way.
function layout(nodes, edges) {
  const n = nodes.length;
  const area = 220 * 220 * Math.max(4, n);
  const k = Math.sqrt(area / Math.max(1, n));
  const radius = Math.sqrt(area) / 3;
  const pos = nodes.map((_, i) => ({ x: radius * Math.cos((2 * Math.PI * i) / n), y: radius * Math.sin((2 * Math.PI * i) / n) }));
  if (n === 1) return [{ x: 0, y: 0 }];
  const index = new Map(nodes.map((node, i) => [node.key, i]));
  const pairs = edges.map((e) => [index.get(e.source), index.get(e.target)]).filter(([a, b]) => a !== undefined && b !== undefined && a !== b);
  const dx = new Float64Array(n);
  const dy = new Float64Array(n);
  let temperature = radius / 2;
  for (let step = 0; step < STEPS; step += 1) {
    dx.fill(0);
    dy.fill(0);
    for (let i = 0; i < n; i += 1) {
      for (let j = i + 1; j < n; j += 1) {
        let x = pos[i].x - pos[j].x;
        let y = pos[i].y - pos[j].y;
        let d2 = x * x + y * y;
        if (d2 < 0.01) { x = 0.1 * ((i % 7) - 3) || 0.1; y = 0.1; d2 = x * x + y * y; }
        const force = (k * k) / d2;
        dx[i] += x * force; dy[i] += y * force;
        dx[j] -= x * force; dy[j] -= y * force;
      }
    }
    for (const [a, b] of pairs) {
      const x = pos[a].x - pos[b].x;
      const y = pos[a].y - pos[b].y;
      const d = Math.sqrt(x * x + y * y) || 0.01;
      const force = d / k;
      dx[a] -= x * force; dy[a] -= y * force;
      dx[b] += x * force; dy[b] += y * force;
    }
    for (let i = 0; i < n; i += 1) {
      // A gentle pull to the centre keeps pages without links from drifting away.
      dx[i] -= pos[i].x * 0.02; dy[i] -= pos[i].y * 0.02;
      const d = Math.sqrt(dx[i] * dx[i] + dy[i] * dy[i]) || 1;
      const move = Math.min(d, temperature);
      pos[i].x += (dx[i] / d) * move;
      pos[i].y += (dy[i] / d) * move;
    }
    temperature *= 0.985;
  }
  return pos;
}

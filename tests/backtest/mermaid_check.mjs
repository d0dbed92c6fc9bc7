// Parse every ```mermaid block of stdin with Mermaid's own parser (mermaid.parse, in
// jsdom); print {"blocks": N, "failed": M, "errors": [...]}. argv[2]: a node_modules
// folder holding mermaid and jsdom.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
const { JSDOM } = await import(pathToFileURL(join(modules, "jsdom/lib/api.js")).href);
const dom = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import(
  pathToFileURL(join(modules, "mermaid/dist/mermaid.core.mjs")).href
);
const text = readFileSync(0, "utf8");
const blocks = [...text.matchAll(/```mermaid\n([\s\S]*?)```/g)].map((m) => m[1]);
const errors = [];
for (const block of blocks) {
  try {
    const parsed = await mermaid.parse(block);
    if (!parsed || parsed.diagramType !== "gantt") errors.push(`not a gantt: ${parsed?.diagramType}`);
  } catch (error) {
    errors.push(String(error?.message ?? error).slice(0, 500));
  }
}
console.log(JSON.stringify({ blocks: blocks.length, failed: errors.length, errors }));

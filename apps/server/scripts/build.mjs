// Builds the server for its container image (docker/server.Dockerfile): one self-contained ESM
// bundle, `gadget-code.mjs`, with every dependency inlined, so the image needs no node_modules
// (docs/decisions/0009-container-images.md). Usage: node scripts/build.mjs [--outdir <dir>]
import { chmodSync, copyFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const repo = path.resolve(root, "..", "..");
const flag = process.argv.indexOf("--outdir");
const outdir = path.resolve(flag >= 0 ? (process.argv[flag + 1] ?? "") : path.join(root, "dist"));

// pino runs transports (pino-pretty, used when stdout is a terminal) in worker threads that load
// files by path; a bundle ships those files beside itself and tells pino where they are.
const fromLogging = createRequire(path.join(repo, "packages", "logging", "package.json"));
const pinoDir = path.dirname(fromLogging.resolve("pino/package.json"));
const fromPino = createRequire(path.join(pinoDir, "package.json"));
const workers = {
  "thread-stream-worker": path.join(
    path.dirname(fromPino.resolve("thread-stream/package.json")),
    "lib",
    "worker.js",
  ),
  "pino-worker": path.join(pinoDir, "lib", "worker.js"),
  "pino/file": path.join(pinoDir, "file.js"),
  "pino-pretty": fromLogging.resolve("pino-pretty"),
};
const workerFile = (name) => `${name.replace("/", "-")}.cjs`;
const overrides = Object.keys(workers)
  .map(
    (name) =>
      `${JSON.stringify(name)}: __fileURLToPath(new URL(${JSON.stringify(`./${workerFile(name)}`)}, import.meta.url))`,
  )
  .join(", ");

// Optional peers of the MongoDB driver and ws that we never use; they stay unresolved imports
// that the libraries already guard with try/catch.
const optional = [
  "@aws-sdk/credential-providers",
  "@mongodb-js/zstd",
  "gcp-metadata",
  "kerberos",
  "mongodb-client-encryption",
  "snappy",
  "socks",
  "aws4",
  "bufferutil",
  "utf-8-validate",
  "msgpackr-extract",
];

rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: [path.join(root, "src", "cli.ts")],
  outfile: path.join(outdir, "gadget-code.mjs"),
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  external: optional,
  // CommonJS dependencies call require(); pino needs to find its worker files.
  banner: {
    js: [
      "#!/usr/bin/env node",
      'import { createRequire as __createRequire } from "node:module";',
      'import { fileURLToPath as __fileURLToPath } from "node:url";',
      "const require = __createRequire(import.meta.url);",
      `globalThis.__bundlerPathsOverrides = { ${overrides} };`,
    ].join("\n"),
  },
  legalComments: "none",
  logLevel: "warning",
});
chmodSync(path.join(outdir, "gadget-code.mjs"), 0o755);
// The install script is read beside the bundle (src/downloads/install-script.ts).
copyFileSync(path.join(root, "src", "downloads", "install.sh"), path.join(outdir, "install.sh"));

for (const [name, entry] of Object.entries(workers)) {
  await build({
    entryPoints: [entry],
    outfile: path.join(outdir, workerFile(name)),
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    legalComments: "none",
    logLevel: "warning",
  });
}
const shown = outdir.startsWith(repo) ? path.relative(repo, outdir) : outdir;
console.log(`built ${shown}/gadget-code.mjs`);

// Builds the publishable `gadget-drone` package into dist/ (or the directory given): one ESM bundle
// with every dependency inlined, so the package installs by unpacking, with no registry and no
// npm (the server's /install.sh and `gadget-drone update` do exactly that), plus its package.json.
// Usage: node scripts/build.mjs [outdir] [--version <v>] (another version number: tests of updates).
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const repo = path.resolve(root, "..", "..");
const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const flag = process.argv.indexOf("--version");
const version = flag >= 0 ? process.argv[flag + 1] : manifest.version;
const positional = process.argv.slice(2).filter((_, index, all) => all[index - 1] !== "--version");
const outArgument = positional.find((argument) => argument !== "--version");

// Optional native speed-ups of ws that it loads in a try/catch; the bundle goes without them.
const optional = ["bufferutil", "utf-8-validate"];

const outdir = path.resolve(outArgument ?? path.join(root, "dist"));
rmSync(path.join(outdir, "main.js"), { force: true });
mkdirSync(outdir, { recursive: true });
await build({
  entryPoints: [path.join(root, "src", "main.ts")],
  outfile: path.join(outdir, "main.js"),
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  external: optional,
  // Some dependencies are CommonJS and call require(); give the ESM bundle one.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);',
  },
  legalComments: "none",
  // Smaller to download and quicker to parse at every start; names stay, so stack traces read.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: "warning",
});

mkdirSync(path.join(outdir, "bin"), { recursive: true });
copyFileSync(
  path.join(root, "bin", "gadget-drone.js"),
  path.join(outdir, "bin", "gadget-drone.js"),
);
chmodSync(path.join(outdir, "bin", "gadget-drone.js"), 0o755);
const published = {
  name: manifest.name,
  version,
  description: manifest.description,
  type: "module",
  license: manifest.license,
  bin: { "gadget-drone": "./bin/gadget-drone.js" },
  engines: { node: ">=20.19" },
};
writeFileSync(path.join(outdir, "package.json"), `${JSON.stringify(published, null, 2)}\n`);
console.log(
  `built ${path.relative(repo, outdir) || "."}/ (gadget-drone ${version}, self-contained)`,
);

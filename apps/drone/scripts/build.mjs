// Builds the publishable `gadget-drone` npm package into dist/: one ESM bundle with the workspace
// packages (@gadget/*) inlined and third-party packages left as dependencies, plus its package.json.
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const repo = path.resolve(root, "..", "..");
const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));

/** Catalog versions, so the published package pins what the workspace tested. */
function catalog() {
  const text = readFileSync(path.join(repo, "pnpm-workspace.yaml"), "utf8");
  const versions = {};
  let inside = false;
  for (const line of text.split("\n")) {
    if (/^catalog:/.test(line)) inside = true;
    else if (/^\S/.test(line)) inside = false;
    else if (inside) {
      const match = /^\s+"?([^":#\s]+)"?:\s*(\S+)/.exec(line);
      if (match) versions[match[1]] = match[2];
    }
  }
  return versions;
}

const versions = catalog();
const runtime = Object.keys(manifest.dependencies).filter(
  (name) => !name.startsWith("@gadget/") && name !== "tsx",
);
const dependencies = Object.fromEntries(
  runtime.map((name) => {
    const declared = manifest.dependencies[name];
    const version = declared === "catalog:" ? versions[name] : declared;
    if (!version) throw new Error(`no catalog version for ${name}`);
    return [name, version];
  }),
);

const outdir = path.join(root, "dist");
mkdirSync(outdir, { recursive: true });
await build({
  entryPoints: [path.join(root, "src", "main.ts")],
  outfile: path.join(outdir, "main.js"),
  bundle: true,
  platform: "node",
  target: "node20",
  format: "esm",
  // Third-party packages stay imports; everything of ours is inlined.
  external: runtime,
  // Some dependencies are CommonJS and call require(); give the ESM bundle one.
  banner: {
    js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);',
  },
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
  version: manifest.version,
  description: manifest.description,
  type: "module",
  license: manifest.license,
  bin: { "gadget-drone": "./bin/gadget-drone.js" },
  engines: { node: ">=20.19" },
  dependencies,
};
writeFileSync(path.join(outdir, "package.json"), `${JSON.stringify(published, null, 2)}\n`);
console.log(
  `built ${path.relative(repo, outdir)}/ (${Object.keys(dependencies).length} runtime dependencies)`,
);

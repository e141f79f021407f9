// Builds (once, cached by tools/gitea/build.json) Gitea from the Go module proxy for the private
// forge of the tests and of development: the binary and the folders it reads its pages from.
import { createHash } from "node:crypto";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { z } from "zod";
import { findGo, runCommand } from "./go.ts";
import { which } from "./which.ts";

/** tools/gitea/build.json: which Gitea, and how it is built. */
const recipeSchema = z.object({
  module: z.string(),
  version: z.string(),
  /** The module's go.sum hash, checked against what the proxy gave. */
  sum: z.string(),
  tags: z.string(),
  ldflags: z.string(),
  /** Folders of the module Gitea reads at run time (`STATIC_ROOT_PATH`). */
  staticFolders: z.array(z.string()),
});
type Recipe = z.infer<typeof recipeSchema>;

/** A built Gitea: the binary and the folder `STATIC_ROOT_PATH` names. */
export interface GiteaBuild {
  binary: string;
  staticRoot: string;
}

function readRecipe(rootDir: string): { recipe: Recipe; text: string } {
  const text = readFileSync(path.join(rootDir, "tools", "gitea", "build.json"), "utf8");
  return { recipe: recipeSchema.parse(JSON.parse(text)), text };
}

/**
 * Where the build for the current tools/gitea/build.json lives (it may not be built yet):
 * `<cache>/bin/gitea-<hash>` and `<cache>/gitea-<hash>/` beside it, outside the checkout so a
 * fresh clone on the same machine, as CI makes, reuses it.
 */
export function giteaBuildPaths(
  rootDir: string,
  cacheDir = path.join(homedir(), ".cache", "gadget-code"),
): GiteaBuild {
  const hash = createHash("sha256").update(readRecipe(rootDir).text).digest("hex").slice(0, 12);
  return {
    binary: path.join(cacheDir, "bin", `gitea-${hash}`),
    staticRoot: path.join(cacheDir, `gitea-${hash}`),
  };
}

/** The build when it is there, else null (nothing is built). */
export function builtGitea(rootDir: string): GiteaBuild | null {
  const paths = giteaBuildPaths(rootDir);
  return existsSync(paths.binary) && existsSync(paths.staticRoot) ? paths : null;
}

/**
 * Returns the built Gitea, building it when missing (about 15 minutes of two cores the first
 * time). Returns null when Go is not installed.
 */
export async function ensureGitea(
  rootDir: string,
  log: (line: string) => void,
): Promise<GiteaBuild | null> {
  const built = builtGitea(rootDir);
  if (built) return built;
  const go = findGo();
  if (!go) return null;
  // Gitea's SQLite driver (mattn/go-sqlite3) is C, compiled through cgo.
  if (!which("cc") && !which("gcc")) {
    throw new Error("building Gitea needs a C compiler for its SQLite driver: install gcc");
  }
  const { recipe } = readRecipe(rootDir);
  const target = giteaBuildPaths(rootDir);
  mkdirSync(path.dirname(target.binary), { recursive: true });
  log(`building Gitea ${recipe.version} (once; cached at ${target.binary})…`);
  const started = Date.now();
  const env = { ...process.env, CGO_ENABLED: "1" };
  // Built under temporary names and renamed, so an interrupted build never leaves half of one.
  const binaryPartial = `${target.binary}.partial-${process.pid}`;
  const staticPartial = `${target.staticRoot}.partial-${process.pid}`;
  const buildDir = mkdtempSync(path.join(tmpdir(), "gadget-gitea-build-"));
  try {
    const source = await writableModuleCopy(go, recipe, buildDir, env);
    // -trimpath keeps the folder out of Go's build cache keys, so a rebuild elsewhere reuses them.
    await runCommand(
      go,
      ["build", "-trimpath", "-tags", recipe.tags, "-ldflags", recipe.ldflags, "-o", binaryPartial],
      { cwd: source, env },
    );
    rmSync(staticPartial, { recursive: true, force: true });
    for (const folder of recipe.staticFolders) {
      cpSync(path.join(source, folder), path.join(staticPartial, folder), { recursive: true });
    }
    rmSync(target.staticRoot, { recursive: true, force: true });
    renameSync(staticPartial, target.staticRoot);
    renameSync(binaryPartial, target.binary);
  } finally {
    makeWritable(buildDir);
    rmSync(buildDir, { recursive: true, force: true });
    rmSync(binaryPartial, { force: true });
    rmSync(staticPartial, { recursive: true, force: true });
  }
  log(`Gitea built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return target;
}

/**
 * Downloads the module (checked against its pinned hash) and copies it out of Go's read-only
 * module cache: Gitea builds only as the main module, where its `replace` lines apply, and
 * `go install module@version` refuses a module that has them.
 */
async function writableModuleCopy(
  go: string,
  recipe: Recipe,
  buildDir: string,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const answer = await runCommand(
    go,
    ["mod", "download", "-json", `${recipe.module}@${recipe.version}`],
    { cwd: buildDir, env, capture: true },
  );
  const downloaded = z.object({ Dir: z.string(), Sum: z.string() }).parse(JSON.parse(answer));
  if (downloaded.Sum !== recipe.sum) {
    throw new Error(
      `${recipe.module}@${recipe.version} has hash ${downloaded.Sum}, not the ${recipe.sum} tools/gitea/build.json pins`,
    );
  }
  const source = path.join(buildDir, "src");
  cpSync(downloaded.Dir, source, { recursive: true });
  makeWritable(source);
  return source;
}

/** Gives the owner write access throughout `directory` (the module cache's copies are read-only). */
function makeWritable(directory: string): void {
  if (!existsSync(directory)) return;
  chmodSync(directory, 0o755);
  for (const entry of readdirSync(directory, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath, entry.name);
    if (entry.isDirectory()) chmodSync(full, 0o755);
    else if (entry.isFile()) chmodSync(full, 0o644);
  }
}

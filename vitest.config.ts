// One vitest run for the whole workspace: every package is a project, and one service harness
// (Redis + a MongoDB-compatible server) is started for all of them.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";

const configFiles = ["vitest.config.ts", "vite.config.ts"];

/** Settings each project needs itself (projects do not inherit the root's). */
export const perProject = {
  testTimeout: 30_000,
  hookTimeout: 120_000,
  teardownTimeout: 30_000,
  // Removes what each test file made with makeTempDir (@gadget/testkit).
  setupFiles: [path.join(import.meta.dirname, "packages/testkit/src/vitest-setup.ts")],
};

/**
 * A project per workspace package (`packages/*`, `apps/*` and `scripts`, as pnpm-workspace.yaml
 * lists them). Packages with their own vitest/vite config (the web IDE) are used as they are; the
 * others get the shared per-project settings below. (Not `extends: true`: that would copy the
 * root's globalSetup into every project and start the services once per project.)
 */
function workspaceProjects(): Array<string | TestProjectInlineConfiguration> {
  const projects: Array<string | TestProjectInlineConfiguration> = [];
  // From the repository root whatever the working directory (`pnpm test` inside a package).
  const at = (name: string) => path.join(import.meta.dirname, name);
  const roots = [at("scripts")];
  for (const group of ["packages", "apps", "tests"].map(at)) {
    if (!existsSync(group)) continue;
    for (const name of readdirSync(group)) roots.push(path.join(group, name));
  }
  for (const root of roots) {
    const manifest = path.join(root, "package.json");
    if (!existsSync(manifest)) continue;
    if (configFiles.some((file) => existsSync(path.join(root, file)))) {
      projects.push(root);
      continue;
    }
    const packageName = (JSON.parse(readFileSync(manifest, "utf8")) as { name: string }).name;
    projects.push({ test: { name: packageName, root, ...perProject } });
  }
  return projects;
}

export default defineConfig({
  test: {
    projects: workspaceProjects(),
    globalSetup: ["packages/services/src/vitest-global-setup.ts"],
    reporters: ["default", "./packages/services/src/summary-reporter.ts"],
    pool: "forks",
    // Two cores: run files in parallel, but bounded.
    maxWorkers: 2,
    ...perProject,
  },
});

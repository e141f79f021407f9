// Where a command may reach before it runs: every argument naming a path, and every `cd`, must stay
// inside the workspace (after `..`, absolutely or through a symbolic link). Checked for the whole
// chain first, so a refused chain runs nothing.
import { stat } from "node:fs/promises";
import path from "node:path";
import { refuse } from "./command-argv.ts";
import type { CommandStep } from "./command-parse.ts";
import { isInside, resolveRealPath } from "./workspace-path.ts";

/** Paths outside the workspace that commands may still name. */
const allowedOutsidePaths = new Set([
  "/dev/null",
  "/dev/stdin",
  "/dev/stdout",
  "/dev/stderr",
  "/dev/zero",
  "/dev/random",
  "/dev/urandom",
]);

async function exists(target: string): Promise<boolean> {
  return stat(target).then(
    () => true,
    () => false,
  );
}

/** Refuses an argument that names a path outside the workspace (after `..`, absolutely or through a symlink). */
export async function checkArgumentPath(
  root: string,
  cwd: string,
  argument: string,
  stepText: string,
): Promise<void> {
  const candidates = [argument];
  if (argument.startsWith("-") && argument.includes("=")) {
    candidates.push(argument.slice(argument.indexOf("=") + 1));
  }
  for (const candidate of candidates) {
    if (candidate === "" || candidate.length > 4096 || candidate.includes("\n")) continue;
    let target: string;
    if (path.isAbsolute(candidate)) {
      if (allowedOutsidePaths.has(path.normalize(candidate))) continue;
      // "/api/v1" in `grep -r /api/v1 src` is text, not a path: only existing top levels count.
      const top = `/${candidate.split("/").filter(Boolean)[0] ?? ""}`;
      if (!(await exists(top))) continue;
      target = path.normalize(candidate);
    } else {
      target = path.resolve(cwd, candidate);
      if (!isInside(root, target)) {
        refuse(
          `Refused \`${stepText}\`: the argument "${candidate}" points outside the workspace. Commands may only use files inside the workspace; use paths relative to it.`,
        );
      }
    }
    if (!isInside(root, await resolveRealPath(target))) {
      refuse(
        `Refused \`${stepText}\`: the argument "${candidate}" points outside the workspace${path.isAbsolute(candidate) ? "" : " through a symbolic link"}. Commands may only use files inside the workspace; use paths relative to it.`,
      );
    }
  }
}

export async function resolveCd(root: string, cwd: string, directory: string, stepText: string) {
  const lexical = path.resolve(cwd, directory);
  const real = await resolveRealPath(lexical);
  if (!isInside(root, lexical) || !isInside(root, real)) {
    refuse(
      `Refused \`${stepText}\`: "${directory}" is outside the workspace. \`cd\` can only move within the workspace; use a path relative to the workspace root (or the cwd parameter).`,
    );
  }
  return real;
}

/** Checks what can be checked before anything runs, so a refused chain runs nothing. */
export async function precheck(root: string, start: string, steps: CommandStep[]): Promise<void> {
  let cwd = start;
  for (const step of steps) {
    if (step.kind === "cd") {
      cwd = await resolveCd(root, cwd, step.directory, step.text);
      continue;
    }
    const [program, ...args] = step.words;
    if (program?.value.includes("/") && !path.isAbsolute(program.value)) {
      await checkArgumentPath(root, cwd, program.value, step.text);
    }
    for (const word of args) {
      if (!word.glob) await checkArgumentPath(root, cwd, word.value, step.text);
    }
  }
}

// The environment commands run in: a few variables of the host's by name (an allowlist, so a
// `DATABASE_URL` or `GH_PAT` the drone was started with never reaches a command), the project's own
// variables, and settings that make every command non-interactive.

/** Host variables a command receives: what programs need to find themselves and speak the locale. */
export const passedVariables: readonly string[] = ["PATH", "HOME", "LANG", "TERM", "TZ", "TMPDIR"];

/** Host variables passed by prefix (the locale's categories). */
const passedPrefixes: readonly string[] = ["LC_"];

/** Set on every command so nothing waits for a person or pages output. */
export const nonInteractiveEnv: Readonly<Record<string, string>> = {
  CI: "1",
  PAGER: "cat",
  GIT_PAGER: "cat",
  GIT_TERMINAL_PROMPT: "0",
  GIT_EDITOR: "true",
  EDITOR: "true",
  VISUAL: "true",
  NO_COLOR: "1",
  TERM: "dumb",
};

export interface CommandEnvironmentOptions {
  /**
   * The project's own variables (set in its settings, stored encrypted): passed as they are, over
   * the host's. Default: none.
   */
  projectEnv?: Readonly<Record<string, string>>;
  /** Values never to pass: a host variable holding one is dropped. Default: none. */
  secretValues?: readonly string[];
}

/**
 * A command's environment: PATH, HOME, LANG, LC_*, TERM, TZ and TMPDIR of `host` (unless one holds
 * a secret value), then the project's own variables, then the non-interactive settings (CI=1,
 * PAGER=cat, GIT_TERMINAL_PROMPT=0, …). Nothing else of the host's passes.
 * @example commandEnvironment(process.env, { projectEnv: { NODE_ENV: "test" }, secretValues: [credential] });
 */
export function commandEnvironment(
  host: Readonly<Record<string, string | undefined>>,
  options: CommandEnvironmentOptions = {},
): Record<string, string> {
  const values = (options.secretValues ?? []).filter((value) => value.length >= 4);
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(host)) {
    if (value === undefined) continue;
    if (
      !passedVariables.includes(name) &&
      !passedPrefixes.some((prefix) => name.startsWith(prefix))
    )
      continue;
    if (values.some((secret) => value.includes(secret))) continue;
    result[name] = value;
  }
  return { ...result, ...(options.projectEnv ?? {}), ...nonInteractiveEnv };
}

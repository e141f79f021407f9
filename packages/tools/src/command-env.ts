// The environment commands run in: the host's, scrubbed of secrets, made non-interactive.

/** Name fragments that mark a variable as secret (compared case-insensitively). */
export const secretNameFragments: readonly string[] = [
  "KEY",
  "TOKEN",
  "SECRET",
  "PASSWORD",
  "PASSWD",
  "CREDENTIAL",
];

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

export interface ScrubOptions {
  /** Extra variable names to drop. Default: none. */
  secretEnvNames?: readonly string[];
  /** Values to drop wherever they appear in a variable. Default: none. */
  secretValues?: readonly string[];
}

/**
 * Removes secrets from an environment: variables whose name contains KEY, TOKEN, SECRET,
 * PASSWORD, PASSWD or CREDENTIAL, the named ones, and any holding a secret value; then sets
 * the non-interactive variables (CI=1, PAGER=cat, GIT_TERMINAL_PROMPT=0, …).
 * @example
 * scrubEnvironment(process.env, { secretValues: [droneCredential] });
 */
export function scrubEnvironment(
  env: Readonly<Record<string, string | undefined>>,
  options: ScrubOptions = {},
): Record<string, string> {
  const names = new Set((options.secretEnvNames ?? []).map((name) => name.toUpperCase()));
  const values = (options.secretValues ?? []).filter((value) => value.length >= 4);
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const upper = name.toUpperCase();
    if (names.has(upper)) continue;
    if (secretNameFragments.some((fragment) => upper.includes(fragment))) continue;
    if (values.some((secret) => value.includes(secret))) continue;
    result[name] = value;
  }
  return { ...result, ...nonInteractiveEnv };
}

/** Replaces secret values in text with `[redacted]`. */
export function redactSecrets(text: string, secretValues: readonly string[]): string {
  let result = text;
  for (const secret of secretValues) {
    if (secret.length >= 4 && result.includes(secret))
      result = result.split(secret).join("[redacted]");
  }
  return result;
}

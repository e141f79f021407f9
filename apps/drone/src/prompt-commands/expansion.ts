// A prompt that starts with `/<name>`: the command call it makes, and a command file's body with
// its arguments put in. Pure, so what a prompt becomes is tested without git or a server.

/** `/<name> <arguments>` as the user typed it. */
export interface CommandCall {
  name: string;
  /** Everything after the name, trimmed ("" when none). */
  arguments: string;
}

/**
 * The command a prompt calls, or null when it calls none: it must start with `/` and a name
 * followed by a space or its end (`/etc/hosts is missing` calls nothing). `//…` is an escape, also
 * null: the prompt is meant as text (see `literalPrompt`).
 * @example commandCall("/review src/app.ts") // { name: "review", arguments: "src/app.ts" }
 */
export function commandCall(prompt: string): CommandCall | null {
  const match = /^\/([A-Za-z0-9][A-Za-z0-9_.-]*)(?:\s+([\s\S]*))?$/.exec(prompt.trimStart());
  if (!match) return null;
  return { name: match[1] as string, arguments: (match[2] ?? "").trim() };
}

/** The prompt as the model gets it when it is no command: `//text` is sent as `/text`. */
export function literalPrompt(prompt: string): string {
  const trimmed = prompt.trimStart();
  return trimmed.startsWith("//") ? trimmed.slice(1) : prompt;
}

/**
 * A command file's body with `$ARGUMENTS` replaced by the arguments everywhere; a body without
 * `$ARGUMENTS` gets them on a last line, so nothing the user typed is lost.
 * @example withArguments("Review $ARGUMENTS.", "src/app.ts") // "Review src/app.ts."
 */
export function withArguments(body: string, args: string): string {
  const text = body.trim();
  if (text.includes("$ARGUMENTS")) return text.split("$ARGUMENTS").join(args);
  return args ? `${text}\n\nArguments: ${args}` : text;
}

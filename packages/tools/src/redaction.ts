// Secret values cut from what a command or an MCP server prints, in the forms a program could
// easily turn them into to get them past an exact match: reversed, base64 (standard and URL-safe,
// at any alignment inside a longer encoded text) and hex. Anything cleverer is the sandbox's job:
// a secret never enters it in the first place.

/** Shorter secrets are cut only as they are (their encoded fragments would match too much). */
const minimumTransformedLength = 8;

/** The part of base64(prefix + secret) that depends on the secret's bytes alone, per alignment. */
function base64Fragments(secret: Buffer): string[] {
  const fragments: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), secret]).toString("base64");
    const start = Math.ceil((8 * offset) / 6);
    const end = Math.floor((8 * (offset + secret.length)) / 6);
    fragments.push(encoded.slice(start, end));
  }
  return fragments;
}

/** Every form of `secret` that is cut. */
export function secretForms(secret: string): string[] {
  if (secret.length < minimumTransformedLength) return [secret];
  const bytes = Buffer.from(secret, "utf8");
  const base64 = base64Fragments(bytes);
  const hex = bytes.toString("hex");
  return [
    ...new Set([
      secret,
      [...secret].reverse().join(""),
      ...base64,
      ...base64.map((fragment) => fragment.replace(/\+/g, "-").replace(/\//g, "_")),
      hex,
      hex.toUpperCase(),
    ]),
  ];
}

/**
 * Replaces secret values in text with `[redacted]`, in their plain, reversed, base64 and hex forms.
 * @example redactSecrets(output, [apiKey])
 */
export function redactSecrets(text: string, secretValues: readonly string[]): string {
  let result = text;
  for (const secret of secretValues) {
    if (secret.length < 4) continue;
    // Longest first: a form must not be cut inside a longer one before that one is found.
    for (const form of secretForms(secret).sort((a, b) => b.length - a.length)) {
      if (result.includes(form)) result = result.split(form).join("[redacted]");
    }
  }
  return result;
}

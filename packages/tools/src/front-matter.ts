// The front matter of a Markdown file a project gives the agent (a command, a skill): a leading
// `---` block of `key: value` lines. Only flat string values: what these files need, and nothing
// a hostile file could make expensive (no YAML anchors, no nesting).

export interface FrontMatter {
  /** Lower-cased keys; values trimmed, surrounding quotes removed. */
  fields: Record<string, string>;
  /** The text after the block (all of it when there is none). */
  body: string;
}

/**
 * Splits `text` into its front matter and body. A file without a closing `---` has no front
 * matter. Lines that are not `key: value` (comments, lists, blank) are skipped.
 * @example parseFrontMatter("---\ndescription: Review a file\n---\nReview $ARGUMENTS").fields.description; // "Review a file"
 */
export function parseFrontMatter(text: string): FrontMatter {
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const opening = /^---[ \t]*\r?\n/.exec(source);
  if (!opening) return { fields: {}, body: source };
  const rest = source.slice(opening[0].length);
  const closing = /^---[ \t]*(\r?\n|$)/m.exec(rest);
  if (!closing) return { fields: {}, body: source };
  const fields: Record<string, string> = Object.create(null);
  for (const line of rest.slice(0, closing.index).split(/\r?\n/)) {
    const match = /^([A-Za-z][A-Za-z0-9_-]*)[ \t]*:[ \t]*(.*)$/.exec(line);
    if (!match) continue;
    const key = (match[1] as string).toLowerCase();
    if (key in fields) continue;
    fields[key] = unquote((match[2] as string).trim());
  }
  return { fields, body: rest.slice(closing.index + closing[0].length) };
}

function unquote(value: string): string {
  if (value.length >= 2) {
    const first = value[0];
    if ((first === '"' || first === "'") && value.endsWith(first)) return value.slice(1, -1);
  }
  return value;
}

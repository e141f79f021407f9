// Text helpers shared by the prompt, tool results and summaries; a leaf: it imports nothing.

/**
 * Cuts text to `limit` characters with a visible marker.
 * @example clip("abcdef", 3) // "abc\n[…3 more characters cut]"
 */
export function clip(text: string, limit: number): string {
  return text.length <= limit
    ? text
    : `${text.slice(0, limit)}\n[…${text.length - limit} more characters cut]`;
}

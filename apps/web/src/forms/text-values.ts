// A form holds text; a REST body holds numbers, lists and absent fields. These zod schemas turn one
// into the other and then validate it with the protocol's own schema for that body field, so the
// browser says what the server would, on the field, before anything is sent.
import { z } from "zod";

/**
 * Text where "" (after trimming) means absent; anything else must pass `schema`.
 * @example defaultBranch: optionalText(z.string().min(1).max(255))
 */
export function optionalText<Output>(schema: z.ZodType<Output, string>) {
  return z
    .string()
    .transform((text) => text.trim() || undefined)
    .pipe(schema.optional());
}

/** A number typed as text: "" is absent; anything else must be a number that passes `schema`. */
export function optionalNumber<Output>(schema: z.ZodType<Output, number>) {
  return z
    .string()
    .transform((text, context) => {
      if (!text.trim()) return undefined;
      const value = Number(text);
      if (Number.isFinite(value)) return value;
      context.addIssue({ code: "custom", message: "must be a number" });
      return z.NEVER;
    })
    .pipe(schema.optional());
}

/** One item a line, blank lines and the spaces around each left out. */
export function lineList<Output>(schema: z.ZodType<Output, string[]>) {
  return z
    .string()
    .transform((text) =>
      text
        .split("\n")
        .map((line) => line.trim())
        .filter(Boolean),
    )
    .pipe(schema);
}

/** Words separated by spaces (labels such as `gpu os=linux`). */
export function wordList<Output>(schema: z.ZodType<Output, string[]>) {
  return z
    .string()
    .transform((text) => text.split(/\s+/).filter(Boolean))
    .pipe(schema);
}

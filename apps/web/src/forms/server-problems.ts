// Puts the field problems of a server's 400 answer (`error.details`: `[{path, message}]`) on the
// form's fields, so they read like the browser's own; the error box above the buttons still
// lists them all, with the server's message.
import type { FieldValues, Path, UseFormReturn } from "react-hook-form";
import { ApiError } from "../api/api-error.ts";

/**
 * Where a body path lands in the form, when its field has another name there: an exact path
 * (`pricing.inputPerMTok`) or its first part (`allowedHosts` for `allowedHosts.3`).
 */
export type FieldAliases<Values extends FieldValues> = Partial<Record<string, Path<Values>>>;

/**
 * @example
 * useMutation({ mutationFn: onSave, onError: (error) => showServerProblems(form, error) });
 */
export function showServerProblems<Values extends FieldValues>(
  // biome-ignore lint/suspicious/noExplicitAny: any context and transformed output will do here.
  form: UseFormReturn<Values, any, any>,
  error: unknown,
  aliases: FieldAliases<Values> = {},
): void {
  if (!(error instanceof ApiError)) return;
  const values = form.getValues() as Record<string, unknown>;
  for (const issue of error.fieldIssues) {
    const first = issue.path.split(".")[0] ?? "";
    const field =
      aliases[issue.path] ?? aliases[first] ?? (first in values ? (first as Path<Values>) : null);
    if (field) form.setError(field, { type: "server", message: issue.message });
  }
}

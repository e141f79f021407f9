// Shows an error in words (never a blank panel), with field problems and an optional retry.
import { ApiError, toApiError } from "../api/api-error.ts";

export interface ErrorNoteProps {
  error: unknown;
  /** What was being done, e.g. "Could not load drones". */
  title?: string;
  onRetry?: () => void;
  /**
   * The form's fields that show their own problem (`showServerProblems`): their issues are not
   * repeated here, and when every issue is on a field the box only says to look there.
   */
  fields?: readonly string[];
}

/** A readable error box. Network failures, API errors and HTTP errors all read as sentences. */
export function ErrorNote({ error, title, onRetry, fields = [] }: ErrorNoteProps) {
  if (!error) return null;
  const apiError = error instanceof ApiError ? error : toApiError(error);
  const all = apiError.fieldIssues;
  const issues = all.filter((issue) => !fields.includes(issue.path.split(".")[0] ?? ""));
  const message =
    all.length > 0 && issues.length === 0 ? "see the problem under the field." : apiError.message;
  return (
    <div className="error-note" role="alert">
      <div>
        {title ? <strong>{title}: </strong> : null}
        <span>{message}</span>
      </div>
      {issues.length > 0 ? (
        <ul className="error-fields">
          {issues.map((issue) => (
            <li key={`${issue.path}:${issue.message}`}>
              <code>{issue.path}</code> {issue.message}
            </li>
          ))}
        </ul>
      ) : null}
      {onRetry ? (
        <button type="button" className="button small" onClick={onRetry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

// Recognises MongoDB's duplicate-key error (code 11000), which idempotent writes rely on.

/** Whether `error` is a duplicate-key error, alone or as the only kind in a bulk write. */
export function isDuplicateKeyError(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const candidate = error as { code?: number; writeErrors?: Array<{ code?: number }> };
  if (candidate.code === 11000) return true;
  const writeErrors = candidate.writeErrors;
  return (
    Array.isArray(writeErrors) &&
    writeErrors.length > 0 &&
    writeErrors.every((item) => item.code === 11000)
  );
}

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

/** Driver errors that mean "the database is not reachable right now", not "this write is wrong". */
const unreachableNames = new Set([
  "MongoNetworkError",
  "MongoNetworkTimeoutError",
  "MongoServerSelectionError",
  "MongooseServerSelectionError",
  "MongoNotConnectedError",
  "MongoPoolClearedError",
  "MongoTopologyClosedError",
  "PoolClosedError",
]);

/** MongoDB codes of a server stepping down or shutting down: the same write succeeds later. */
const retryableCodes = new Set([6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436]);

/**
 * Whether `error` says the database is unavailable (connection refused or reset, no server
 * selectable, a primary stepping down) rather than that the operation itself is wrong. An
 * idempotent write that failed so may simply be tried again.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const candidate = error as {
    name?: string;
    code?: unknown;
    errorLabels?: unknown;
    hasErrorLabel?: (label: string) => boolean;
    cause?: unknown;
  };
  if (candidate.name && unreachableNames.has(candidate.name)) return true;
  if (isUnsentBulkWrite(error)) return true;
  // mongoose's own queue while disconnected: "Operation `x.find()` buffering timed out after 10000ms".
  if (
    candidate.name === "MongooseError" &&
    /buffering timed out/.test(String((error as Error).message))
  ) {
    return true;
  }
  if (typeof candidate.code === "number" && retryableCodes.has(candidate.code)) return true;
  const labels = Array.isArray(candidate.errorLabels) ? (candidate.errorLabels as string[]) : [];
  if (labels.includes("RetryableWriteError") || labels.includes("ResetPool")) return true;
  return candidate.cause !== undefined && candidate.cause !== error
    ? isDatabaseUnavailable(candidate.cause)
    : false;
}

/**
 * Whether `error` is the driver's own (its class names start with "Mongo"): whatever its message
 * says, it is not another service's.
 */
export function isDatabaseError(error: unknown): boolean {
  return error instanceof Error && error.name.startsWith("Mongo");
}

/**
 * A bulk write (`insertMany`, `bulkWrite`) that reached no server: the driver wraps the network or
 * server selection error in a `MongoBulkWriteError` with no write errors, the cause kept as its
 * `errorResponse` (not as `cause`, and without its labels).
 */
function isUnsentBulkWrite(error: object): boolean {
  const bulk = error as { name?: string; writeErrors?: unknown; errorResponse?: unknown };
  if (bulk.name !== "MongoBulkWriteError") return false;
  const writeErrors = Array.isArray(bulk.writeErrors) ? bulk.writeErrors : [bulk.writeErrors];
  return (
    writeErrors.filter(Boolean).length === 0 &&
    bulk.errorResponse !== error &&
    isDatabaseUnavailable(bulk.errorResponse)
  );
}

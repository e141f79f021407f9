// Servers that failed to start, remembered across a session's turns: a later turn does not wait
// for one again until a back-off has passed (30 s, doubling to 10 min), unless its configuration,
// worktree or network changed (another fingerprint), which retries at once.

/** First wait after a failure, and the longest. */
const firstBackoffMs = 30_000;
const longestBackoffMs = 600_000;

interface Failure {
  fingerprint: string;
  reason: string;
  failures: number;
  retryAt: number;
}

/** Why a server is not tried now, in words, or null when it may be tried. */
export interface BackedOff {
  reason: string;
  /** Seconds until it is tried again. */
  retryInSeconds: number;
}

export class FailedServers {
  private readonly failures = new Map<string, Failure>();

  /** Whether `name` with `fingerprint` is still backed off at `now`. */
  backedOff(name: string, fingerprint: string, now = Date.now()): BackedOff | null {
    const failure = this.failures.get(name);
    if (!failure || failure.fingerprint !== fingerprint || now >= failure.retryAt) return null;
    return { reason: failure.reason, retryInSeconds: Math.ceil((failure.retryAt - now) / 1000) };
  }

  /** Records a failed start; the wait doubles with each failure of the same configuration. */
  failed(name: string, fingerprint: string, reason: string, now = Date.now()): void {
    const previous = this.failures.get(name);
    const failures = previous?.fingerprint === fingerprint ? previous.failures + 1 : 1;
    const waitMs = Math.min(firstBackoffMs * 2 ** (failures - 1), longestBackoffMs);
    this.failures.set(name, { fingerprint, reason, failures, retryAt: now + waitMs });
  }

  /** A server started: forgotten. */
  started(name: string): void {
    this.failures.delete(name);
  }
}

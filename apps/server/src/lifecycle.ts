// Whether this server still takes new work, and the work begun outside a request that its
// graceful stop waits for (dispatches it started itself, drone disconnects being handled).

export class Lifecycle {
  private stopping = false;
  private readonly background = new Set<Promise<unknown>>();

  /** False once shutdown began: readiness fails and no new work is taken. */
  get accepting(): boolean {
    return !this.stopping;
  }

  /** Shutdown began. */
  stop(): void {
    this.stopping = true;
  }

  /** Lets shutdown wait for `work` until it settles. */
  track(work: Promise<unknown>): void {
    this.background.add(work);
    const forget = () => this.background.delete(work);
    work.then(forget, forget);
  }

  /** Resolves once every tracked work settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.background]);
  }
}

// Messages a user sends to a running turn (steering): the host puts them in the turn's inbox, and
// the engine takes them at the next step boundary, before its next model call, as user messages.
// An interrupting message also stops the model call or tool calls in flight (the turn goes on).
export interface SteeringMessage {
  id: string;
  text: string;
  interrupt?: boolean;
}

/** A turn's steering inbox: filled by the host, emptied by the engine. */
export class SteeringInbox {
  private waiting: SteeringMessage[] = [];
  private readonly known = new Set<string>();
  private readonly interruptListeners = new Set<() => void>();

  /** Adds a message unless one with its id came before (a re-sent one); true when it is new. */
  push(message: SteeringMessage): boolean {
    if (this.known.has(message.id)) return false;
    this.known.add(message.id);
    this.waiting.push(message);
    if (message.interrupt) for (const listener of this.interruptListeners) listener();
    return true;
  }

  /** Messages waiting, oldest first. */
  get size(): number {
    return this.waiting.length;
  }

  /** Takes every waiting message, oldest first. */
  take(): SteeringMessage[] {
    const taken = this.waiting;
    this.waiting = [];
    return taken;
  }

  /** Calls `listener` when an interrupting message arrives; returns the unsubscribe. */
  onInterrupt(listener: () => void): () => void {
    this.interruptListeners.add(listener);
    return () => this.interruptListeners.delete(listener);
  }
}

/** The error an interrupting message aborts the pass's work with. */
export class SteeringInterrupt extends Error {
  constructor() {
    super("Interrupted by a message from the user");
    this.name = "AbortError";
  }
}

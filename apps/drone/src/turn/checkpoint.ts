// A turn's checkpoints: the engine's latest messages and state kept in the journal and sent to
// the server, so an interrupted turn resumes on any drone from where it was.
import type { EngineLogger, TurnState } from "@gadget/agent";
import { storableIssue } from "@gadget/protocol";
import type { TurnJournal } from "../streaming/journal.ts";
import type { DroneSocket } from "../streaming/sender.ts";

export class TurnCheckpoints {
  private inFlight: Promise<void> = Promise.resolve();

  constructor(
    private readonly turnId: string,
    private readonly journal: TurnJournal,
    private readonly socket: DroneSocket,
    private readonly logger: EngineLogger,
  ) {}

  /** Keeps the latest messages and state on disk and sends them, so the turn can resume anywhere. */
  record(state: TurnState): void {
    // The engine's state goes as JSON text when the database could not store it as it is.
    const storable = storableIssue(state, { maxStringLength: Number.POSITIVE_INFINITY })
      ? JSON.stringify(state)
      : state;
    const checkpoint = { turnId: this.turnId, messages: state.messages, state: storable };
    this.journal.recordCheckpoint(checkpoint);
    this.inFlight = this.inFlight.then(async () => {
      if (!this.socket.connected) return;
      try {
        await this.socket.timeout(15_000).emitWithAck("turn_checkpoint", checkpoint);
      } catch (error) {
        this.logger.warn(
          { turnId: this.turnId, err: String(error) },
          "checkpoint not acknowledged",
        );
      }
    });
  }

  /** Resolves once the checkpoints sent so far are acknowledged (or given up on). */
  settled(): Promise<void> {
    return this.inFlight;
  }
}

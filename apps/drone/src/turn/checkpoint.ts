// A turn's checkpoints: the engine's latest messages and state kept in the journal and sent to
// the server, so an interrupted turn resumes on any drone from where it was. A checkpoint goes
// out only once the events before it are stored: a resume from it then never loses one of them,
// and what a cut pass journaled after it is superseded by the rerun (decision 0046).
import type { EngineLogger, TurnState } from "@gadget/agent";
import { storableIssue } from "@gadget/protocol";
import type { TurnJournal } from "../streaming/journal.ts";
import type { DroneSocket, EventSender } from "../streaming/sender.ts";

export class TurnCheckpoints {
  private inFlight: Promise<void> = Promise.resolve();

  constructor(
    private readonly turnId: string,
    private readonly journal: TurnJournal,
    private readonly socket: DroneSocket,
    private readonly sender: Pick<EventSender, "stored" | "isRejected">,
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
    const before = this.sender.stored(this.journal.upcomingSeq - 1);
    this.inFlight = this.inFlight.then(async () => {
      await before;
      // Refused or superseded: the server's checkpoint is the one the turn resumes from.
      if (!this.socket.connected || this.sender.isRejected) return;
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

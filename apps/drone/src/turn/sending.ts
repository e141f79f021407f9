// How a turn's events reach the server: its journal streamed by an EventSender that waits out an
// unavailable server (the terminal says so) and stops the turn when the server refuses it, and
// its checkpoints sent after the events before them.
import type { EngineLogger } from "@gadget/agent";
import type { IWorkOrder } from "@gadget/protocol";
import type { EventJournal, TurnJournal } from "../streaming/journal.ts";
import { type DroneSocket, EventSender, type SenderOptions } from "../streaming/sender.ts";
import { TurnCheckpoints } from "./checkpoint.ts";
import type { TurnProgress } from "./progress.ts";

export interface SendingSettings {
  socket: DroneSocket;
  logger: EngineLogger;
  /** How events are sent: patience with an unavailable server, backoff, ack timeout. */
  sending?: Pick<
    SenderOptions,
    "patienceMs" | "retryDelayMs" | "maxRetryDelayMs" | "ackTimeoutMs" | "canSend"
  >;
  onProgress?: (progress: TurnProgress) => void;
}

/** A turn's journal, the sender that streams it to the server, and its checkpoints. */
export interface TurnStream {
  journal: TurnJournal;
  sender: EventSender;
  checkpoints: TurnCheckpoints;
}

/** Opens the turn's journal (numbered from the order's `nextSeq`) and what streams it. */
export async function openTurnStream(
  order: IWorkOrder,
  settings: SendingSettings & { journal: EventJournal },
  progress: TurnProgress,
  abort: AbortController,
  onRefusedEvent: (message: string) => void,
): Promise<TurnStream> {
  const journal = await settings.journal.open(order.turnId, order.nextSeq);
  const sender = turnSender(journal, progress, abort, settings, onRefusedEvent);
  const checkpoints = new TurnCheckpoints(
    order.turnId,
    journal,
    settings.socket,
    sender,
    settings.logger,
  );
  return { journal, sender, checkpoints };
}

/** The sender of the turn's journal: tells the terminal while the server is away. */
export function turnSender(
  journal: TurnJournal,
  progress: TurnProgress,
  abort: AbortController,
  settings: SendingSettings,
  onRefusedEvent: (message: string) => void,
): EventSender {
  const turnId = journal.turnId;
  return new EventSender(settings.socket, journal, {
    ...settings.sending,
    onRetrying: (since, reason) => {
      // The turn goes on; its events wait in the journal until the server can store them.
      progress.detail = since ? `server unavailable, retrying: ${reason}` : undefined;
      if (since) {
        settings.logger.warn({ turnId, reason }, "server unavailable; retrying");
      } else {
        settings.logger.info({ turnId }, "server stores events again");
      }
      settings.onProgress?.(progress);
    },
    onRejected: (error) => {
      settings.logger.warn(
        { turnId, code: error.code },
        `server refused the turn's events: ${error.message}`,
      );
      // The turn was taken from this drone (cancelled, interrupted, revoked): stop working on it.
      abort.abort(new Error(error.message));
    },
    onRefusedEvent: (_seq, message) => {
      // Its error event is in the journal already: the turn stops, as failed, not cancelled.
      settings.logger.warn({ turnId }, message);
      onRefusedEvent(message);
      abort.abort(new Error(message));
    },
  });
}

// Builds the forge events' parts from the server's: its requests to the forge go through the
// outbound policy, its turns through the turn service.
import type { Models } from "@gadget/db";
import type { Logger } from "@gadget/logging";
import type { SecretBox } from "../crypto/secret-box.ts";
import type { Lifecycle } from "../lifecycle.ts";
import type { OutboundPolicy } from "../outbound/outbound-policy.ts";
import type { Locks } from "../redis/locks.ts";
import type { TurnService } from "../turns/turn-service.ts";
import { ForgeEventTurns } from "./forge-event-turns.ts";
import { ForgeEvents } from "./forge-events.ts";

/** A forge's answer is read up to this much. */
const maxForgeAnswerBytes = 1024 * 1024;

export interface ForgeEventParts {
  models: Models;
  secretBox: SecretBox;
  locks: Locks;
  logger: Logger;
  lifecycle: Lifecycle;
  turns: TurnService;
  outbound: OutboundPolicy;
}

/** `publicUrl`: the server's public address, known once it listens. */
export function createForgeEvents(parts: ForgeEventParts, publicUrl: () => string): ForgeEvents {
  const fetch = parts.outbound.fetcher(maxForgeAnswerBytes);
  const turns = new ForgeEventTurns({ ...parts, fetch, publicUrl });
  return new ForgeEvents({ ...parts, turns, fetch, publicUrl });
}

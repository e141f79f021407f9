// What a provider is known to refuse or demand, remembered on it: a drone reports a quirk it
// learned (`provider_adapted`, or a check's probe), and every later work order for the provider
// carries it, so the next turn sends the adapted request at once.
import type { Models } from "@gadget/db";
import type { ProviderQuirk, ProviderQuirkCode, TurnEvent } from "@gadget/protocol";
import type { Types } from "mongoose";
import type { Locks } from "../redis/locks.ts";

/** The longest message kept with a quirk (the schema's limit). */
const maxMessageLength = 500;

/** Quirks that contradict each other: learning one forgets the other. */
const opposite: Partial<Record<ProviderQuirkCode, ProviderQuirkCode>> = {
  echo_reasoning: "no_reasoning_echo",
  no_reasoning_echo: "echo_reasoning",
};

export interface LearnedQuirk {
  quirk: ProviderQuirkCode;
  message: string;
}

/**
 * Runs `work`, which writes the provider, under its lock: every write to a Provider takes it, as
 * FerretDB v1 rewrites the whole document on each update (decision 0007) and a quirk learned by a
 * turn would otherwise undo the owner's edit made at the same moment, or the edit the quirk.
 */
export function withProviderLock<T>(
  locks: Locks,
  providerId: Types.ObjectId | string,
  work: () => Promise<T>,
): Promise<T> {
  return locks.with(`provider:${String(providerId)}`, work);
}

export class ProviderQuirks {
  constructor(
    private readonly models: Models,
    private readonly locks: Locks,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Remembers what the `provider_adapted` events among a turn's `events` say its drone learned. */
  async learnFrom(turnId: string, events: readonly TurnEvent[]): Promise<void> {
    const learned = events.flatMap((event) =>
      event.type === "provider_adapted" ? [event.data] : [],
    );
    await this.rememberForTurn(turnId, learned);
  }

  /** Remembers quirks a turn's drone learned on the turn's provider. */
  async rememberForTurn(turnId: string, learned: LearnedQuirk[]): Promise<void> {
    if (learned.length === 0) return;
    const turn = await this.models.ChatTurn.findById(turnId).select({ provider: 1 }).lean();
    if (turn) await this.remember(turn.provider, learned);
  }

  /**
   * Adds `learned` to the provider's quirks, one entry per code (a known code keeps its first
   * message). A read and a `$set` under the provider's lock, so two turns learning at once both
   * count.
   */
  async remember(providerId: Types.ObjectId | string, learned: LearnedQuirk[]): Promise<void> {
    if (learned.length === 0) return;
    await withProviderLock(this.locks, providerId, async () => {
      const provider = await this.models.Provider.findById(providerId).select({ quirks: 1 }).lean();
      if (!provider) return;
      let quirks: ProviderQuirk[] = [...(provider.quirks ?? [])];
      let changed = false;
      for (const { quirk, message } of learned) {
        if (quirks.some((known) => known.code === quirk)) continue;
        const contradicted = opposite[quirk];
        if (contradicted) quirks = quirks.filter((known) => known.code !== contradicted);
        quirks.push({
          code: quirk,
          message: message.slice(0, maxMessageLength),
          learnedAt: this.now().toISOString(),
        });
        changed = true;
      }
      if (changed)
        await this.models.Provider.updateOne({ _id: provider._id }, { $set: { quirks } });
    });
  }

  /** Forgets everything learned about the provider: the next turn sends the plain request. */
  async forget(providerId: Types.ObjectId | string): Promise<void> {
    await withProviderLock(this.locks, providerId, () =>
      this.models.Provider.updateOne({ _id: providerId }, { $set: { quirks: [] } }),
    );
  }
}

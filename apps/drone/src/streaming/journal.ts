// The outbound event journal: every event of a turn is numbered and written to disk before it is
// sent, and kept until the server acknowledges it, so a reconnect or a drone restart re-sends
// exactly what the server has not stored (Buildkite/GitHub runner style).
import { existsSync, rmSync } from "node:fs";
import { appendFile, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { AgentEvent } from "@gadget/protocol";

/** An event as the drone sends it: numbered per turn, timed when it happened. */
export type WireEvent = AgentEvent & { seq: number; at: string };

/** A user's message to the turn (steering), kept until the turn ends. */
export interface JournaledMessage {
  messageId: string;
  text: string;
  interrupt: boolean;
}

type JournalLine =
  | { event: WireEvent }
  | { acked: number }
  | { checkpoint: unknown }
  | { message: JournaledMessage };

/** Rewrite a turn's file once this many acknowledged events have piled up in it. */
const compactAfter = 2000;

/** One turn's journal. Appends are ordered; `pending()` is what the server has not acknowledged. */
export class TurnJournal {
  private events: WireEvent[] = [];
  private ackedSeq = 0;
  private nextSeq: number;
  private writes: Promise<void> = Promise.resolve();
  /** Lines waiting for the next disk write; one write carries all lines queued since the last. */
  private buffered: string[] = [];
  private ackedLinesInFile = 0;
  private latestCheckpoint: unknown;
  private readonly steering: JournaledMessage[] = [];
  /** Whether the turn's `done` was journaled: it ended on this drone. */
  private ended = false;

  constructor(
    readonly turnId: string,
    private readonly file: string,
    firstSeq: number,
  ) {
    this.nextSeq = firstSeq;
  }

  /** Loads a journal left on disk (after a restart). */
  static async load(turnId: string, file: string): Promise<TurnJournal> {
    const journal = new TurnJournal(turnId, file, 1);
    const text = await readFile(file, "utf8").catch(() => "");
    const bySeq = new Map<number, number>();
    for (const line of text.split("\n")) {
      if (!line) continue;
      let entry: JournalLine;
      try {
        entry = JSON.parse(line) as JournalLine;
      } catch {
        continue; // a torn last line from a crash mid-write
      }
      if ("event" in entry) {
        if (entry.event.type === "done") journal.ended = true;
        // A later line of the same seq replaced it (an event the server could not take).
        const at = bySeq.get(entry.event.seq);
        if (at === undefined) {
          bySeq.set(entry.event.seq, journal.events.length);
          journal.events.push(entry.event);
        } else {
          journal.events[at] = entry.event;
        }
      } else if ("acked" in entry) journal.ackedSeq = Math.max(journal.ackedSeq, entry.acked);
      else if ("checkpoint" in entry) journal.latestCheckpoint = entry.checkpoint;
      else if ("message" in entry) journal.steering.push(entry.message);
    }
    journal.events = journal.events.filter((event) => event.seq > journal.ackedSeq);
    const last = journal.events.at(-1)?.seq ?? journal.ackedSeq;
    journal.nextSeq = last + 1;
    return journal;
  }

  /** The seq the next appended event gets. */
  get upcomingSeq(): number {
    return this.nextSeq;
  }

  get acknowledgedSeq(): number {
    return this.ackedSeq;
  }

  /** Whether the turn ended on this drone (its `done` is journaled, sent or not). */
  get finished(): boolean {
    return this.ended;
  }

  /** The last checkpoint recorded (messages + engine state), if any. */
  get checkpoint(): unknown {
    return this.latestCheckpoint;
  }

  /** Numbers an event, queues its write to disk, and returns it. */
  append(event: AgentEvent): WireEvent {
    const wire = { ...event, seq: this.nextSeq++, at: new Date().toISOString() } as WireEvent;
    if (event.type === "done") this.ended = true;
    this.events.push(wire);
    this.write({ event: wire });
    return wire;
  }

  /**
   * Puts `event` in place of the pending event numbered `seq` (one the server cannot take), on
   * disk too. Returns the new wire event, or null when no pending event has that seq.
   */
  replace(seq: number, event: AgentEvent): WireEvent | null {
    const index = this.events.findIndex((pending) => pending.seq === seq);
    if (index === -1) return null;
    const wire = { ...event, seq, at: (this.events[index] as WireEvent).at } as WireEvent;
    this.events[index] = wire;
    this.write({ event: wire });
    return wire;
  }

  /**
   * After the turn waited for this drone (its connection dropped): the server stored events up to
   * `storedUpTo` and numbered its own after them; the rest continue at `nextSeq`, on disk too.
   */
  rebase(storedUpTo: number, nextSeq: number): void {
    const unsent = this.events.filter((event) => event.seq > storedUpTo);
    this.events = unsent.map((event, index) => ({ ...event, seq: nextSeq + index }) as WireEvent);
    this.ackedSeq = nextSeq - 1;
    this.nextSeq = nextSeq + unsent.length;
    this.compact();
  }

  /** Records the turn's latest messages/state, kept until the turn's journal is removed. */
  recordCheckpoint(checkpoint: unknown): void {
    this.latestCheckpoint = checkpoint;
    this.write({ checkpoint });
  }

  /** Writes a user's message to the turn to disk; resolves once it is there. */
  async recordMessage(message: JournaledMessage): Promise<void> {
    this.steering.push(message);
    this.write({ message });
    await this.writes;
  }

  /** The users' messages journaled for the turn, oldest first. */
  get messages(): readonly JournaledMessage[] {
    return this.steering;
  }

  /** Events the server has not acknowledged, oldest first. */
  pending(limit = Number.POSITIVE_INFINITY): WireEvent[] {
    return this.events.slice(0, limit);
  }

  /** The server stored everything up to `lastSeq`. */
  acknowledge(lastSeq: number): void {
    if (lastSeq <= this.ackedSeq) return;
    const dropped = this.events.findIndex((event) => event.seq > lastSeq);
    const count = dropped === -1 ? this.events.length : dropped;
    this.events.splice(0, count);
    this.ackedSeq = lastSeq;
    this.ackedLinesInFile += count;
    if (this.ackedLinesInFile >= compactAfter) this.compact();
    else this.write({ acked: lastSeq });
  }

  /** Resolves once everything appended so far is on disk. */
  flushed(): Promise<void> {
    return this.writes;
  }

  /** Deletes the journal file (the turn is over and fully acknowledged). */
  async remove(): Promise<void> {
    await this.writes;
    await rm(this.file, { force: true });
  }

  /**
   * Deletes the file of a journal loaded from disk at once, before any later `EventJournal.open`
   * of the same turn can create it again. Only for a journal nothing is written to.
   */
  discard(): void {
    rmSync(this.file, { force: true });
  }

  private write(line: JournalLine): void {
    this.buffered.push(`${JSON.stringify(line)}\n`);
    if (this.buffered.length > 1) return; // a write is already queued and will take this line too
    this.writes = this.writes.then(() => {
      const text = this.buffered.join("");
      this.buffered = [];
      return appendFile(this.file, text, { mode: 0o600 });
    });
  }

  private compact(): void {
    const lines: JournalLine[] = [{ acked: this.ackedSeq }];
    if (this.latestCheckpoint !== undefined) lines.push({ checkpoint: this.latestCheckpoint });
    for (const message of this.steering) lines.push({ message });
    for (const event of this.events) lines.push({ event });
    const text = lines.map((line) => `${JSON.stringify(line)}\n`).join("");
    this.ackedLinesInFile = 0;
    // The rewrite replaces everything, including lines still buffered for appending.
    this.buffered = [];
    this.writes = this.writes.then(() => writeFile(this.file, text, { mode: 0o600 }));
  }
}

/** The folder of turn journals: one JSON-lines file per turn. */
export class EventJournal {
  constructor(readonly directory: string) {}

  private fileOf(turnId: string): string {
    return path.join(this.directory, `${turnId}.jsonl`);
  }

  /**
   * Starts a turn's journal at `firstSeq`, the server's numbering. A file left by an earlier run
   * of the same turn is replaced: the server stored what it acknowledged, and numbered its own
   * events (e.g. `interrupted`) after that, so stale unacknowledged events must not come back.
   */
  async open(turnId: string, firstSeq: number): Promise<TurnJournal> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    const file = this.fileOf(turnId);
    if (existsSync(file)) await rm(file, { force: true });
    return new TurnJournal(turnId, file, firstSeq);
  }

  /** Journals left by an earlier run of the drone, to re-send after a restart. */
  async leftovers(): Promise<TurnJournal[]> {
    const names = await readdir(this.directory).catch(() => [] as string[]);
    const journals: TurnJournal[] = [];
    for (const name of names) {
      if (!name.endsWith(".jsonl")) continue;
      journals.push(
        await TurnJournal.load(name.slice(0, -".jsonl".length), path.join(this.directory, name)),
      );
    }
    return journals;
  }
}

// The one reader of streamed Chat Completions chunks, for every OpenAI-compatible provider: it
// turns each chunk into the text and thinking to show now, and the whole stream into a reply.
import type { ToolCall } from "@gadget/protocol";
import type { ChatChunk } from "./chat-model.ts";
import { streamedError } from "./streamed-error.ts";

/** A piece of the reply to show as it arrives. */
export interface StreamPiece {
  kind: "text" | "thinking";
  text: string;
}

/** What a whole stream said. */
export interface StreamReading {
  text: string;
  thinking: string;
  toolCalls: ToolCall[];
  /** The usage of the last chunk that carried one; undefined when none did. */
  usage: ChatChunk["usage"] | undefined;
  finishReason: string | null;
  /** Opaque fields to send back on the assistant message (`reasoning_details`). */
  providerFields: Record<string, unknown> | undefined;
}

export interface StreamReaderOptions {
  /** Prefix for the ids of calls a provider sends without one: `<prefix>-<position>`. */
  callIdPrefix: string;
}

type Fields = Record<string, unknown>;

interface CallDraft {
  id: string;
  name: string;
  arguments: string;
  providerFields: Fields | undefined;
}

/**
 * Reads a stream chunk by chunk. `read` returns what to show for each chunk; `finish` returns
 * what was held back (a tag that might open a thinking block) and the whole reply.
 * @example
 * const reader = new StreamReader({ callIdPrefix: "call-1" });
 * for await (const chunk of stream) for (const piece of reader.read(chunk)) show(piece);
 * const { pieces, reading } = reader.finish();
 */
export class StreamReader {
  private readonly options: StreamReaderOptions;
  private readonly leading = new LeadingThinking();
  private text = "";
  private thinking = "";
  private finishReason: string | null = null;
  private usage: ChatChunk["usage"] | undefined;
  private readonly calls: CallDraft[] = [];
  private readonly callsByIndex = new Map<number, CallDraft>();
  private readonly callsById = new Map<string, CallDraft>();
  private readonly details = new ReasoningDetails();

  constructor(options: StreamReaderOptions) {
    this.options = options;
  }

  /** Takes one chunk; returns the text and thinking it adds, in order. Throws a streamed error. */
  read(chunk: ChatChunk): StreamPiece[] {
    const carried = (chunk as { error?: unknown }).error;
    if (carried) throw streamedError(carried);
    // Some providers send usage twice or as a running total: the last one is the answer.
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return [];
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    const delta = choice.delta as Fields | undefined;
    if (!delta) return [];
    const pieces: StreamPiece[] = [];
    const reasoning =
      typeof delta.reasoning_content === "string" ? delta.reasoning_content : delta.reasoning;
    if (typeof reasoning === "string" && reasoning.length > 0)
      pieces.push({ kind: "thinking", text: reasoning });
    const content = delta.content;
    if (typeof content === "string") {
      if (content.length > 0) this.leading.read(content, pieces);
    } else if (Array.isArray(content)) {
      this.readContentParts(content, pieces);
    }
    if (Array.isArray(delta.tool_calls)) for (const part of delta.tool_calls) this.readCall(part);
    if (Array.isArray(delta.reasoning_details)) this.details.add(delta.reasoning_details);
    return this.keep(pieces);
  }

  /** Ends the stream: what was held back, and the reply. */
  finish(): { pieces: StreamPiece[]; reading: StreamReading } {
    const pieces: StreamPiece[] = [];
    this.leading.finish(pieces);
    const toolCalls: ToolCall[] = [];
    this.calls.forEach((call, position) => {
      if (!call.name) return;
      toolCalls.push({
        id: call.id || `${this.options.callIdPrefix}-${position + 1}`,
        name: call.name,
        arguments: call.arguments,
        ...(call.providerFields ? { providerFields: call.providerFields } : {}),
      });
    });
    const kept = this.keep(pieces);
    const details = this.details.list();
    return {
      pieces: kept,
      reading: {
        text: this.text,
        thinking: this.thinking,
        toolCalls,
        usage: this.usage,
        finishReason: this.finishReason,
        providerFields: details.length > 0 ? { reasoning_details: details } : undefined,
      },
    };
  }

  /** Mistral's typed content: `[{type:"thinking", thinking:[{type:"text", text}]}, {type:"text", text}]`. */
  private readContentParts(parts: unknown[], pieces: StreamPiece[]): void {
    for (const part of parts) {
      if (!isRecord(part)) continue;
      if (part.type === "text" && typeof part.text === "string") {
        if (part.text.length > 0) this.leading.read(part.text, pieces);
      } else if (part.type === "thinking") {
        const text = textOf(part.thinking);
        if (text.length > 0) pieces.push({ kind: "thinking", text });
      }
    }
  }

  /**
   * One tool-call fragment. It belongs to the call with its `index` when it has one (unless it
   * brings a different non-empty id), else to the call with its (non-empty) `id`, else to the
   * latest call.
   */
  private readCall(part: unknown): void {
    if (!isRecord(part)) return;
    const id = typeof part.id === "string" && part.id.length > 0 ? part.id : undefined;
    const call = this.callFor(part.index, id);
    if (id && !call.id) {
      call.id = id;
      this.callsById.set(id, call);
    }
    const fn = isRecord(part.function) ? part.function : undefined;
    const name = typeof fn?.name === "string" ? fn.name : "";
    // Most providers send the whole name once; some repeat it in every chunk, a few split it.
    if (name && name !== call.name) call.name += name;
    if (typeof fn?.arguments === "string") call.arguments += fn.arguments;
    else if (isRecord(fn?.arguments)) call.arguments += JSON.stringify(fn.arguments);
    if (isRecord(part.extra_content)) {
      call.providerFields = {
        ...call.providerFields,
        extra_content: merge(call.providerFields?.extra_content, part.extra_content),
      };
    }
  }

  private callFor(index: unknown, id: string | undefined): CallDraft {
    if (typeof index === "number") {
      const known = this.callsByIndex.get(index);
      // Gemini numbers parallel calls all 0 and tells them apart by id: a new id is a new call.
      if (known && !(id && known.id && id !== known.id)) return known;
      const call = this.open();
      this.callsByIndex.set(index, call);
      return call;
    }
    if (id) return this.callsById.get(id) ?? this.open();
    return this.calls.at(-1) ?? this.open();
  }

  private open(): CallDraft {
    const call: CallDraft = { id: "", name: "", arguments: "", providerFields: undefined };
    this.calls.push(call);
    return call;
  }

  /** Records the pieces in the reply and joins neighbours of one kind into one event. */
  private keep(pieces: StreamPiece[]): StreamPiece[] {
    const joined: StreamPiece[] = [];
    for (const piece of pieces) {
      if (piece.kind === "text") this.text += piece.text;
      else this.thinking += piece.text;
      const last = joined.at(-1);
      if (last && last.kind === piece.kind) last.text += piece.text;
      else joined.push({ ...piece });
    }
    return joined;
  }
}

const openingTags = ["<think>", "<thinking>", "<reasoning>"];

/**
 * Splits the thinking blocks a model writes at the very start of its answer (after optional
 * whitespace) off the answer: `<think>…</think>`, `<thinking>…</thinking>`, `<reasoning>…</reasoning>`.
 * Several blocks in a row are one thought (Bedrock wraps each reasoning delta in its own tags).
 * Tags may arrive split across chunks, so text that could still be (part of) a tag is held
 * back until the next chunk shows what it is. Whitespace around the thought is dropped.
 */
class LeadingThinking {
  private state: "start" | "inside" | "answer" = "start";
  private held = "";
  private closing = "";
  /** Some thinking was shown: later whitespace inside the thought is kept. */
  private started = false;
  /** A block has closed: what follows is another block or the answer, whitespace first dropped. */
  private afterBlock = false;
  /** Whitespace that ended the last block: part of the thought only if another block follows. */
  private gap = "";

  read(content: string, out: StreamPiece[]): void {
    if (this.state === "answer") out.push({ kind: "text", text: content });
    else if (this.state === "start") this.readStart(content, out);
    else this.readInside(content, out);
  }

  finish(out: StreamPiece[]): void {
    if (this.state === "start") this.answer(out);
    // A block the stream ended inside (the model ran out of tokens mid-thought) is thinking.
    if (this.state === "inside") this.think(this.held.trimEnd(), out);
    this.held = "";
    this.state = "answer";
  }

  private readStart(content: string, out: StreamPiece[]): void {
    this.held += content;
    const trimmed = this.held.trimStart();
    if (!trimmed) return;
    const tag = openingTags.find((candidate) => trimmed.startsWith(candidate));
    if (tag) {
      this.state = "inside";
      this.closing = `</${tag.slice(1)}`;
      this.held = "";
      if (this.started) this.think(this.gap, out);
      this.gap = "";
      this.readInside(trimmed.slice(tag.length), out);
      return;
    }
    if (openingTags.some((candidate) => candidate.startsWith(trimmed))) return;
    this.answer(out);
  }

  /** What is held is the start of the answer. */
  private answer(out: StreamPiece[]): void {
    const text = this.afterBlock ? this.held.trimStart() : this.held;
    if (text) out.push({ kind: "text", text });
    this.held = "";
    this.state = "answer";
  }

  private readInside(content: string, out: StreamPiece[]): void {
    this.held += content;
    const end = this.held.indexOf(this.closing);
    if (end >= 0) {
      const rest = this.held.slice(end + this.closing.length);
      const thought = this.held.slice(0, end);
      const kept = thought.trimEnd();
      this.think(kept, out);
      this.gap = thought.slice(kept.length);
      this.held = "";
      this.state = "start";
      this.afterBlock = true;
      if (rest) this.readStart(rest, out);
      return;
    }
    // Hold back what may be the start of the closing tag, and whitespace that may end the block.
    let partial = Math.min(this.closing.length - 1, this.held.length);
    while (partial > 0 && !this.closing.startsWith(this.held.slice(-partial))) partial -= 1;
    const cut = this.held.slice(0, this.held.length - partial).trimEnd().length;
    this.think(this.held.slice(0, cut), out);
    this.held = this.held.slice(cut);
  }

  private think(text: string, out: StreamPiece[]): void {
    const thought = this.started ? text : text.trimStart();
    if (!thought) return;
    this.started = true;
    out.push({ kind: "thinking", text: thought });
  }
}

/**
 * OpenRouter's `reasoning_details`, accumulated as OpenRouter streams them: each delta carries
 * fragments keyed by `index`; fragments of one index (and type) are one detail whose `text`,
 * `summary` and `data` are concatenated, and whose other fields (`signature`, `id`, `format`)
 * arrive once, often in the last fragment. Sent back whole, in order, on the next request.
 */
class ReasoningDetails {
  private readonly items: Fields[] = [];
  private readonly byIndex = new Map<number, Fields>();

  add(fragments: unknown[]): void {
    for (const fragment of fragments) {
      if (!isRecord(fragment)) continue;
      const index = typeof fragment.index === "number" ? fragment.index : undefined;
      const known = index === undefined ? undefined : this.byIndex.get(index);
      if (!known || (fragment.type !== undefined && fragment.type !== known.type)) {
        const item = { ...fragment };
        this.items.push(item);
        if (index !== undefined) this.byIndex.set(index, item);
        continue;
      }
      for (const [key, value] of Object.entries(fragment)) {
        const current = known[key];
        if (concatenated.has(key) && typeof value === "string" && typeof current === "string")
          known[key] = current + value;
        else if (value !== null && value !== undefined && value !== "") known[key] = value;
        else if (!(key in known)) known[key] = value;
      }
    }
  }

  list(): Fields[] {
    return this.items;
  }
}

const concatenated = new Set(["text", "summary", "data"]);

function isRecord(value: unknown): value is Fields {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The text of a thinking part: a string, or a list of `{type:"text", text}` parts. */
function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (!Array.isArray(value)) return "";
  return value
    .map((part) => (isRecord(part) && typeof part.text === "string" ? part.text : ""))
    .join("");
}

/** Deep-merges plain objects (a later fragment adds to an earlier one); anything else replaces. */
function merge(earlier: unknown, later: Fields): Fields {
  if (!isRecord(earlier)) return later;
  const merged: Fields = { ...earlier };
  for (const [key, value] of Object.entries(later))
    merged[key] = isRecord(value) ? merge(merged[key], value) : value;
  return merged;
}

// The MCP SDK's stdio framing over a server the sandbox started: the SDK reads and writes the
// messages (ReadBuffer, serializeMessage); this only connects them to the confined process's pipes.

import type { ConfinedProcess } from "@gadget/sandbox";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** Last characters of a server's stderr kept to explain why it failed. */
const stderrKept = 2000;

export class ConfinedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private readonly buffer = new ReadBuffer();
  private stderrTail = "";
  private closed = false;

  constructor(private readonly server: ConfinedProcess) {}

  /** The end of what the server wrote to stderr (its reason for failing, usually). */
  get stderr(): string {
    return this.stderrTail;
  }

  async start(): Promise<void> {
    const { child } = this.server;
    child.stdout.on("data", (chunk: Buffer) => {
      this.buffer.append(chunk);
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.buffer.readMessage();
        } catch (error) {
          this.onerror?.(error as Error);
          continue;
        }
        if (!message) break;
        this.onmessage?.(message);
      }
    });
    child.stderr.on("data", (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-stderrKept);
    });
    child.stdin.on("error", (error) => this.onerror?.(error));
    void this.server.exited.then(() => this.ended());
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.server.child.stdin;
    if (this.closed || stdin.destroyed) {
      // Coded like a write to a closed pipe: the caller starts the server again.
      throw Object.assign(new Error("the MCP server is not running"), { code: "EPIPE" });
    }
    // Settled by the write's own callback: a server alive with its input closed fails the write
    // (EPIPE) only then, and the call must fail with it (and the server start again) rather
    // than wait for an answer that never comes.
    await new Promise<void>((resolve, reject) => {
      stdin.write(serializeMessage(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  async close(): Promise<void> {
    await this.server.stop();
    this.ended();
  }

  private ended(): void {
    if (this.closed) return;
    this.closed = true;
    this.buffer.clear();
    this.onclose?.();
  }
}

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
    if (this.closed || stdin.destroyed) throw new Error("the MCP server is not running");
    await new Promise<void>((resolve, reject) => {
      const ok = stdin.write(serializeMessage(message), (error) => (error ? reject(error) : null));
      if (ok) resolve();
      else stdin.once("drain", () => resolve());
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

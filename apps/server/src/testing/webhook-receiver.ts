// A webhook receiver on loopback, as a user would write one: it reads the raw body, checks the
// signature over those bytes with the secret, and answers what the test scripted.
import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { WebhookPayload } from "@gadget/protocol";

export interface ReceivedDelivery {
  headers: http.IncomingHttpHeaders;
  raw: string;
  payload: WebhookPayload;
  /** Whether `X-Gadget-Signature` is the HMAC of `raw` under the receiver's secret. */
  verified: boolean;
  /** `performance.now()` when the body was read. */
  at: number;
}

export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  /** Status codes to answer, in order; once used up, 200. */
  answers: number[] = [];
  /** The secret to check signatures with (known once the webhook is created). */
  secret = "";
  private waiters: Array<() => void> = [];

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(path = "/hook"): Promise<WebhookReceiver> {
    let receiver: WebhookReceiver | undefined;
    const server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        receiver?.record(request.headers, raw);
        response.statusCode = receiver?.answers.shift() ?? 200;
        response.end("ok");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    receiver = new WebhookReceiver(server, `http://127.0.0.1:${port}${path}`);
    return receiver;
  }

  private record(headers: http.IncomingHttpHeaders, raw: string) {
    const given = String(headers["x-gadget-signature"] ?? "");
    const expected = `sha256=${createHmac("sha256", this.secret).update(raw).digest("hex")}`;
    const verified =
      given.length === expected.length &&
      timingSafeEqual(Buffer.from(given), Buffer.from(expected));
    let payload: WebhookPayload;
    try {
      payload = JSON.parse(raw) as WebhookPayload;
    } catch {
      payload = { event: "ping", turn: null, session: null, project: null, link: null };
    }
    this.received.push({ headers, raw, payload, verified, at: performance.now() });
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Deliveries of `event` (and of `turnId`, when given). */
  of(event: string, turnId?: string): ReceivedDelivery[] {
    return this.received.filter(
      (item) =>
        item.payload.event === event && (turnId === undefined || item.payload.turn?._id === turnId),
    );
  }

  /** Resolves once `count` deliveries arrived in all, or rejects after `timeoutMs`. */
  async waitForCount(count: number, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.received.length < count) {
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`expected ${count} deliveries, got ${this.received.length} in time`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

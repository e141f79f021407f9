// Every request the server itself sends out (provider checks today; webhooks and forge APIs
// later) goes through here. A user chooses the URL, so without a policy the server would be their
// window into its own network: loopback, private, link-local, unique-local and metadata addresses
// are refused unless the operator allows them; the connection goes to exactly the address that
// was checked (the check runs in the socket's own name lookup, so a second DNS answer cannot
// differ); bodies are counted and cut off; and every failure reads the same, so answers reveal
// nothing about which ports or hosts exist.
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import { isIP } from "node:net";
import { Unreachable } from "@gadget/agent";
// One definition of "public address" for the server's requests and the drone's network allowlist.
import { isPublicAddress } from "@gadget/sandbox";

export interface OutboundPolicyOptions {
  /** Whether loopback, private, link-local and metadata addresses may be called. */
  allowPrivateNetwork: boolean;
  /** The whole request, answer included; default 10 000 ms. */
  timeoutMs?: number;
}

export interface OutboundAnswer {
  status: number;
  /** Null when the body passed the byte limit (reading stopped there). */
  body: Buffer | null;
}

/** What every failure says: the same words for a refused address, a closed port or a timeout. */
export const unreachableWords = "no answer from that address";

export class OutboundPolicy {
  constructor(private readonly options: OutboundPolicyOptions) {}

  /** Why `url` may not be called at all, from its text alone, or null. */
  shapeRefusal(url: URL): string | null {
    if (url.protocol !== "http:" && url.protocol !== "https:") return "only http and https";
    if (url.username || url.password) return "no user name or password in the address";
    return null;
  }

  /**
   * `GET url`, reading at most `maxBytes` of the answer. Throws `Unreachable` with the same
   * words whatever went wrong before an HTTP answer.
   * @example const answer = await outbound.get(new URL("https://api.openai.com/v1/models"), headers, 1 << 20);
   */
  async get(url: URL, headers: Record<string, string>, maxBytes: number): Promise<OutboundAnswer> {
    if (this.shapeRefusal(url)) throw new Unreachable(unreachableWords);
    const literal = url.hostname.replace(/^\[|\]$/g, "");
    // A literal address is connected to without a lookup, so it is checked here.
    if (isIP(literal) !== 0 && !this.allowed(literal)) throw new Unreachable(unreachableWords);
    const client = url.protocol === "https:" ? https : http;
    return new Promise<OutboundAnswer>((resolve, reject) => {
      const request = client.get(url, {
        headers,
        lookup: this.lookup,
        // No connection reuse: every request's address is looked up and checked again.
        agent: false,
        timeout: this.options.timeoutMs ?? 10_000,
      });
      const deadline = setTimeout(
        () => request.destroy(new Error("deadline")),
        this.options.timeoutMs ?? 10_000,
      );
      const fail = () => {
        clearTimeout(deadline);
        reject(new Unreachable(unreachableWords));
      };
      request.on("timeout", () => request.destroy(new Error("timeout")));
      request.on("error", fail);
      request.on("response", (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let total = 0;
        let tooLarge = false;
        response.on("data", (chunk: Buffer) => {
          total += chunk.byteLength;
          if (total > maxBytes) {
            tooLarge = true;
            // Stop reading and close the connection: nothing past the limit is buffered.
            response.destroy();
            return;
          }
          chunks.push(chunk);
        });
        const finish = () => {
          clearTimeout(deadline);
          request.removeListener("error", fail);
          request.on("error", () => undefined);
          resolve({
            status: response.statusCode ?? 0,
            body: tooLarge ? null : Buffer.concat(chunks),
          });
        };
        response.on("end", finish);
        response.on("close", () => {
          if (tooLarge) finish();
          else if (!response.complete) fail();
        });
      });
    });
  }

  /**
   * A `fetch` under this policy, for an SDK (the check's probe hands it to the openai client):
   * the same address checks, the same words for every failure, the whole exchange within the
   * timeout, and at most `maxBytes` of an answer (a longer one ends in an error). No redirects.
   * @example const fetch = outbound.fetcher(256 * 1024); await fetch("https://api.openai.com/v1/chat/completions", init);
   */
  fetcher(maxBytes: number): typeof fetch {
    return async (input, init) => {
      const url = new URL(
        typeof input === "string" ? input : input instanceof URL ? input.href : input.url,
      );
      if (this.shapeRefusal(url)) throw new Unreachable(unreachableWords);
      const literal = url.hostname.replace(/^\[|\]$/g, "");
      if (isIP(literal) !== 0 && !this.allowed(literal)) throw new Unreachable(unreachableWords);
      const body = init?.body;
      if (body !== undefined && body !== null && typeof body !== "string")
        throw new TypeError("outbound requests send text bodies only");
      const headers: Record<string, string> = {};
      new Headers(init?.headers).forEach((value, name) => {
        headers[name] = value;
      });
      const client = url.protocol === "https:" ? https : http;
      const timeoutMs = this.options.timeoutMs ?? 10_000;
      return new Promise<Response>((resolve, reject) => {
        const request = client.request(url, {
          method: init?.method ?? "GET",
          headers,
          lookup: this.lookup,
          agent: false,
          timeout: timeoutMs,
        });
        const deadline = setTimeout(() => request.destroy(new Error("deadline")), timeoutMs);
        const signal = init?.signal;
        const onAbort = () => request.destroy(new Error("aborted"));
        signal?.addEventListener("abort", onAbort, { once: true });
        const settle = () => {
          clearTimeout(deadline);
          signal?.removeEventListener("abort", onAbort);
        };
        request.on("timeout", () => request.destroy(new Error("timeout")));
        request.on("error", () => {
          settle();
          reject(new Unreachable(unreachableWords));
        });
        request.on("response", (response: IncomingMessage) => {
          const status = response.statusCode ?? 0;
          const answerHeaders = new Headers();
          for (const [name, value] of Object.entries(response.headers)) {
            if (typeof value === "string") answerHeaders.set(name, value);
            else if (Array.isArray(value))
              for (const item of value) answerHeaders.append(name, item);
          }
          let total = 0;
          const stream = new ReadableStream<Uint8Array>({
            start(controller) {
              response.on("data", (chunk: Buffer) => {
                total += chunk.byteLength;
                if (total > maxBytes) {
                  // Nothing past the limit is read or buffered.
                  settle();
                  response.destroy();
                  controller.error(new Unreachable("the answer was too large"));
                  return;
                }
                controller.enqueue(new Uint8Array(chunk));
              });
              response.on("end", () => {
                settle();
                controller.close();
              });
              response.on("close", () => {
                if (response.complete || total > maxBytes) return;
                settle();
                controller.error(new Unreachable(unreachableWords));
              });
            },
            cancel() {
              settle();
              response.destroy();
            },
          });
          const empty = status === 204 || status === 304 || init?.method === "HEAD";
          resolve(new Response(empty ? null : stream, { status, headers: answerHeaders }));
        });
        request.end(body ?? undefined);
      });
    };
  }

  /**
   * Why a URL saved for later (a webhook's) would be refused today, or null: its shape, or a
   * name whose addresses are not all allowed. A name that does not resolve now is not refused
   * (it may later); every request checks again in its own lookup.
   * @example const problem = await outbound.savedRefusal(new URL(body.url));
   */
  async savedRefusal(url: URL): Promise<string | null> {
    const shape = this.shapeRefusal(url);
    if (shape) return shape;
    if (this.options.allowPrivateNetwork) return null;
    const literal = url.hostname.replace(/^\[|\]$/g, "");
    const refused =
      "it points to a loopback, private or link-local address, which this server does not call";
    if (isIP(literal) !== 0) return this.allowed(literal) ? null : refused;
    const addresses = await new Promise<LookupAddress[]>((resolve) =>
      dnsLookup(literal, { all: true }, (error, found) => resolve(error ? [] : found)),
    );
    return addresses.every(({ address }) => this.allowed(address)) ? null : refused;
  }

  private allowed(address: string): boolean {
    return this.options.allowPrivateNetwork || isPublicAddress(address);
  }

  /** The socket's name lookup: every address of the name must be allowed, else none is used. */
  private readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, "", 0);
      if (addresses.length === 0 || !addresses.every(({ address }) => this.allowed(address))) {
        const refused = Object.assign(new Error("address not allowed"), { code: "EREFUSED" });
        return callback(refused, "", 0);
      }
      if (options.all) {
        (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, addresses);
      } else {
        const [first] = addresses as [LookupAddress];
        callback(null, first.address, first.family);
      }
    });
  };
}

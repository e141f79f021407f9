// A TCP link a test can cut: a drone connects to the server through it, and `cut()` drops every
// connection and refuses new ones until `restore()`, as a pulled cable or a dead Wi-Fi would.
import { connect, createServer, type Socket } from "node:net";

export interface NetworkLink {
  /** `http://127.0.0.1:<port>`: give it to the drone instead of the server's URL. */
  url: string;
  /** Drops every connection now and refuses new ones. */
  cut(): void;
  /** Lets connections through again. */
  restore(): void;
  close(): Promise<void>;
}

/**
 * Listens on a free port and forwards each connection to `target` (`http://host:port`).
 * @example const link = await startNetworkLink(server.url); link.cut(); link.restore();
 */
export async function startNetworkLink(target: string): Promise<NetworkLink> {
  const { hostname, port } = new URL(target);
  const open = new Set<Socket>();
  let down = false;
  const listener = createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(port), hostname);
    open.add(client);
    open.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const address = listener.address();
  if (!address || typeof address === "string") throw new Error("network link has no port");
  return {
    url: `http://127.0.0.1:${address.port}`,
    cut() {
      down = true;
      for (const socket of open) socket.destroy();
      open.clear();
    },
    restore() {
      down = false;
    },
    close() {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => listener.close(() => resolve()));
    },
  };
}

// A machine with neither mongod nor Go gets MongoDB through mongodb-memory-server; when its
// binary cannot be downloaded, the error says what else would work.
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startMemoryMongo } from "./services.ts";
import { freePort } from "./wire.ts";

// mongodb-memory-server's own settings (it reads them from the environment); a mirror over
// plain HTTP needs USE_HTTP, and a single retry is enough here.
const variables = ["MONGOMS_DOWNLOAD_URL", "MONGOMS_USE_HTTP", "MONGOMS_MAX_RETRIES"] as const;
const previous = new Map(variables.map((name) => [name, process.env[name]]));

afterEach(() => {
  for (const [name, value] of previous) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe("startMemoryMongo", () => {
  it("says what else would work when the MongoDB binary cannot be downloaded", async () => {
    // A download server that has no MongoDB: what a machine without internet access meets.
    const asked: string[] = [];
    const mirror = createServer((request, response) => {
      asked.push(request.url ?? "");
      response.writeHead(404).end("not here");
    });
    await new Promise<void>((resolve) => mirror.listen(0, "127.0.0.1", resolve));
    const { port } = mirror.address() as AddressInfo;
    process.env.MONGOMS_DOWNLOAD_URL = `http://127.0.0.1:${port}/mongodb-linux-x86_64-7.0.14.tgz`;
    process.env.MONGOMS_USE_HTTP = "true";
    process.env.MONGOMS_MAX_RETRIES = "1";
    const downloadDir = await mkdtemp(path.join(tmpdir(), "gadget-memory-mongo-"));
    try {
      const started = startMemoryMongo(await freePort(), { downloadDir });
      await expect(started).rejects.toThrow(
        /Could not start MongoDB through mongodb-memory-server \(.+\)\. Without internet access to download its binary, set MONGO_URL to a MongoDB 6\+, put mongod on PATH, or install Go/,
      );
      expect(asked).toContain("/mongodb-linux-x86_64-7.0.14.tgz");
    } finally {
      await new Promise<void>((resolve) => mirror.close(() => resolve()));
      await rm(downloadDir, { recursive: true, force: true });
    }
  });
});

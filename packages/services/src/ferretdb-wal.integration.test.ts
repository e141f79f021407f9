// The test FerretDB copies its write-ahead log back into the database in the background
// (tools/ferretdb/patches/…/pool/opendb.go), not inside the commit that crosses 1,000 pages.
import { statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import mongoose from "mongoose";
import { describe, expect, inject, it } from "vitest";
import { findRepoRoot } from "./repo-root.ts";
import { databaseUrl, startServices } from "./services.ts";

describe("FerretDB test server", () => {
  it("checkpoints its WAL in the background, well before the automatic checkpoint", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "gadget-wal-"));
    const services = await startServices({
      rootDir: findRepoRoot(),
      dataDir,
      redisUrl: inject("redisUrl"),
    });
    const connection = mongoose.createConnection();
    try {
      if (services.mongoKind !== "ferretdb") return; // a real mongod has no such file
      await connection.openUri(databaseUrl(services.mongoUrl, "wal"));
      const items = connection.collection("items");
      // About 2 MB: in the WAL alone, far under its automatic checkpoint (10,000 pages).
      for (let round = 0; round < 8; round++) {
        await items.insertMany(
          Array.from({ length: 500 }, (_, index) => ({ round, index, text: "x".repeat(400) })),
        );
      }
      const file = path.join(dataDir, "ferretdb", "wal.sqlite");
      const deadline = Date.now() + 5_000;
      while (statSync(file).size < 1_000_000 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(statSync(file).size).toBeGreaterThan(1_000_000);
    } finally {
      await connection.close();
      await services.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

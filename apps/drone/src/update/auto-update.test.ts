// `start --auto-update`'s checks against a real HTTP server handing out packages: a package whose
// bytes are not the ones the server describes is refused and reported (for the server's drones
// page) once, however often it is checked; a version refused before is reported with its reason.
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { silentLogger } from "@gadget/logging";
import { type DroneUpdateRefusal, PROTOCOL_VERSION } from "@gadget/protocol";
import { makeTempDir } from "@gadget/testkit";
import { waitFor } from "@gadget/testkit/wire";
import { afterEach, describe, expect, it } from "vitest";
import { AutoUpdater } from "./auto-update.ts";

let server: Server | undefined;
/** How many times the drone asked what the server hands out. */
let checks = 0;

/** A server handing out `version` whose metadata says sha256 `claimed` of `bytes`. */
async function handOut(version: string, bytes: Buffer, claimed: string): Promise<string> {
  server = createServer((request, response) => {
    const base = `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
    if (request.url === "/downloads/gadget-drone.json") {
      checks++;
      response.setHeader("content-type", "application/json");
      response.end(
        JSON.stringify({
          version,
          protocol: PROTOCOL_VERSION,
          sha256: claimed,
          size: bytes.length,
          url: `${base}/downloads/gadget-drone-${version}.tgz`,
        }),
      );
    } else if (request.url === `/downloads/gadget-drone-${version}.tgz`) {
      response.end(bytes);
    } else {
      response.statusCode = 404;
      response.end();
    }
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function installation(version: string) {
  const library = path.join(await makeTempDir("auto-update-"), "lib/gadget-drone");
  mkdirSync(path.join(library, "versions", version, "bin"), { recursive: true });
  return { library, version };
}

afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  checks = 0;
});

describe("AutoUpdater", () => {
  it("refuses a package whose sha256 is not the server's, and reports it once", async () => {
    const bytes = Buffer.from("not the package the server describes");
    const url = await handOut("0.2.0", bytes, "0".repeat(64));
    const refusals: DroneUpdateRefusal[] = [];
    const lines: string[] = [];
    const refused = () => lines.filter((line) => line.startsWith("update refused:"));
    const updater = new AutoUpdater({
      installation: await installation("0.1.0"),
      server: url,
      intervalMs: 50,
      logger: silentLogger,
      say: (line) => lines.push(line),
      onRefused: (refusal) => refusals.push(refusal),
    });
    updater.start();
    try {
      // Checked several times: refused each time, reported once.
      await waitFor(async () => refused().length >= 3, 20_000, "three refused checks");
    } finally {
      updater.stop();
    }
    const actual = createHash("sha256").update(bytes).digest("hex");
    expect(refused()[0]).toContain(
      `update refused: gadget-drone 0.2.0: the package's sha256 is ${actual}`,
    );
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatchObject({ version: "0.2.0" });
    expect(refusals[0]!.reason).toContain(`the server says ${"0".repeat(64)}`);
    expect(Date.now() - refusals[0]!.at.getTime()).toBeLessThan(20_000);
  });

  it("reports a version refused before with its reason and when", async () => {
    const bytes = Buffer.from("a package");
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    const url = await handOut("0.4.0", bytes, sha256);
    const installed = await installation("0.2.0");
    const file = path.join(installed.library, "versions", ".refused-0.4.0");
    writeFileSync(file, "it stopped at start (exit 1) and was rolled back to 0.2.0\n");
    const refusals: DroneUpdateRefusal[] = [];
    const updater = new AutoUpdater({
      installation: installed,
      server: url,
      intervalMs: 50,
      logger: silentLogger,
      say: () => {},
      onRefused: (refusal) => refusals.push(refusal),
    });
    updater.start();
    try {
      await waitFor(async () => refusals.length > 0, 20_000, "the earlier refusal reported");
      // Checked again since: still one report.
      const seen = checks;
      await waitFor(async () => checks >= seen + 3, 20_000, "three more checks");
    } finally {
      updater.stop();
    }
    expect(refusals).toEqual([
      {
        version: "0.4.0",
        reason: "it stopped at start (exit 1) and was rolled back to 0.2.0",
        at: expect.any(Date),
      },
    ]);
  });
});

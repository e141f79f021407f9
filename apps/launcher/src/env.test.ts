// `pnpm start` reads its variables with the server's own schema and defaults.
import { describe, expect, it } from "vitest";
import { loadEnv } from "./env.ts";

describe("loadEnv", () => {
  it("takes the server's defaults and keeps data under the repository", () => {
    const env = loadEnv("/repository", { MONGO_URL: "" });
    expect(env).toMatchObject({
      dataDir: "/repository/.gadget",
      host: "127.0.0.1",
      port: 3000,
      mongoUrl: undefined,
      redisUrl: undefined,
    });
  });

  it("refuses what the server would refuse, naming each variable", () => {
    expect(() => loadEnv("/repository", { PORT: "eighty", REDIS_URL: "http://x" })).toThrow(
      /PORT: must be a port number \(0-65535\) \(got "eighty"\)\nREDIS_URL: must start with redis:\/\//,
    );
  });
});

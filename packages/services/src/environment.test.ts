// The variables the server and `pnpm start` share: one schema, one set of defaults.
import { describe, expect, it } from "vitest";
import { environmentProblems, sharedDefaults, sharedEnvironmentSchema } from "./environment.ts";

describe("sharedEnvironmentSchema", () => {
  it("gives the defaults to unset variables and reads an empty URL as unset", () => {
    const parsed = sharedEnvironmentSchema.parse({ MONGO_URL: "", REDIS_URL: "" });
    expect(parsed).toEqual({
      GADGET_DATA_DIR: undefined,
      HOST: sharedDefaults.host,
      PORT: sharedDefaults.port,
      MONGO_URL: undefined,
      REDIS_URL: undefined,
    });
    expect(sharedDefaults.dataDir("/repository")).toBe("/repository/.gadget");
  });

  it("names every bad variable with its value, except secret ones", () => {
    const source = { PORT: "eighty", MONGO_URL: "postgres://x", REDIS_URL: "redis://secret@x" };
    const result = sharedEnvironmentSchema.safeParse(source);
    expect(result.success).toBe(false);
    if (result.success) return;
    expect(environmentProblems(result.error, source, ["MONGO_URL"]).sort()).toEqual([
      "MONGO_URL: must start with mongodb://",
      'PORT: must be a port number (0-65535) (got "eighty")',
    ]);
  });
});

import { describe, expect, it } from "vitest";
import { branchPrefixSchema, sessionBranch } from "./session-branch.ts";
import { workOrderSchema } from "./work-order.ts";

describe("session branches", () => {
  it("names a session's branch from the prefix, the session's name and its id", () => {
    const session = { _id: "665f1c2e9b1d4a0012345678", name: "Fix the Login page!" };
    expect(sessionBranch("gadget/", session)).toBe("gadget/fix-the-login-page-665f1c");
    expect(sessionBranch("", { ...session, name: "???" })).toBe("session-665f1c");
    expect(sessionBranch("ai/", session, 24)).toBe(`ai/fix-the-login-page-${session._id}`);
  });

  it("accepts prefixes git takes at the start of a branch name, and refuses the rest", () => {
    for (const prefix of ["gadget/", "", "ai/work/", "bot-", "team_x/"]) {
      expect(branchPrefixSchema.safeParse(prefix).success, prefix).toBe(true);
    }
    for (const prefix of ["../x/", "-x", "/x", "a//b", "a b/", "x.lock/", "x./", "a~b", "a:b"]) {
      expect(branchPrefixSchema.safeParse(prefix).success, prefix).toBe(false);
    }
  });

  it("gives a work order without a prefix the default one", () => {
    const order = workOrderSchema.parse({
      turnId: "665f1c2e9b1d4a0012345678",
      project: { _id: "665f1c2e9b1d4a0012345678", name: "p", slug: "p", gitUrl: "/srv/p.git" },
      session: { name: "s", mode: "agent" },
      provider: { baseUrl: "http://127.0.0.1:1/v1", apiKey: "k", modelId: "m", params: {} },
      context: [],
      prompt: "hi",
    });
    expect(order.project.branchPrefix).toBe("gadget/");
  });
});

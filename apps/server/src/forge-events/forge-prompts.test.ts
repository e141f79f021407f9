// The trigger word a comment must hold to be obeyed.
import { describe, expect, it } from "vitest";
import { hasTrigger } from "./forge-prompts.ts";

describe("the trigger word", () => {
  it("is found on its own, in any case, and not inside another word or address", () => {
    expect(hasTrigger("@gadget please fix", "@gadget")).toBe(true);
    expect(hasTrigger("Could you look, @Gadget?", "@gadget")).toBe(true);
    expect(hasTrigger("ping @gadgeteer", "@gadget")).toBe(false);
    expect(hasTrigger("mail me@gadget.dev", "@gadget")).toBe(false);
    expect(hasTrigger("no trigger here", "@gadget")).toBe(false);
  });
});

// Short tool-call ids (Mistral's rule): the same answer every time, valid ids kept, no two ids
// of a request sharing a short one.
import { describe, expect, it } from "vitest";
import { ShortToolCallIds } from "./tool-call-ids.ts";

describe("ShortToolCallIds", () => {
  it("maps any id to 9 letters or digits, the same way in every request", () => {
    const ids = ["call_abcdefghijklmnopqrstuvwx", "call-2-1", "toolu_01A09q90qw90lq917835lq9", ""];
    const first = new ShortToolCallIds(ids);
    const again = new ShortToolCallIds(ids);
    for (const id of ids) {
      expect(first.of(id)).toMatch(/^[A-Za-z0-9]{9}$/);
      expect(again.of(id)).toBe(first.of(id));
    }
    expect(new Set(ids.map((id) => first.of(id))).size).toBe(ids.length);
  });

  it("keeps ids that are valid already, and moves a rewritten id off one it would collide with", () => {
    const collided = new ShortToolCallIds([]).of("call_x");
    const ids = new ShortToolCallIds([collided, "call_x", "Ab3dE6gH9"]);
    expect(ids.of(collided)).toBe(collided);
    expect(ids.of("Ab3dE6gH9")).toBe("Ab3dE6gH9");
    const moved = ids.of("call_x");
    expect(moved).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(moved).not.toBe(collided);
  });
});

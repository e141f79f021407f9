import { describe, expect, it } from "vitest";
import { redactSecrets, secretForms } from "./redaction.ts";

const token = "mcp-token-7f3a9c2e5d";

describe("redactSecrets", () => {
  it("cuts a secret as it is, reversed, in hex and in base64 at every alignment", () => {
    const reversed = [...token].reverse().join("");
    const hex = Buffer.from(token).toString("hex");
    const leaks = [
      token,
      reversed,
      hex,
      hex.toUpperCase(),
      // The secret inside a longer encoded text, at each of base64's three alignments.
      Buffer.from(`x${token}y`).toString("base64"),
      Buffer.from(`xy${token}z`).toString("base64"),
      Buffer.from(`${token}`).toString("base64"),
      Buffer.from(`??>${token}??>`).toString("base64url"),
    ];
    for (const leak of leaks) {
      const shown = redactSecrets(`the answer: ${leak} (end)`, [token]);
      expect(shown, leak).toContain("[redacted]");
      expect(shown).not.toContain(leak);
    }
  });

  it("leaves other text alone and cuts short secrets only as they are", () => {
    expect(redactSecrets("nothing to see", [token])).toBe("nothing to see");
    expect(secretForms("abcd")).toEqual(["abcd"]);
    expect(redactSecrets("dcba abcd", ["abcd"])).toBe("dcba [redacted]");
  });
});

// The providers page's check result: what /models listed, and what the probe call found.
import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { CheckResult } from "./providers-page.tsx";

describe("a provider check's result", () => {
  it("says which features the probe call found and what it learned", () => {
    render(
      <CheckResult
        error={null}
        result={{
          ok: true,
          models: ["o4-mini"],
          via: "server",
          probe: { streaming: true, toolCalling: true, reasoning: false, usage: true },
          quirks: ["no_temperature"],
        }}
      />,
    );
    const note = screen.getByRole("status");
    expect(note).toHaveTextContent("The provider answered with 1 model: o4-mini");
    const features = screen.getByRole("list", { name: "What a test call found" });
    expect(features).toHaveTextContent(
      "Streaming: yesTool calling: yesReasoning: noUsage reported: yes",
    );
    expect(note).toHaveTextContent("Learned: temperature is not sent (the model refuses it).");
  });

  it("says why the probe call failed when /models answered", () => {
    render(
      <CheckResult
        error={null}
        result={{
          ok: true,
          models: ["m"],
          probe: {
            streaming: false,
            toolCalling: false,
            reasoning: false,
            usage: false,
            message: "HTTP 400: unknown field",
          },
        }}
      />,
    );
    expect(screen.getByRole("status")).toHaveTextContent("The test call: HTTP 400: unknown field");
  });

  it("shows no probe for a check of /models alone", () => {
    render(<CheckResult error={null} result={{ ok: true, models: ["m"] }} />);
    expect(screen.queryByRole("list", { name: "What a test call found" })).toBeNull();
  });
});

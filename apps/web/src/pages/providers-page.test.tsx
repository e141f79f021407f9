// The providers page: a check's result (what /models listed, what the probe call found), and
// editing a saved provider with the listed models offered under the model field.
import type { CreateProviderBody, Provider, UpdateProviderBody } from "@gadget/protocol";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/api-error.ts";
import { render, screen, waitFor } from "../test/render.tsx";
import { CheckResult } from "./provider-check.tsx";
import { ProviderForm } from "./provider-form.tsx";

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

describe("editing a saved provider", () => {
  const saved: Provider = {
    _id: "p1",
    name: "Router",
    baseUrl: "https://api.example.com/v1",
    hasApiKey: true,
    modelId: "old-model",
    params: {},
    escalationModelId: "big-model",
    quirks: [],
    createdAt: new Date("2026-01-01T00:00:00Z"),
  };

  it("sends only what changed, a new key, and null for a cleared field", async () => {
    const bodies: UpdateProviderBody[] = [];
    render(
      <ProviderForm
        provider={saved}
        onSave={async (body) => {
          bodies.push(body);
        }}
        onCheck={async () => ({ ok: true, models: [] })}
        onCancel={() => {}}
      />,
    );
    const model = screen.getByRole("combobox", { name: "Model" });
    await userEvent.clear(model);
    await userEvent.type(model, "new-model");
    await userEvent.type(screen.getByLabelText("New API key"), "sk-replaced");
    await userEvent.clear(screen.getByRole("combobox", { name: "Escalation model (optional)" }));
    await userEvent.click(screen.getByRole("button", { name: "Save" }));
    expect(bodies).toEqual([
      { modelId: "new-model", apiKey: "sk-replaced", escalationModelId: null },
    ]);
  });

  it("offers the models the check listed under the model field, free text still allowed", async () => {
    const checkedWith: string[] = [];
    render(
      <ProviderForm
        provider={saved}
        onSave={async () => {}}
        onCheck={async ({ apiKey }) => {
          checkedWith.push(apiKey);
          return { ok: true, models: ["gpt-a", "gpt-b"] };
        }}
        onCancel={() => {}}
      />,
    );
    await userEvent.click(screen.getByRole("button", { name: "Check /models" }));
    expect(await screen.findByText("gpt-a")).toBeInTheDocument();
    expect(checkedWith).toEqual([""]);
    const model = screen.getByRole("combobox", { name: "Model" });
    const list = document.getElementById(model.getAttribute("list") ?? "");
    expect([...(list?.querySelectorAll("option") ?? [])].map((option) => option.value)).toEqual([
      "gpt-a",
      "gpt-b",
    ]);
    await userEvent.clear(model);
    await userEvent.type(model, "unlisted-model");
    expect(model).toHaveValue("unlisted-model");
  });
});

describe("adding a provider", () => {
  async function fillIn() {
    await userEvent.type(screen.getByRole("textbox", { name: "Name" }), " Router ");
    await userEvent.type(
      screen.getByRole("textbox", { name: "Base URL" }),
      "https://api.example.com/v1/",
    );
    await userEvent.type(screen.getByRole("combobox", { name: "Model" }), "small");
    await userEvent.type(screen.getByLabelText("API key"), "sk-1");
  }

  it("sends the body as the server takes it and empties the form once added", async () => {
    const bodies: CreateProviderBody[] = [];
    render(
      <ProviderForm
        onSave={async (body) => {
          bodies.push(body);
        }}
        onCheck={async () => ({ ok: true, models: [] })}
      />,
    );
    await fillIn();
    await userEvent.type(screen.getByRole("textbox", { name: "Input $ / M tokens" }), "0.4");
    await userEvent.type(screen.getByRole("textbox", { name: "Temperature" }), "0.7");
    await userEvent.click(screen.getByRole("button", { name: "Add provider" }));
    await waitFor(() =>
      expect(bodies).toEqual([
        {
          name: "Router",
          baseUrl: "https://api.example.com/v1",
          apiKey: "sk-1",
          modelId: "small",
          pricing: { inputPerMTok: 0.4, outputPerMTok: 0 },
          params: { temperature: 0.7 },
        },
      ]),
    );
    await waitFor(() => expect(screen.getByRole("textbox", { name: "Name" })).toHaveValue(""));
  });

  it("says on the field what is wrong before sending, and puts the server's field problems on their fields", async () => {
    const bodies: CreateProviderBody[] = [];
    let refuse = false;
    render(
      <ProviderForm
        onSave={async (body) => {
          bodies.push(body);
          if (refuse) {
            throw new ApiError("validation_failed", "Invalid provider", 400, [
              { path: "pricing.outputPerMTok", message: "must be at most 1000" },
            ]);
          }
        }}
        onCheck={async () => ({ ok: true, models: [] })}
      />,
    );
    await fillIn();
    const price = screen.getByRole("textbox", { name: "Output $ / M tokens" });
    await userEvent.type(price, "cheap");
    await userEvent.click(screen.getByRole("button", { name: "Add provider" }));
    await waitFor(() => expect(price).toHaveAccessibleDescription("must be a number"));
    expect(price).toHaveAttribute("aria-invalid", "true");
    expect(bodies).toEqual([]);

    refuse = true;
    await userEvent.clear(price);
    await userEvent.type(price, "5000");
    await userEvent.click(screen.getByRole("button", { name: "Add provider" }));
    expect(await screen.findByRole("alert")).toHaveTextContent(
      "Could not add the provider: Invalid provider",
    );
    expect(price).toHaveAccessibleDescription("must be at most 1000");
    expect(bodies).toHaveLength(1);
  });
});

describe("the temperature of a saved provider", () => {
  it("is changed with the provider's other parameters kept", async () => {
    const bodies: UpdateProviderBody[] = [];
    render(
      <ProviderForm
        provider={{
          _id: "p2",
          name: "Local",
          baseUrl: "http://127.0.0.1:9/v1",
          hasApiKey: false,
          modelId: "m",
          params: { temperature: 0.2, topP: 0.9 },
          quirks: [],
          createdAt: new Date(),
        }}
        onSave={async (body: UpdateProviderBody) => {
          bodies.push(body);
        }}
        onCheck={async () => ({ ok: true, models: [] })}
        onCancel={() => {}}
      />,
    );
    const temperature = screen.getByRole("textbox", { name: "Temperature" });
    expect(temperature).toHaveValue("0.2");
    await userEvent.clear(temperature);
    await userEvent.type(temperature, "0.5");
    await userEvent.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(bodies).toEqual([{ params: { topP: 0.9, temperature: 0.5 } }]));
  });
});

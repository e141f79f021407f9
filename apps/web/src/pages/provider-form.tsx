// One form for adding a provider and for changing a saved one: the fields are validated by the
// protocol's provider schema, "Check /models" tries what is typed, and the server's field problems
// land on the fields. Editing sends only what changed; the stored key is never shown.
import {
  type CreateProviderBody,
  createProviderBodySchema,
  type Provider,
  type UpdateProviderBody,
} from "@gadget/protocol";
import { zodResolver } from "@hookform/resolvers/zod";
import { useMutation } from "@tanstack/react-query";
import { useId } from "react";
import { useForm } from "react-hook-form";
import { z } from "zod";
import type { ProviderCheckBody, ProviderCheckResult } from "../api/client.ts";
import { ErrorNote } from "../components/error-note.tsx";
import { Field } from "../forms/field.tsx";
import { showServerProblems } from "../forms/server-problems.ts";
import { optionalNumber, optionalText } from "../forms/text-values.ts";
import { CheckResult } from "./provider-check.tsx";

const shape = createProviderBodySchema.shape;
const pricing = shape.pricing.unwrap().shape;

/** The form's fields (all text) and what each becomes, checked as the server checks it. */
export const providerFieldsSchema = z.object({
  name: shape.name,
  // Trailing slashes are dropped: the server appends /models and /chat/completions.
  baseUrl: z
    .string()
    .transform((text) => text.trim().replace(/\/+$/, ""))
    .pipe(shape.baseUrl),
  apiKey: shape.apiKey,
  modelId: shape.modelId,
  escalationModelId: optionalText(shape.escalationModelId.unwrap()),
  inputPerMTok: optionalNumber(pricing.inputPerMTok),
  outputPerMTok: optionalNumber(pricing.outputPerMTok),
  contextWindow: optionalNumber(
    z.number().transform(Math.round).pipe(shape.contextWindow.unwrap()),
  ),
  temperature: optionalNumber(shape.params.unwrap().shape.temperature.unwrap()),
});
type ProviderFields = z.input<typeof providerFieldsSchema>;
type ProviderValues = z.output<typeof providerFieldsSchema>;

/** Body paths the server may name, as the form's fields. */
const aliases = {
  pricing: "inputPerMTok",
  "pricing.inputPerMTok": "inputPerMTok",
  "pricing.outputPerMTok": "outputPerMTok",
  params: "temperature",
  "params.temperature": "temperature",
} as const;

/** Text of a number field: "" for none. */
function numberText(value: number | null | undefined): string {
  return value === null || value === undefined ? "" : String(value);
}

function fieldsOf(provider: Provider | undefined): ProviderFields {
  return {
    name: provider?.name ?? "",
    baseUrl: provider?.baseUrl ?? "",
    apiKey: "",
    modelId: provider?.modelId ?? "",
    escalationModelId: provider?.escalationModelId ?? "",
    inputPerMTok: numberText(provider?.pricing?.inputPerMTok),
    outputPerMTok: numberText(provider?.pricing?.outputPerMTok),
    contextWindow: numberText(provider?.contextWindow),
    temperature: numberText(provider?.params?.temperature),
  };
}

function pricingOf(values: ProviderValues) {
  const { inputPerMTok: input, outputPerMTok: output } = values;
  return input === undefined && output === undefined
    ? null
    : { inputPerMTok: input ?? 0, outputPerMTok: output ?? 0 };
}

/** The body that adds a provider. */
export function createBodyOf(values: ProviderValues): CreateProviderBody {
  const pricing = pricingOf(values);
  return {
    name: values.name,
    baseUrl: values.baseUrl,
    apiKey: values.apiKey,
    modelId: values.modelId,
    ...(values.escalationModelId ? { escalationModelId: values.escalationModelId } : {}),
    ...(pricing ? { pricing } : {}),
    ...(values.contextWindow !== undefined ? { contextWindow: values.contextWindow } : {}),
    ...(values.temperature !== undefined ? { params: { temperature: values.temperature } } : {}),
  };
}

/** What changed on a saved provider: a typed key replaces the stored one; null clears a field. */
export function changesOf(provider: Provider, values: ProviderValues): UpdateProviderBody {
  const body: UpdateProviderBody = {};
  if (values.name !== provider.name) body.name = values.name;
  if (values.baseUrl !== provider.baseUrl) body.baseUrl = values.baseUrl;
  if (values.modelId !== provider.modelId) body.modelId = values.modelId;
  if (values.apiKey) body.apiKey = values.apiKey;
  if ((values.escalationModelId ?? null) !== (provider.escalationModelId ?? null)) {
    body.escalationModelId = values.escalationModelId ?? null;
  }
  const pricing = pricingOf(values);
  if (
    pricing?.inputPerMTok !== provider.pricing?.inputPerMTok ||
    pricing?.outputPerMTok !== provider.pricing?.outputPerMTok
  ) {
    body.pricing = pricing;
  }
  if ((values.contextWindow ?? null) !== (provider.contextWindow ?? null)) {
    body.contextWindow = values.contextWindow ?? null;
  }
  if (values.temperature !== provider.params?.temperature) {
    // The params are replaced whole: the others stay as they were.
    const { temperature: _before, ...others } = provider.params ?? {};
    body.params =
      values.temperature === undefined ? others : { ...others, temperature: values.temperature };
  }
  return body;
}

export type ProviderFormProps = {
  /** Lists the provider's models with what is typed (the page decides which check runs). */
  onCheck: (body: ProviderCheckBody) => Promise<ProviderCheckResult>;
} & (
  | { provider?: undefined; onSave: (body: CreateProviderBody) => Promise<unknown> }
  | { provider: Provider; onSave: (body: UpdateProviderBody) => Promise<unknown>; onCancel(): void }
);

/**
 * Adds a provider (no `provider`), or edits `provider` in place: the key field is then empty and a
 * value typed there replaces the stored key.
 */
export function ProviderForm(props: ProviderFormProps) {
  const { provider, onCheck } = props;
  const editing = provider !== undefined;
  const modelList = useId();
  const form = useForm<ProviderFields, unknown, ProviderValues>({
    resolver: zodResolver(providerFieldsSchema),
    defaultValues: fieldsOf(provider),
  });
  const { register, formState, handleSubmit } = form;
  const errors = formState.errors;
  const check = useMutation({ mutationFn: onCheck });
  const save = useMutation({
    mutationFn: (values: ProviderValues) =>
      props.provider
        ? props.onSave(changesOf(props.provider, values))
        : props.onSave(createBodyOf(values)),
    onSuccess: () => {
      if (editing) return;
      form.reset(fieldsOf(undefined));
      check.reset();
    },
    onError: (error) => showServerProblems(form, error, aliases),
  });
  const baseUrl = form.watch("baseUrl");

  const runCheck = () => {
    const { apiKey, modelId } = form.getValues();
    check.mutate({
      baseUrl: baseUrl.trim().replace(/\/+$/, ""),
      apiKey,
      ...(modelId.trim() ? { modelId: modelId.trim() } : {}),
    });
  };

  return (
    <form
      className={editing ? "form-grid provider-edit" : "card form-grid"}
      onSubmit={handleSubmit((values) => save.mutate(values))}
      aria-label={editing ? `Edit ${provider.name}` : "Add a provider"}
    >
      {editing ? null : (
        <>
          <h2>Add a provider</h2>
          <p className="muted small">
            Any OpenAI-compatible API: OpenAI, OpenRouter, a vLLM or Ollama server on your network.
            The key is encrypted on the server and never shown again.
          </p>
        </>
      )}
      <Field label="Name" error={errors.name}>
        <input required {...register("name")} placeholder={editing ? undefined : "OpenRouter"} />
      </Field>
      <Field label="Base URL" error={errors.baseUrl}>
        <input
          required
          type="url"
          {...register("baseUrl")}
          placeholder={editing ? undefined : "https://api.example.com/v1"}
        />
      </Field>
      <Field label="Model" error={errors.modelId}>
        <input
          required
          {...register("modelId")}
          placeholder={editing ? undefined : "gpt-4.1-mini"}
          list={modelList}
        />
      </Field>
      <ModelOptions id={modelList} models={check.data?.models} />
      <Field label={editing ? "New API key" : "API key"} error={errors.apiKey}>
        <input
          type="password"
          {...register("apiKey")}
          autoComplete="off"
          placeholder={
            editing && provider.hasApiKey ? "leave empty to keep the stored key" : "sk-…"
          }
        />
      </Field>
      <Field label="Escalation model (optional)" error={errors.escalationModelId}>
        <input
          {...register("escalationModelId")}
          placeholder={editing ? undefined : "a stronger model for hard passes"}
          list={modelList}
        />
      </Field>
      <div className="field-row">
        <Field label="Input $ / M tokens" error={errors.inputPerMTok}>
          <input inputMode="decimal" {...register("inputPerMTok")} />
        </Field>
        <Field label="Output $ / M tokens" error={errors.outputPerMTok}>
          <input inputMode="decimal" {...register("outputPerMTok")} />
        </Field>
        <Field label="Context window" error={errors.contextWindow}>
          <input inputMode="numeric" {...register("contextWindow")} />
        </Field>
        <Field label="Temperature" error={errors.temperature}>
          <input inputMode="decimal" {...register("temperature")} />
        </Field>
      </div>
      <CheckResult result={check.data} error={check.error} />
      <ErrorNote
        error={save.error}
        title={editing ? "Could not save the provider" : "Could not add the provider"}
      />
      <div className="form-actions">
        <button
          type="button"
          className="button"
          onClick={runCheck}
          disabled={check.isPending || (!editing && !baseUrl.trim())}
        >
          {check.isPending ? "Checking…" : "Check /models"}
        </button>
        {props.provider ? (
          <button type="button" className="button ghost" onClick={props.onCancel}>
            Cancel
          </button>
        ) : null}
        <button type="submit" className="button primary" disabled={save.isPending}>
          {editing
            ? save.isPending
              ? "Saving…"
              : "Save"
            : save.isPending
              ? "Adding…"
              : "Add provider"}
        </button>
      </div>
    </form>
  );
}

/**
 * The models a check listed, offered under a model field (a datalist: the user may still type
 * any id, e.g. one the provider serves but does not list).
 */
function ModelOptions({ id, models }: { id: string; models: string[] | undefined }) {
  return (
    <datalist id={id}>
      {(models ?? []).map((model) => (
        <option key={model} value={model} />
      ))}
    </datalist>
  );
}

// The prompt composer: Enter sends, Shift+Enter adds a line; pick the provider and, optionally, a
// drone and limits, checked with the protocol's new-turn schema. While a turn of the session
// runs, Enter steers it (the text joins its conversation), Alt+Enter queues a new turn after it.
// `/` lists the project's commands; images pasted or dropped in go with the new turn
// (image-attachments.tsx).
import {
  createTurnBodySchema,
  type Drone,
  type ProjectCommand,
  type PromptImageInput,
  type Provider,
  type TurnLimits,
} from "@gadget/protocol";
import { zodResolver } from "@hookform/resolvers/zod";
import { useMutation } from "@tanstack/react-query";
import type { KeyboardEvent } from "react";
import { useForm } from "react-hook-form";
import { z } from "zod";
import { useNow } from "../app/use-now.ts";
import { ErrorNote } from "../components/error-note.tsx";
import { showServerProblems } from "../forms/server-problems.ts";
import { optionalNumber, optionalText } from "../forms/text-values.ts";
import { useCommandSuggestions } from "./command-suggestions.tsx";
import { AttachedImages, promptImages, useImageAttachments } from "./image-attachments.tsx";
import { droneOfflineWords } from "./turn-words.ts";

export interface ComposerSubmission {
  prompt: string;
  providerId: string;
  droneId?: string;
  limits?: TurnLimits;
  /** Images pasted or dropped in, sent with the prompt (decision 0051). */
  images?: PromptImageInput[];
}

export interface ComposerProps {
  providers: Provider[];
  drones: Drone[];
  /** Drones a turn of this session waits for (offline): when it is interrupted, by drone id. */
  lostDrones?: Record<string, number>;
  /** Sends the prompt; rejects with an error to show (the text is kept then). */
  onSend: (submission: ComposerSubmission) => Promise<void>;
  /** The provider to preselect (the last one used). */
  defaultProviderId?: string;
  disabled?: boolean;
  /** Why sending is not possible right now, in words. */
  disabledReason?: string;
  /** Set while a turn of the session runs: Enter sends the text to it instead of a new turn. */
  onSteer?: (text: string, interrupt: boolean) => Promise<void>;
  /** The project's `/name` commands, offered while the prompt is `/` and part of a name. */
  commands?: readonly ProjectCommand[];
}

const shape = createTurnBodySchema.shape;
const limits = shape.limits.unwrap().shape;
const composerSchema = z.object({
  prompt: shape.prompt,
  providerId: shape.providerId,
  droneId: optionalText(shape.droneId.unwrap()),
  costBudget: optionalNumber(limits.costBudget.unwrap()),
  maxPasses: optionalNumber(z.number().transform(Math.round).pipe(limits.maxPasses.unwrap())),
  /** `limits.onReach: "ask"`: at a limit the turn waits to be extended instead of finishing. */
  askAtLimit: z.boolean(),
});
type ComposerFields = z.input<typeof composerSchema>;
type ComposerValues = z.output<typeof composerSchema>;

function submissionOf(values: ComposerValues): ComposerSubmission {
  const chosen: TurnLimits = {};
  if (values.costBudget !== undefined) chosen.costBudget = values.costBudget;
  if (values.maxPasses !== undefined) chosen.maxPasses = values.maxPasses;
  if (values.askAtLimit && Object.keys(chosen).length > 0) chosen.onReach = "ask";
  return {
    prompt: values.prompt,
    providerId: values.providerId,
    ...(values.droneId ? { droneId: values.droneId } : {}),
    ...(Object.keys(chosen).length > 0 ? { limits: chosen } : {}),
  };
}

/** Writes a prompt and sends it as a new turn. */
export function Composer({
  providers,
  drones,
  lostDrones = {},
  onSend,
  defaultProviderId,
  disabled = false,
  disabledReason,
  onSteer,
  commands = [],
}: ComposerProps) {
  const now = useNow({ active: Object.keys(lostDrones).length > 0 });
  const form = useForm<ComposerFields, unknown, ComposerValues>({
    resolver: zodResolver(composerSchema),
    defaultValues: {
      prompt: "",
      providerId:
        (defaultProviderId && providers.some((p) => p._id === defaultProviderId)
          ? defaultProviderId
          : providers[0]?._id) ?? "",
      droneId: "",
      costBudget: "",
      maxPasses: "",
      askAtLimit: false,
    },
  });
  const errors = form.formState.errors;
  const attachments = useImageAttachments();
  const send = useMutation({
    mutationFn: (values: ComposerValues) => {
      const images = promptImages(attachments.images);
      return onSend({ ...submissionOf(values), ...(images.length > 0 ? { images } : {}) });
    },
    onSuccess: () => {
      form.resetField("prompt");
      attachments.clear();
    },
    onError: (error) =>
      showServerProblems(form, error, {
        "limits.costBudget": "costBudget",
        "limits.maxPasses": "maxPasses",
      }),
  });
  const steer = useMutation({
    mutationFn: ({ text, interrupt }: { text: string; interrupt: boolean }) =>
      onSteer ? onSteer(text, interrupt) : Promise.resolve(),
    onSuccess: () => form.resetField("prompt"),
  });
  const prompt = form.watch("prompt");
  const providerId = form.watch("providerId");
  const suggestions = useCommandSuggestions(prompt, commands, (text) => {
    form.setValue("prompt", text);
    form.setFocus("prompt");
  });
  const canSend = !disabled && !send.isPending && prompt.trim().length > 0 && providerId !== "";
  const submit = form.handleSubmit((values) => {
    // Send is disabled while the prompt goes out: the focus stays on the box, not on <body>.
    form.setFocus("prompt");
    send.mutate(values);
  });
  const problem = errors.prompt?.message ?? errors.costBudget?.message ?? errors.maxPasses?.message;

  // Images go with a new turn (Queue), not into a running one.
  const canSteer = canSend && attachments.images.length === 0;
  const sendSteer = (interrupt: boolean) => {
    if (!canSteer || steer.isPending) return;
    form.setFocus("prompt");
    steer.mutate({ text: prompt.trim(), interrupt });
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (suggestions.onKeyDown(event)) return;
    // Enter while an input method is composing (e.g. Japanese) confirms the text, not the prompt.
    if (event.key !== "Enter" || event.shiftKey || event.nativeEvent.isComposing) return;
    event.preventDefault();
    if (onSteer && !event.altKey && attachments.images.length === 0) sendSteer(false);
    else if (canSend) void submit();
  };

  return (
    <form
      className="composer"
      onSubmit={(event) => (canSend ? submit(event) : event.preventDefault())}
      aria-label="Send a prompt"
      onDragOver={attachments.onDragOver}
      onDrop={attachments.onDrop}
    >
      <label htmlFor="prompt" className="visually-hidden">
        Prompt
      </label>
      <textarea
        // One composer a page: the shell's skip link goes to #prompt.
        id="prompt"
        {...form.register("prompt")}
        rows={3}
        placeholder={
          onSteer
            ? "Steer the running turn… (Enter steers, Alt+Enter queues a new turn, Shift+Enter for a new line)"
            : "Ask Gadget to do something… (Enter sends, Shift+Enter for a new line)"
        }
        onKeyDown={onKeyDown}
        onPaste={attachments.onPaste}
        disabled={disabled}
        {...suggestions.textareaProps}
      />
      {suggestions.list}
      {problem ? <small className="field-problem">{problem}</small> : null}
      <AttachedImages images={attachments.images} onRemove={attachments.remove} />
      {attachments.problem ? (
        <small className="field-problem" role="alert">
          {attachments.problem}
        </small>
      ) : null}
      <ErrorNote error={send.error ?? steer.error} title="The prompt was not sent" />
      <div className="composer-bar">
        <label>
          Provider{" "}
          <select {...form.register("providerId")} disabled={providers.length === 0}>
            {providers.length === 0 ? <option value="">No provider yet</option> : null}
            {providers.map((provider) => (
              <option key={provider._id} value={provider._id}>
                {provider.name} · {provider.modelId}
              </option>
            ))}
          </select>
        </label>
        <label>
          Drone{" "}
          <select {...form.register("droneId")}>
            <option value="">Any online drone</option>
            {drones.map((drone) => (
              <option key={drone._id} value={drone._id}>
                {drone.name} ({drone.status}
                {lostDrones[drone._id] === undefined
                  ? ""
                  : ` · its turn is ${droneOfflineWords({ until: lostDrones[drone._id] as number }, now)}`}
                )
              </option>
            ))}
          </select>
        </label>
        <details className="composer-limits">
          <summary>Limits</summary>
          <label>
            Cost budget ($){" "}
            <input
              inputMode="decimal"
              {...form.register("costBudget")}
              placeholder="none"
              size={6}
            />
          </label>
          <label>
            Max passes{" "}
            <input
              inputMode="numeric"
              {...form.register("maxPasses")}
              placeholder="none"
              size={4}
            />
          </label>
          <label>
            <input type="checkbox" {...form.register("askAtLimit")} /> Ask me to extend at a limit
          </label>
        </details>
        <span className="spacer" />
        {disabledReason ? <span className="muted small">{disabledReason}</span> : null}
        {onSteer ? (
          <>
            <button
              type="button"
              className="button"
              disabled={!canSteer}
              onClick={() => sendSteer(true)}
            >
              Interrupt and steer
            </button>
            <button
              type="button"
              className="button primary"
              disabled={!canSteer}
              onClick={() => sendSteer(false)}
            >
              Steer
            </button>
          </>
        ) : null}
        <button type="submit" className={onSteer ? "button" : "button primary"} disabled={!canSend}>
          {send.isPending ? "Sending…" : onSteer ? "Queue" : "Send"}
        </button>
      </div>
    </form>
  );
}

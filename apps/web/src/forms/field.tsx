// A labelled form field with its problem under it: what the protocol's schema, or the server's 400
// `details`, said about this field. The problem is the field's description, not part of its name.
import { cloneElement, type ReactElement, type ReactNode, useId } from "react";
import type { FieldError } from "react-hook-form";

type Control = ReactElement<{
  id?: string;
  "aria-invalid"?: boolean;
  "aria-describedby"?: string;
}>;

export interface FieldProps {
  label: ReactNode;
  /** The field's problem, from `formState.errors`. */
  error?: FieldError | undefined;
  /** The input, select or textarea. */
  children: Control;
  className?: string;
}

/**
 * @example
 * <Field label="Name" error={errors.name}>
 *   <input required {...register("name")} />
 * </Field>
 */
export function Field({ label, error, children, className = "field" }: FieldProps) {
  const ownId = useId();
  const id = children.props.id ?? ownId;
  const message = error?.message;
  const problemId = `${id}-problem`;
  return (
    <div className={className}>
      <label htmlFor={id} className="field-label">
        {label}
      </label>
      {cloneElement(children, {
        id,
        ...(message ? { "aria-invalid": true, "aria-describedby": problemId } : {}),
      })}
      {message ? (
        <small id={problemId} className="field-problem">
          {message}
        </small>
      ) : null}
    </div>
  );
}

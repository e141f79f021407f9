// Sign up and log in: one form, two modes, checked with the protocol's login and signup schemas;
// errors from the server (or its absence) in words. Signup carries the invite of an invite link
// (`/signup?invite=<code>`) where the server asks for one.
import {
  type LoginBody,
  loginBodySchema,
  type SignupBody,
  signupBodySchema,
} from "@gadget/protocol";
import { zodResolver } from "@hookform/resolvers/zod";
import { useMutation } from "@tanstack/react-query";
import { useForm } from "react-hook-form";
import { Link, useLocation, useSearch } from "wouter";
import { z } from "zod";
import { useAuth } from "../app/auth.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import { Field } from "../forms/field.tsx";
import { showServerProblems } from "../forms/server-problems.ts";
import { optionalText } from "../forms/text-values.ts";

const signupFieldsSchema = signupBodySchema.omit({ invite: true }).extend({
  name: optionalText(signupBodySchema.shape.name.unwrap()),
});
/** Logging in asks for no name: the form's unused one is dropped. */
const loginFieldsSchema = loginBodySchema.extend({ name: z.string().transform(() => undefined) });
interface AuthFields {
  name: string;
  email: string;
  password: string;
}

export function AuthPage({ mode }: { mode: "login" | "signup" }) {
  const { api, signIn, notice } = useAuth();
  const [, navigate] = useLocation();
  const search = useSearch();
  const signup = mode === "signup";
  const invite = signup ? new URLSearchParams(search).get("invite")?.trim() || null : null;
  const form = useForm<AuthFields, unknown, LoginBody | SignupBody>({
    resolver: signup ? zodResolver(signupFieldsSchema) : zodResolver(loginFieldsSchema),
    defaultValues: { name: "", email: "", password: "" },
  });
  const errors = form.formState.errors;
  const send = useMutation({
    mutationFn: (body: LoginBody | SignupBody) =>
      signup ? api.signup({ ...body, ...(invite ? { invite } : {}) }) : api.login(body),
    onSuccess: (answer) => {
      signIn(answer.token, answer.user);
      const next = new URLSearchParams(search).get("next");
      navigate(next?.startsWith("/") && !next.startsWith("//") ? next : "/", { replace: true });
    },
    onError: (error) => showServerProblems(form, error),
  });

  return (
    <main className="auth-page">
      <form
        className="card auth-card"
        onSubmit={form.handleSubmit((body) => send.mutate(body))}
        aria-label={signup ? "Sign up" : "Log in"}
      >
        <div className="brand auth-brand">
          <span className="brand-mark" aria-hidden="true" />
          Gadget Code
        </div>
        <h1>{signup ? "Create your account" : "Log in"}</h1>
        {notice && !signup ? <p className="note">{notice}</p> : null}
        {invite ? (
          <p className="muted small">You were invited: this form uses your invite.</p>
        ) : null}
        {signup ? (
          <Field label="Name" error={errors.name}>
            <input {...form.register("name")} autoComplete="name" />
          </Field>
        ) : null}
        <Field label="Email" error={errors.email}>
          <input type="email" required {...form.register("email")} autoComplete="email" />
        </Field>
        <Field label="Password" error={errors.password}>
          <input
            type="password"
            required
            minLength={signup ? 8 : 1}
            {...form.register("password")}
            autoComplete={signup ? "new-password" : "current-password"}
          />
        </Field>
        {signup ? <small className="muted">At least 8 characters.</small> : null}
        <ErrorNote error={send.error} title={signup ? "Could not sign up" : "Could not log in"} />
        <button type="submit" className="button primary wide" disabled={send.isPending}>
          {send.isPending ? "Please wait…" : signup ? "Sign up" : "Log in"}
        </button>
        <p className="muted small center">
          {signup ? (
            <>
              Have an account? <Link href="/login">Log in</Link>
            </>
          ) : (
            <>
              New here? <Link href="/signup">Create an account</Link>
            </>
          )}
        </p>
      </form>
    </main>
  );
}

// Sign up and log in: one form, two modes; errors from the server (or its absence) in words.
// Signup carries the invite of an invite link (`/signup?invite=<code>`) where the server asks for one.
import { type FormEvent, useState } from "react";
import { Link, useLocation, useSearch } from "wouter";
import { useAuth } from "../app/auth.tsx";
import { ErrorNote } from "../components/error-note.tsx";

export function AuthPage({ mode }: { mode: "login" | "signup" }) {
  const { api, signIn, notice } = useAuth();
  const [, navigate] = useLocation();
  const search = useSearch();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [name, setName] = useState("");
  const [sending, setSending] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const signup = mode === "signup";
  const invite = signup ? new URLSearchParams(search).get("invite")?.trim() || null : null;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSending(true);
    setError(null);
    try {
      const answer = signup
        ? await api.signup({
            email,
            password,
            ...(name.trim() ? { name: name.trim() } : {}),
            ...(invite ? { invite } : {}),
          })
        : await api.login({ email, password });
      signIn(answer.token, answer.user);
      const next = new URLSearchParams(search).get("next");
      navigate(next?.startsWith("/") && !next.startsWith("//") ? next : "/", {
        replace: true,
      });
    } catch (caught) {
      setError(caught);
    } finally {
      setSending(false);
    }
  };

  return (
    <div className="auth-page">
      <form className="card auth-card" onSubmit={submit} aria-label={signup ? "Sign up" : "Log in"}>
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
          <label className="field">
            <span>Name</span>
            <input
              value={name}
              onChange={(event) => setName(event.target.value)}
              autoComplete="name"
            />
          </label>
        ) : null}
        <label className="field">
          <span>Email</span>
          <input
            type="email"
            required
            value={email}
            onChange={(event) => setEmail(event.target.value)}
            autoComplete="email"
          />
        </label>
        <label className="field">
          <span>Password</span>
          <input
            type="password"
            required
            minLength={signup ? 8 : 1}
            value={password}
            onChange={(event) => setPassword(event.target.value)}
            autoComplete={signup ? "new-password" : "current-password"}
          />
          {signup ? <small className="muted">At least 8 characters.</small> : null}
        </label>
        <ErrorNote error={error} title={signup ? "Could not sign up" : "Could not log in"} />
        <button type="submit" className="button primary wide" disabled={sending}>
          {sending ? "Please wait…" : signup ? "Sign up" : "Log in"}
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
    </div>
  );
}

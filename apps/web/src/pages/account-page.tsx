// Account: who is logged in, and every sign-in of the user (browsers, scripts) with a way to end
// one, such as a browser left logged in elsewhere.
import type { SignIn } from "@gadget/protocol";
import { useState } from "react";
import { ApiError } from "../api/api-error.ts";
import { useAuth } from "../app/auth.tsx";
import { useLoader } from "../app/use-loader.ts";
import { ErrorNote } from "../components/error-note.tsx";
import { formatAgo, formatUntil } from "../lib/format.ts";

/** What the login page says after this browser's own sign-in was revoked from the list. */
export const REVOKED_HERE = "You revoked this browser's sign-in.";

/** A wire date as the browser's local date and time, for a cell's tooltip. */
const fullDate = (date: Date | string | null) => (date ? new Date(date).toLocaleString() : "");

/** The table of sign-ins; `onRevoke` rejects with an error to show. */
export function SignInTable({
  signIns,
  onRevoke,
}: {
  signIns: SignIn[];
  onRevoke: (signIn: SignIn) => Promise<void>;
}) {
  const [revoking, setRevoking] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  if (signIns.length === 0) return <p className="empty">No sign-ins.</p>;
  const now = Date.now();
  return (
    <>
      <ErrorNote error={error} title="Could not revoke" />
      <table className="table">
        <thead>
          <tr>
            <th>Signed in</th>
            <th>Last used</th>
            <th>Expires</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {signIns.map((signIn) => (
            <tr key={signIn.id}>
              <td data-label="Signed in" title={fullDate(signIn.createdAt)}>
                {formatAgo(signIn.createdAt, now)}
                {signIn.current ? (
                  <>
                    {" "}
                    <span className="pill pill-online">this browser</span>
                  </>
                ) : null}
              </td>
              <td data-label="Last used" className="muted" title={fullDate(signIn.lastUsedAt)}>
                {formatAgo(signIn.lastUsedAt, now)}
              </td>
              <td data-label="Expires" className="muted" title={fullDate(signIn.expiresAt)}>
                {formatUntil(signIn.expiresAt, now)}
              </td>
              <td className="right">
                <button
                  type="button"
                  className={signIn.current ? "button small danger" : "button small ghost"}
                  disabled={revoking !== null}
                  onClick={async () => {
                    setRevoking(signIn.id);
                    setError(null);
                    try {
                      await onRevoke(signIn);
                    } catch (caught) {
                      setError(caught);
                    }
                    setRevoking(null);
                  }}
                >
                  {revoking === signIn.id
                    ? "Revoking…"
                    : signIn.current
                      ? "Revoke and log out"
                      : "Revoke"}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

export function AccountPage() {
  const { api, user, forget } = useAuth();
  const signIns = useLoader(() => api.listSignIns().then((answer) => answer.signIns), [api]);
  const { setData } = signIns;
  const drop = (signIn: SignIn) =>
    setData((current) => current?.filter((item) => item.id !== signIn.id));

  return (
    <div className="page">
      <div className="page-head">
        <h1>Account</h1>
      </div>
      {user ? (
        <p className="muted">
          Logged in as <strong>{user.name}</strong> ({user.email}).
        </p>
      ) : null}
      <section>
        <h2>Sign-ins</h2>
        <p className="muted small">
          Each login (a browser, a script) is one sign-in. Revoke one you do not recognise or no
          longer use: it stops working at once. Unused, a sign-in expires on its own.
        </p>
      </section>
      {signIns.error ? (
        <ErrorNote error={signIns.error} title="Could not load sign-ins" onRetry={signIns.reload} />
      ) : signIns.data ? (
        <SignInTable
          signIns={signIns.data}
          onRevoke={async (signIn) => {
            try {
              await api.revokeSignIn(signIn.id);
            } catch (caught) {
              // Already gone (it expired, or was revoked elsewhere): the row goes too.
              if (caught instanceof ApiError && caught.status === 404) drop(signIn);
              throw caught;
            }
            // This browser's token no longer works: forget it here, as logging out does.
            if (signIn.current) forget(REVOKED_HERE);
            else drop(signIn);
          }}
        />
      ) : (
        <p className="muted">Loading sign-ins…</p>
      )}
    </div>
  );
}

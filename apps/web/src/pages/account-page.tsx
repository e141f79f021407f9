// Account: who is logged in, and every sign-in of the user (browsers, scripts) with a way to end
// one, such as a browser left logged in elsewhere.
import type { SignIn } from "@gadget/protocol";
import { useMutation } from "@tanstack/react-query";
import { useAuth } from "../app/auth.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import { useRevokeSignIn, useSignIns } from "../data/account.ts";
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
  onRevoke: (signIn: SignIn) => Promise<unknown>;
}) {
  const revoke = useMutation({ mutationFn: onRevoke });
  if (signIns.length === 0) return <p className="empty">No sign-ins.</p>;
  const now = Date.now();
  return (
    <>
      <ErrorNote error={revoke.error} title="Could not revoke" />
      <table className="table">
        <thead>
          <tr>
            <th>Device</th>
            <th>Signed in</th>
            <th>Last used</th>
            <th>Expires</th>
            <th>
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {signIns.map((signIn) => (
            <tr key={signIn.id}>
              <td data-label="Device">{signIn.device ?? "unknown browser or program"}</td>
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
                  disabled={revoke.isPending}
                  onClick={() => revoke.mutate(signIn)}
                >
                  {revoke.isPending && revoke.variables?.id === signIn.id
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
  const { user, forget } = useAuth();
  const signIns = useSignIns();
  const revoke = useRevokeSignIn(() => forget(REVOKED_HERE));

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
        <ErrorNote
          error={signIns.error}
          title="Could not load sign-ins"
          onRetry={() => void signIns.refetch()}
        />
      ) : signIns.data ? (
        <SignInTable signIns={signIns.data} onRevoke={revoke.mutateAsync} />
      ) : (
        <p className="muted">Loading sign-ins…</p>
      )}
    </div>
  );
}

// "Add a drone": the one line that installs and registers gadget-drone on a machine with Node.js,
// the manual way after it, and the token followed live until its drone is registered and online.
import type {
  DronePackageInfo,
  RegistrationTokenResponse,
  RegistrationTokenStatus,
} from "@gadget/protocol";
import { useNow } from "../app/use-now.ts";
import { CopyButton } from "../components/copy-button.tsx";
import { timeOf } from "../lib/format.ts";

function expiresIn(expiresAt: number, now: number): string {
  const seconds = Math.max(0, Math.round((expiresAt - now) / 1000));
  if (seconds === 0) return "expired";
  return `expires in ${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

/** A command on its own line with a copy button. */
function CommandLine({ text, testId }: { text: string; testId?: string }) {
  return (
    <div className="command-row">
      <pre className="command" data-testid={testId}>
        {text}
      </pre>
      <CopyButton text={text} />
    </div>
  );
}

/** Where the token is: nobody used it yet, a drone registered with it, or that drone is online. */
function Progress({
  status,
  expired,
  onNewToken,
}: {
  status: RegistrationTokenStatus | undefined;
  expired: boolean;
  onNewToken: () => void;
}) {
  const drone = status?.drone;
  if (!drone) {
    return expired ? (
      <button type="button" className="button small" onClick={onNewToken}>
        Make a new command
      </button>
    ) : (
      <p className="muted small" role="status">
        Waiting for the drone to register…
      </p>
    );
  }
  return (
    <div role="status">
      <p>
        {drone.status === "online" ? (
          <>
            <strong>{drone.name}</strong> is <span className="pill pill-online">online</span> and
            takes turns now.
          </>
        ) : (
          <>
            Registered as <strong>{drone.name}</strong>. Start it on that machine:
          </>
        )}
      </p>
      <CommandLine text="gadget-drone start" testId="start-command" />
      <p className="muted small">
        Or keep it running across logouts and reboots, as a systemd user service (Linux) or a
        launchd agent (macOS):
      </p>
      <CommandLine text="gadget-drone service install" testId="service-command" />
    </div>
  );
}

/** The panel shown after "Add a drone": the one line first, the manual way after, then progress. */
export function AddDronePanel({
  registration,
  status,
  dronePackage,
  onNewToken,
  onDone,
}: {
  registration: RegistrationTokenResponse;
  /** The token as last seen (polled, and the live list's status of its drone). */
  status: RegistrationTokenStatus | undefined;
  /** The package the server hands out, for the manual way; null when it has none. */
  dronePackage: DronePackageInfo | null | undefined;
  onNewToken: () => void;
  onDone: () => void;
}) {
  const now = useNow();
  const expiresAt = timeOf(registration.expiresAt) ?? now;
  const expired = expiresAt <= now;
  return (
    <section className="card register-card" aria-labelledby="add-drone-title">
      <h2 id="add-drone-title">Add a drone</h2>
      <p className="muted small">
        On the machine that should work for you (Linux or macOS with Node.js 20.19 or newer), paste
        this one line. It installs gadget-drone for your user, without root, and registers it under
        the machine's hostname; add <code>--name &lt;name&gt;</code> to call it something else.{" "}
        {status?.used ? (
          "The token has been used."
        ) : (
          <>
            The token works once and <strong>{expiresIn(expiresAt, now)}</strong> (at{" "}
            {new Date(expiresAt).toLocaleTimeString()}).
          </>
        )}
      </p>
      <CommandLine text={registration.install} testId="install-command" />
      <details>
        <summary>The manual way</summary>
        <p className="muted small">
          Install the package with npm (or unpack it anywhere), then register with the token:
        </p>
        {dronePackage ? (
          <>
            <CommandLine text={`npm install --global ${dronePackage.url}`} />
            <p className="muted small">
              gadget-drone {dronePackage.version}, sha256 <code>{dronePackage.sha256}</code>
            </p>
          </>
        ) : null}
        <CommandLine text={registration.command} testId="register-command" />
        <p className="muted small">
          Options: <code>--name &lt;name&gt;</code> (default: the hostname),{" "}
          <code>--workspace &lt;dir&gt;</code> (where project checkouts go),{" "}
          <code>--config &lt;file&gt;</code> (several drones on one machine),{" "}
          <code>--label key=value</code>, <code>--capacity &lt;n&gt;</code> (turns at once).
        </p>
      </details>
      <Progress status={status} expired={expired} onNewToken={onNewToken} />
      <button type="button" className="button small ghost" onClick={onDone}>
        Close
      </button>
    </section>
  );
}

// Activity's "Notify me": browser notifications of finished turns and approvals, and why the box
// stays off when the browser does not allow them.
import { useTurnNotifications } from "../app/turn-summary.tsx";

/** Why "Notify me" stays off, in words the user can act on. */
const refusalWords = {
  denied: "notifications are blocked for this site in the browser's settings; allow them there",
  unanswered: "the browser asked and was not answered; tick again and choose Allow",
} as const;

export function NotificationSwitch() {
  const notifications = useTurnNotifications();
  if (!notifications.supported) return null;
  return (
    <label
      className="activity-notify"
      title="A browser notification when a turn finishes, fails or needs approval"
    >
      <input
        type="checkbox"
        checked={notifications.enabled}
        onChange={(event) => void notifications.setEnabled(event.target.checked)}
      />{" "}
      Notify me
      {notifications.refusal ? (
        <span className="muted small" role="status">
          {" "}
          (off: {refusalWords[notifications.refusal]})
        </span>
      ) : null}
    </label>
  );
}

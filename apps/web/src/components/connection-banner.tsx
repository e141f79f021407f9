// Says when the live connection is down and when it is back; silent while all is well.
import { useEffect, useRef, useState } from "react";
import type { ConnectionState } from "../live/connection.ts";

/** Milliseconds a drop must last before the banner shows (a blip is not news). */
const SHOW_AFTER_MS = 800;

export function ConnectionBanner({ state }: { state: ConnectionState | null }) {
  const [visible, setVisible] = useState<"down" | "back" | null>(null);
  const wasDown = useRef(false);
  useEffect(() => {
    if (state === "reconnecting" || state === "connecting") {
      const timer = setTimeout(() => {
        wasDown.current = true;
        setVisible("down");
      }, SHOW_AFTER_MS);
      return () => clearTimeout(timer);
    }
    if (state === "connected" && wasDown.current) {
      wasDown.current = false;
      setVisible("back");
      const timer = setTimeout(() => setVisible(null), 2500);
      return () => clearTimeout(timer);
    }
    setVisible(null);
  }, [state]);
  if (!visible) return null;
  return (
    <div className={`banner ${visible === "down" ? "banner-warn" : "banner-ok"}`} role="status">
      {visible === "down"
        ? "Connection to the server lost. Reconnecting… Live updates resume where they left off."
        : "Reconnected. Live updates are flowing again."}
    </div>
  );
}

// "Notify me" on Activity when the browser does not allow notifications: the box stays off and
// says why, whether the browser's settings block them or its prompt went unanswered. The
// browser's Notification permission is played by a stand-in with the same three answers.
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it } from "vitest";
import { render, screen } from "../test/render.tsx";
import { NotificationSwitch } from "./notification-switch.tsx";

type Permission = "default" | "denied" | "granted";

/** A browser whose permission starts at `start` and whose prompt answers `answer`. */
function browserNotifications(start: Permission, answer: Permission) {
  const stand = {
    permission: start,
    requestPermission: async () => {
      stand.permission = answer;
      return answer;
    },
  };
  Object.defineProperty(window, "Notification", { value: stand, configurable: true });
}

afterEach(() => {
  Reflect.deleteProperty(window, "Notification");
  localStorage.clear();
});

describe("Notify me", () => {
  it("says the browser's settings block notifications, before and after a click", async () => {
    browserNotifications("denied", "denied");
    render(<NotificationSwitch />);
    const box = screen.getByRole("checkbox", { name: /Notify me/ });
    expect(screen.getByRole("status")).toHaveTextContent("blocked for this site");
    await userEvent.click(box);
    expect(box).not.toBeChecked();
    expect(screen.getByRole("status")).toHaveTextContent("allow them there");
  });

  it("says the prompt went unanswered when it was closed, and clears once allowed", async () => {
    browserNotifications("default", "default");
    render(<NotificationSwitch />);
    const box = screen.getByRole("checkbox", { name: /Notify me/ });
    expect(screen.queryByRole("status")).toBeNull();
    await userEvent.click(box);
    expect(box).not.toBeChecked();
    expect(await screen.findByRole("status")).toHaveTextContent(
      "the browser asked and was not answered; tick again and choose Allow",
    );
    browserNotifications("default", "granted");
    await userEvent.click(box);
    expect(box).toBeChecked();
    expect(screen.queryByRole("status")).toBeNull();
  });
});

// A session's settings: rename and change it, remove an always-allowed command, delete it after
// being asked.
import type { UpdateSessionBody } from "@gadget/protocol";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { render, screen } from "../test/render.tsx";
import { SessionSettings } from "./session-settings.tsx";

const session = {
  _id: "s1",
  name: "Fix login",
  mode: "agent" as const,
  approval: "on-write" as const,
  allowedCommands: ["node test.js", "npm run lint"],
};

describe("SessionSettings", () => {
  it("renames the session and changes its approval, sending only what changed", async () => {
    const bodies: UpdateSessionBody[] = [];
    render(
      <SessionSettings
        session={session}
        onSave={async (body) => {
          bodies.push(body);
        }}
        onDelete={async () => {}}
      />,
    );
    await userEvent.click(screen.getByText("Settings"));
    const name = screen.getByRole("textbox", { name: "Name" });
    await userEvent.clear(name);
    await userEvent.type(name, "Fix the login");
    await userEvent.selectOptions(screen.getByRole("combobox", { name: "Approval" }), "auto");
    await userEvent.click(screen.getByRole("button", { name: "Save" }));
    expect(bodies).toEqual([{ name: "Fix the login", approval: "auto" }]);
  });

  it("explains the chosen mode, tester and docser too", async () => {
    render(<SessionSettings session={session} onSave={async () => {}} onDelete={async () => {}} />);
    await userEvent.click(screen.getByText("Settings"));
    expect(screen.getByText(/^agent: reads, writes and runs code/)).toBeInTheDocument();
    const mode = screen.getByRole("combobox", { name: "Mode" });
    await userEvent.selectOptions(mode, "tester");
    expect(screen.getByText(/^tester: writes and runs tests/)).toBeInTheDocument();
    await userEvent.selectOptions(mode, "docser");
    expect(screen.getByText(/^docser: writes docs .* changes no behaviour/)).toBeInTheDocument();
  });

  it("lists the always-allowed commands and removes one", async () => {
    const bodies: UpdateSessionBody[] = [];
    render(
      <SessionSettings
        session={session}
        onSave={async (body) => {
          bodies.push(body);
        }}
        onDelete={async () => {}}
      />,
    );
    expect(screen.getByText("2 commands always allowed")).toBeInTheDocument();
    const list = screen.getByRole("list", { name: "Always allowed commands" });
    expect(list).toHaveTextContent("node test.js");
    await userEvent.click(screen.getByRole("button", { name: "Stop allowing node test.js" }));
    expect(bodies).toEqual([{ allowedCommands: ["npm run lint"] }]);
  });

  it("deletes only after asking, and shows why a delete was refused", async () => {
    let deletes = 0;
    render(
      <SessionSettings
        session={session}
        onSave={async () => {}}
        onDelete={async () => {
          deletes += 1;
          throw new Error("A turn of this session is queued or running");
        }}
      />,
    );
    await userEvent.click(screen.getByText("Settings"));
    await userEvent.click(screen.getByRole("button", { name: "Delete session" }));
    expect(deletes).toBe(0);
    expect(screen.getByText(/with all its turns/)).toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Yes, delete the session" }));
    expect(deletes).toBe(1);
    expect(await screen.findByRole("alert")).toHaveTextContent("queued or running");
  });
});

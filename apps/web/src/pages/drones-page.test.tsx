// The drones page's parts: the live table, the registration command, and merging live updates.
import type { Drone } from "@gadget/protocol";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/api-error.ts";
import { mergeDrone } from "../data/drones.ts";
import { render, screen } from "../test/render.tsx";
import { DroneTable, RegistrationCommand } from "./drones-page.tsx";

const laptop: Drone = {
  _id: "d1",
  name: "laptop",
  status: "online",
  activeTurns: 1,
  capacity: 2,
  lastSeenAt: new Date(),
  hostname: "ada-laptop",
  platform: "linux",
  version: "0.1.0",
  sandbox: { kind: "bubblewrap", version: "0.8.0", network: "isolated" },
  labels: [],
  ephemeral: false,
  outdated: false,
};
const server: Drone = {
  ...laptop,
  _id: "d2",
  name: "build-box",
  status: "offline",
  activeTurns: 0,
  lastSeenAt: new Date(Date.now() - 3 * 3600_000),
  sandbox: { kind: "none", version: null, network: "host" },
  labels: [],
  ephemeral: false,
  outdated: false,
};

describe("drones", () => {
  it("shows a drone's labels, ephemeral and outdated ones, and edits the user's labels only", async () => {
    const saved: string[][] = [];
    const labelled: Drone = {
      ...laptop,
      labels: ["gpu", "os=linux", "arch=x64", "sandbox=bubblewrap"],
      ephemeral: true,
      outdated: true,
      version: "0.0.9",
    };
    render(
      <DroneTable
        drones={[labelled]}
        onRevoke={async () => {}}
        onLabels={async (_drone, labels) => void saved.push(labels)}
      />,
    );
    const row = screen.getAllByRole("row")[1]!;
    expect(row).toHaveTextContent("ephemeral");
    expect(row).toHaveTextContent("0.0.9upgrade");
    expect(row).toHaveTextContent("gpuos=linuxarch=x64sandbox=bubblewrap");
    await userEvent.click(screen.getByRole("button", { name: "Edit" }));
    const input = screen.getByRole("textbox", { name: "Labels" });
    // The automatic ones are the drone's to say; only the user's are offered.
    expect(input).toHaveValue("gpu");
    await userEvent.type(input, " region=eu");
    await userEvent.click(screen.getByRole("button", { name: "Save" }));
    expect(saved).toEqual([["gpu", "region=eu"]]);
  });

  it("lists each drone with status, load, version, host and last seen", () => {
    render(<DroneTable drones={[laptop, server]} onRevoke={async () => {}} />);
    const rows = screen.getAllByRole("row").slice(1);
    expect(rows[0]).toHaveTextContent(
      /laptop.*online.*busy 1\/2.*0\.1\.0.*bubblewrap 0\.8\.0.*ada-laptop · linux.*now/,
    );
    expect(rows[1]).toHaveTextContent(
      /build-box.*offline.*idle · capacity 2.*unsandboxed.*3 h ago/,
    );
  });

  it("asks before revoking and shows a failed revoke in words", async () => {
    const revoked: string[] = [];
    render(
      <DroneTable
        drones={[laptop]}
        onRevoke={async (drone) => {
          revoked.push(drone._id);
          throw new ApiError("not_found", "This drone was already removed.", 404);
        }}
      />,
    );
    await userEvent.click(screen.getByRole("button", { name: "Revoke…" }));
    await userEvent.click(screen.getByRole("button", { name: "Revoke laptop" }));
    expect(revoked).toEqual(["d1"]);
    expect(await screen.findByRole("alert")).toHaveTextContent("This drone was already removed.");
  });

  it("shows the exact registration command with a copy button and the expiry", () => {
    const command = "gadget-drone register --server http://127.0.0.1:3000 --token reg_abc123";
    render(
      <RegistrationCommand
        registration={{
          token: "reg_abc123",
          command,
          expiresAt: new Date(Date.now() + 15 * 60_000),
        }}
        onNewToken={() => {}}
      />,
    );
    expect(screen.getByTestId("register-command")).toHaveTextContent(command);
    expect(screen.getByRole("button", { name: "Copy" })).toBeInTheDocument();
    expect(screen.getByText(/expires in 1[45]:\d\d/)).toBeInTheDocument();
  });

  it("offers a new command once the token has expired", async () => {
    let asked = 0;
    render(
      <RegistrationCommand
        registration={{
          token: "t",
          command: "gadget-drone register …",
          expiresAt: new Date(Date.now() - 1000),
        }}
        onNewToken={() => {
          asked += 1;
        }}
      />,
    );
    expect(screen.getByText("expired")).toBeInTheDocument();
    await userEvent.click(screen.getByRole("button", { name: "Make a new command" }));
    expect(asked).toBe(1);
  });

  it("merges live updates: a known drone is replaced, a new one appears first", () => {
    const busy = { ...laptop, activeTurns: 2 };
    expect(mergeDrone([laptop, server], busy)).toEqual([busy, server]);
    const fresh = { ...laptop, _id: "d3", name: "new" };
    expect(mergeDrone([laptop], fresh).map((drone) => drone.name)).toEqual(["new", "laptop"]);
  });
});

// The drones page's parts: the live table, the Add a drone panel following its token, and
// merging live updates.
import type { Drone } from "@gadget/protocol";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/api-error.ts";
import { mergeDrone } from "../data/drones.ts";
import { render, screen } from "../test/render.tsx";
import { AddDronePanel } from "./add-drone-panel.tsx";
import { DroneTable } from "./drones-page.tsx";

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
  updateRefused: null,
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
  updateRefused: null,
};

const command = "gadget-drone register --server http://127.0.0.1:3000 --token gdr_abc123";
const install = "curl -fsSL http://127.0.0.1:3000/install.sh | sh -s -- --token gdr_abc123";

function registration(expiresInMs = 15 * 60_000) {
  return {
    _id: "f".repeat(64),
    token: "gdr_abc123",
    command,
    install,
    expiresAt: new Date(Date.now() + expiresInMs),
  };
}

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

  it("says which update a drone refused, when and why, under its version", () => {
    const refusing: Drone = {
      ...laptop,
      version: "0.2.0",
      updateRefused: {
        version: "0.4.0",
        reason: "it stopped at start (exit 1) and was rolled back to 0.2.0",
        at: new Date(Date.now() - 5 * 60_000),
      },
    };
    render(<DroneTable drones={[refusing, server]} onRevoke={async () => {}} />);
    const rows = screen.getAllByRole("row").slice(1);
    expect(rows[0]).toHaveTextContent(
      "0.2.0update refused 0.4.0, 5 min ago: it stopped at start (exit 1) and was rolled back to 0.2.0",
    );
    expect(rows[1]).not.toHaveTextContent("update refused");
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

  it("shows the one line first, with the name it takes, and the manual way after it", () => {
    render(
      <AddDronePanel
        registration={registration()}
        status={{ used: false }}
        dronePackage={{
          version: "0.1.0",
          protocol: 4,
          sha256: "a".repeat(64),
          size: 1000,
          url: "http://127.0.0.1:3000/downloads/gadget-drone-0.1.0.tgz",
        }}
        onNewToken={() => {}}
        onDone={() => {}}
      />,
    );
    const panel = screen.getByRole("region", { name: "Add a drone" });
    expect(screen.getByTestId("install-command")).toHaveTextContent(install);
    // The one line comes before the manual way.
    const text = panel.textContent ?? "";
    expect(text.indexOf(install)).toBeLessThan(text.indexOf("The manual way"));
    expect(panel).toHaveTextContent("registers it under the machine's hostname; add --name <name>");
    expect(screen.getByTestId("register-command")).toHaveTextContent(command);
    expect(panel).toHaveTextContent(
      "npm install --global http://127.0.0.1:3000/downloads/gadget-drone-0.1.0.tgz",
    );
    expect(panel).toHaveTextContent("--workspace <dir>");
    expect(panel).toHaveTextContent("--config <file>");
    expect(screen.getByText(/expires in 1[45]:\d\d/)).toBeInTheDocument();
    expect(screen.getByRole("status")).toHaveTextContent("Waiting for the drone to register");
    expect(screen.queryByTestId("start-command")).not.toBeInTheDocument();
  });

  it("follows the token: registered as its name, then online, with the start and service commands", () => {
    const view = render(
      <AddDronePanel
        registration={registration()}
        status={{ used: false }}
        dronePackage={null}
        onNewToken={() => {}}
        onDone={() => {}}
      />,
    );
    view.rerender(
      <AddDronePanel
        registration={registration()}
        status={{ used: true, drone: { _id: "d9", name: "laptop-2", status: "offline" } }}
        dronePackage={null}
        onNewToken={() => {}}
        onDone={() => {}}
      />,
    );
    expect(screen.getByRole("status")).toHaveTextContent(
      "Registered as laptop-2. Start it on that machine:",
    );
    expect(screen.getByTestId("start-command")).toHaveTextContent("gadget-drone start");
    expect(screen.getByTestId("service-command")).toHaveTextContent("gadget-drone service install");
    view.rerender(
      <AddDronePanel
        registration={registration()}
        status={{ used: true, drone: { _id: "d9", name: "laptop-2", status: "online" } }}
        dronePackage={null}
        onNewToken={() => {}}
        onDone={() => {}}
      />,
    );
    expect(screen.getByRole("status")).toHaveTextContent("laptop-2 is online and takes turns now.");
    expect(screen.queryByText(/expires in/)).not.toBeInTheDocument();
    expect(screen.getByRole("region", { name: "Add a drone" })).toHaveTextContent(
      "The token has been used.",
    );
    expect(screen.getByTestId("service-command")).toBeInTheDocument();
  });

  it("offers a new command once the token has expired unused", async () => {
    let asked = 0;
    render(
      <AddDronePanel
        registration={registration(-1000)}
        status={{ used: false }}
        dronePackage={null}
        onNewToken={() => {
          asked += 1;
        }}
        onDone={() => {}}
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

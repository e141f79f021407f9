// Adding a project: a git URL the server refuses says why once, under the field, not again in
// the error box above the buttons.
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/api-error.ts";
import { render, screen } from "../test/render.tsx";
import { ProjectForm } from "./projects-page.tsx";

describe("ProjectForm", () => {
  it("shows a refused git URL's problem once, under the field", async () => {
    const why = "ext:: URLs run commands on the drone and are refused";
    render(
      <ProjectForm
        onCreate={async () => {
          throw new ApiError("validation_failed", `Invalid body: gitUrl: ${why}`, 400, [
            { path: "gitUrl", message: why },
          ]);
        }}
      />,
    );
    await userEvent.type(screen.getByRole("textbox", { name: "Name" }), "calc");
    await userEvent.type(screen.getByRole("textbox", { name: /Git URL/ }), "/srv/git/calc.git");
    await userEvent.click(screen.getByRole("button", { name: "Add project" }));
    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent("Could not add the project: see the problem under the field.");
    expect(screen.getAllByText(new RegExp(why))).toHaveLength(1);
    expect(screen.getByRole("textbox", { name: /Git URL/ })).toHaveAccessibleDescription(why);
  });
});

// The Activity page's filters: project, drone and status, each a labelled choice.
import type { TurnStatus } from "@gadget/protocol";
import { memo } from "react";
import { useDrones } from "../data/drones.ts";
import { useProjects } from "../data/projects.ts";

/** The status filter's choices: a label and the statuses it shows. */
export const statusChoices: ReadonlyArray<{
  value: string;
  label: string;
  statuses: TurnStatus[];
}> = [
  { value: "", label: "All statuses", statuses: [] },
  {
    value: "live",
    label: "Live",
    statuses: ["queued", "dispatched", "processing", "awaiting_approval"],
  },
  { value: "running", label: "Running", statuses: ["dispatched", "processing"] },
  { value: "awaiting_approval", label: "Needs approval", statuses: ["awaiting_approval"] },
  { value: "queued", label: "Queued", statuses: ["queued"] },
  { value: "completed", label: "Completed", statuses: ["completed"] },
  { value: "failed", label: "Failed", statuses: ["failed"] },
  { value: "cancelled", label: "Stopped", statuses: ["cancelled"] },
  { value: "interrupted", label: "Interrupted", statuses: ["interrupted"] },
];

/** One filter of the page: a labelled choice. */
function FilterSelect({
  label,
  value,
  onChange,
  choices,
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
  choices: ReadonlyArray<{ value: string; label: string }>;
}) {
  return (
    <label className="field inline">
      <span>{label}</span>
      <select value={value} onChange={(event) => onChange(event.target.value)}>
        {choices.map((choice) => (
          <option key={choice.value} value={choice.value}>
            {choice.label}
          </option>
        ))}
      </select>
    </label>
  );
}

/** The page's filters, apart: a row's change does not render them again. */
export const Filters = memo(function Filters({
  project,
  drone,
  status,
  setProject,
  setDrone,
  setStatus,
}: {
  project: string;
  drone: string;
  status: string;
  setProject: (value: string) => void;
  setDrone: (value: string) => void;
  setStatus: (value: string) => void;
}) {
  const projects = useProjects();
  const drones = useDrones();
  return (
    <fieldset className="activity-filters" aria-label="Filters">
      <FilterSelect
        label="Project"
        value={project}
        onChange={setProject}
        choices={[
          { value: "", label: "All projects" },
          ...(projects.data ?? []).map((item) => ({ value: item._id, label: item.name })),
        ]}
      />
      <FilterSelect
        label="Drone"
        value={drone}
        onChange={setDrone}
        choices={[
          { value: "", label: "All drones" },
          ...(drones.data ?? []).map((item) => ({ value: item._id, label: item.name })),
        ]}
      />
      <FilterSelect label="Status" value={status} onChange={setStatus} choices={statusChoices} />
    </fieldset>
  );
});

// Managing a project from its page: rename it, delete it with everything in it (asked first, the
// settings' last section), and "Clone now", which has a drone clone it so its files show before
// any turn.
import { type Project, type ProjectCloneAnswer, updateProjectBodySchema } from "@gadget/protocol";
import { zodResolver } from "@hookform/resolvers/zod";
import { useMutation } from "@tanstack/react-query";
import { useForm } from "react-hook-form";
import { z } from "zod";
import { ConfirmButton } from "../components/confirm-button.tsx";
import { ErrorNote } from "../components/error-note.tsx";
import { useCloneProject } from "../data/projects.ts";
import { Field } from "../forms/field.tsx";
import { showServerProblems } from "../forms/server-problems.ts";

const cloneWords: Record<ProjectCloneAnswer["outcome"], string> = {
  cloned: "Cloned",
  "fast-forwarded": "Fetched and fast-forwarded",
  "up-to-date": "Fetched: already up to date",
  "kept-local": "Fetched; the checkout was left as it is",
};

/**
 * "Clone now": a drone clones (or fetches) the project's checkout; says which drone and how it
 * went, and the default branch's files are read again.
 */
export function CloneNowButton({ projectId }: { projectId: string }) {
  const clone = useCloneProject(projectId);
  return (
    <>
      <button
        type="button"
        className="button small"
        disabled={clone.isPending}
        onClick={() => clone.mutate()}
      >
        {clone.isPending ? "Cloning…" : "Clone now"}
      </button>
      {clone.data ? (
        <span className="muted small" role="status">
          {cloneWords[clone.data.outcome]} on {clone.data.drone.name}
        </span>
      ) : null}
      <ErrorNote error={clone.error} title="Could not clone the project" />
    </>
  );
}

const renameSchema = z.object({ name: updateProjectBodySchema.shape.name.unwrap() });

/** Rename the project. */
export function ProjectManage({
  project,
  onRename,
}: {
  project: Pick<Project, "name">;
  onRename: (name: string) => Promise<unknown>;
}) {
  const form = useForm<z.input<typeof renameSchema>, unknown, z.output<typeof renameSchema>>({
    resolver: zodResolver(renameSchema),
    defaultValues: { name: project.name },
  });
  const rename = useMutation({
    mutationFn: onRename,
    onError: (error) => showServerProblems(form, error),
  });
  const name = form.watch("name");
  return (
    <div className="project-manage">
      <form
        className="field-row"
        onSubmit={form.handleSubmit((values) => rename.mutate(values.name))}
        aria-label="Rename the project"
      >
        <Field label="Name" error={form.formState.errors.name}>
          <input required {...form.register("name")} />
        </Field>
        <button
          type="submit"
          className="button small"
          disabled={rename.isPending || name.trim() === project.name}
        >
          {rename.isPending ? "Renaming…" : "Rename"}
        </button>
      </form>
      <ErrorNote error={rename.error} title="Could not rename the project" />
    </div>
  );
}

/** Delete the project with its sessions and turns: the settings' last section, asked first. */
export function ProjectDelete({
  project,
  onDelete,
}: {
  project: Pick<Project, "name">;
  onDelete: () => Promise<unknown>;
}) {
  return (
    <section className="project-danger" aria-label="Delete this project">
      <h3>Delete this project</h3>
      <p className="muted small">
        Its sessions, turns and their steps go; the drones' checkouts stay on disk.
      </p>
      <ConfirmButton
        label="Delete project"
        question={`Delete “${project.name}” with all its sessions, turns and their steps? The drones' checkouts stay on disk. This cannot be undone.`}
        confirmLabel="Yes, delete the project"
        errorTitle="Could not delete the project"
        onConfirm={onDelete}
      />
    </section>
  );
}

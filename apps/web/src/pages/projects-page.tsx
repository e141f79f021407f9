// Projects: the user's projects and a form to add one from a git URL.
import {
  type CreateProjectBody,
  createProjectBodySchema,
  type GitUrlCheck,
  type Project,
} from "@gadget/protocol";
import { zodResolver } from "@hookform/resolvers/zod";
import { useMutation } from "@tanstack/react-query";
import { useForm } from "react-hook-form";
import { Link, useLocation } from "wouter";
import { z } from "zod";
import { ErrorNote } from "../components/error-note.tsx";
import { useCreateProject, useProjects } from "../data/projects.ts";
import { Field } from "../forms/field.tsx";
import { showServerProblems } from "../forms/server-problems.ts";
import { lineList, optionalText } from "../forms/text-values.ts";
import { formatAgo } from "../lib/format.ts";

const shape = createProjectBodySchema.shape;
const projectFieldsSchema = z.object({
  name: shape.name,
  gitUrl: shape.gitUrl,
  defaultBranch: optionalText(shape.defaultBranch.unwrap()),
  verify: lineList(shape.verifyCommands.unwrap()),
});
type ProjectFields = z.input<typeof projectFieldsSchema>;
type ProjectValues = z.output<typeof projectFieldsSchema>;

const emptyFields: ProjectFields = { name: "", gitUrl: "", defaultBranch: "", verify: "" };

function bodyOf({ name, gitUrl, defaultBranch, verify }: ProjectValues): CreateProjectBody {
  return {
    name,
    gitUrl,
    ...(defaultBranch ? { defaultBranch } : {}),
    ...(verify.length > 0 ? { verifyCommands: verify } : {}),
  };
}

export function ProjectForm({
  onCreate,
}: {
  /** Creates it; resolves with what the drone's check of its URL found, if the server says. */
  onCreate: (body: CreateProjectBody) => Promise<GitUrlCheck | undefined>;
}) {
  const form = useForm<ProjectFields, unknown, ProjectValues>({
    resolver: zodResolver(projectFieldsSchema),
    defaultValues: emptyFields,
  });
  const errors = form.formState.errors;
  const create = useMutation({
    mutationFn: (values: ProjectValues) => onCreate(bodyOf(values)),
    onSuccess: () => form.reset(emptyFields),
    onError: (error) => showServerProblems(form, error, { verifyCommands: "verify" }),
  });
  const check = create.data;
  return (
    <form
      className="card form-grid"
      onSubmit={form.handleSubmit((values) => create.mutate(values))}
      aria-label="Add a project"
    >
      <h2>Add a project</h2>
      <Field label="Name" error={errors.name}>
        <input required {...form.register("name")} />
      </Field>
      <Field label="Git URL" error={errors.gitUrl}>
        <input
          required
          {...form.register("gitUrl")}
          placeholder="https://github.com/you/app.git or /path/to/repo"
        />
      </Field>
      <Field label="Default branch (optional)" error={errors.defaultBranch}>
        <input {...form.register("defaultBranch")} placeholder="main" />
      </Field>
      <Field label="Verify commands (optional, one a line)" error={errors.verify}>
        <textarea rows={2} {...form.register("verify")} placeholder="npm test" />
      </Field>
      <ErrorNote
        error={create.error}
        title="Could not add the project"
        fields={[...Object.keys(emptyFields), "verifyCommands"]}
      />
      {check ? (
        <p className={check.checked ? "ok-note" : "note"} role="status">
          {check.message}
        </p>
      ) : null}
      <div className="form-actions">
        <button type="submit" className="button primary" disabled={create.isPending}>
          {create.isPending ? "Adding…" : "Add project"}
        </button>
      </div>
    </form>
  );
}

export function ProjectList({ projects }: { projects: Project[] }) {
  if (projects.length === 0) {
    return <p className="empty">No projects yet. Add one from a git URL below.</p>;
  }
  return (
    <ul className="card-list">
      {projects.map((project) => (
        <li key={project._id}>
          <Link href={`/projects/${project._id}`} className="card card-link">
            <strong>{project.name}</strong>
            <span className="muted small">{project.gitUrl}</span>
            <span className="muted small">
              added {formatAgo(project.createdAt as unknown as string)}
            </span>
          </Link>
        </li>
      ))}
    </ul>
  );
}

export function ProjectsPage() {
  const projects = useProjects();
  const create = useCreateProject();
  const [, navigate] = useLocation();
  return (
    <div className="page">
      <div className="page-head">
        <h1>Projects</h1>
      </div>
      {projects.error ? (
        <ErrorNote
          error={projects.error}
          title="Could not load projects"
          onRetry={() => void projects.refetch()}
        />
      ) : projects.data ? (
        <ProjectList projects={projects.data} />
      ) : (
        <p className="muted">Loading projects…</p>
      )}
      <ProjectForm
        onCreate={async (body) => {
          const answer = await create.mutateAsync(body);
          // A new project opens once a drone has checked its URL; otherwise this page stays, to
          // say why it was not checked (the project is in the list above).
          if (answer.gitUrlCheck.checked) navigate(`/projects/${answer.project._id}`);
          return answer.gitUrlCheck;
        }}
      />
    </div>
  );
}

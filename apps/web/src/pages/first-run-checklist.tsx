// What a newcomer does before the first turn, shown on the empty Activity page: add a provider,
// add a project, start a session, send a prompt. Each step reads whether it is done from the API
// and links to where it is done.
import type { ChatSession, Project } from "@gadget/protocol";
import { useQueries } from "@tanstack/react-query";
import { Link } from "wouter";
import { useApi } from "../app/auth.tsx";
import { keys } from "../data/keys.ts";
import { useProjects } from "../data/projects.ts";
import { useProviders } from "../data/providers.ts";

/** Projects whose sessions are read for the "session" step: a newcomer has few. */
const projectsLooked = 5;

interface Step {
  key: string;
  label: string;
  done: boolean;
  href: string;
  action: string;
}

/** The first session found among the user's first projects, with its project. */
function useFirstSession(projects: Project[]): { project: Project; session: ChatSession } | null {
  const api = useApi();
  const looked = projects.slice(0, projectsLooked);
  const answers = useQueries({
    queries: looked.map((project) => ({
      queryKey: keys.sessions(project._id),
      queryFn: async () => (await api.listSessions(project._id)).sessions,
    })),
  });
  for (const [index, answer] of answers.entries()) {
    const session = answer.data?.[0];
    const project = looked[index];
    if (session && project) return { project, session };
  }
  return null;
}

/** The steps in order; `turns` says whether any turn exists yet. */
export function FirstRunChecklist({ turns }: { turns: boolean }) {
  const providers = useProviders();
  const projects = useProjects();
  const first = useFirstSession(projects.data ?? []);
  const project = projects.data?.[0];
  const steps: Step[] = [
    {
      key: "provider",
      label: "Add a model provider",
      done: (providers.data?.length ?? 0) > 0,
      href: "/providers",
      action: "open Providers",
    },
    {
      key: "project",
      label: "Add a project (a git repository)",
      done: project !== undefined,
      href: "/projects",
      action: "open Projects",
    },
    {
      key: "session",
      label: "Start a session in the project",
      done: first !== null,
      href: project ? `/projects/${project._id}` : "/projects",
      action: project ? `open ${project.name}` : "open Projects",
    },
    {
      key: "prompt",
      label: "Send a prompt from the session",
      done: turns,
      href: first ? `/projects/${first.project._id}/sessions/${first.session._id}` : "/projects",
      action: first ? `open ${first.session.name}` : "open a session",
    },
  ];
  // Steps are shown once known: a step that flips from "to do" to done reads as a glitch.
  if (providers.isPending || projects.isPending) return null;
  const next = steps.find((step) => !step.done);
  return (
    <section className="card first-run" aria-labelledby="first-run-title">
      <h2 id="first-run-title">Get started</h2>
      <ol className="first-run-steps">
        {steps.map((step) => (
          <li
            key={step.key}
            className={step.done ? "done" : undefined}
            aria-current={step === next ? "step" : undefined}
          >
            <span className="first-run-mark" aria-hidden="true">
              {step.done ? "✓" : "○"}
            </span>{" "}
            {step.label}
            <span className="visually-hidden">{step.done ? " (done)" : " (to do)"}</span>
            {step.done ? null : (
              <>
                {" "}
                — <Link href={step.href}>{step.action}</Link>
              </>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}

// Fixture: starts a private Gitea, prints its process and URL, and waits to be killed.
import { startGitea } from "../gitea.ts";

const gitea = await startGitea();
console.log(`GITEA ${gitea.pid} ${gitea.url}`);
setInterval(() => {}, 1000);

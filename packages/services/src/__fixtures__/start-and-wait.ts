// Fixture: starts the harness, prints the PIDs, and waits to be killed.
import { findRepoRoot } from "../repo-root.ts";
import { startServices } from "../services.ts";

const services = await startServices({ rootDir: findRepoRoot(), dataDir: process.argv[2] ?? "" });
console.log(`PIDS ${services.pids.join(",")}`);
setInterval(() => {}, 1000);

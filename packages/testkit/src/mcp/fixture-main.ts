// The bundled fixture's entry point.
import { runStdioFixture } from "./fixture-server.ts";

await runStdioFixture(process.argv.slice(2));

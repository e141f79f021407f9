// How every redis-server the harness starts is told to run: on a loopback port, its files in its
// own folder, keeping nothing on disk unless asked (tests, benches and `pnpm start` alike).

/** The redis-server arguments for `port` with its files in `dataDir`. */
export function redisServerArgs(
  port: number,
  dataDir: string,
  options: { persistent?: boolean } = {},
): string[] {
  return [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dataDir,
    "--save",
    "",
    "--appendonly",
    options.persistent ? "yes" : "no",
    // Keep the command line it was started with (redis-server shows its address otherwise): the
    // reaper finds a server by it when its owner died before watching its pid (reaper.ts).
    "--set-proc-title",
    "no",
  ];
}

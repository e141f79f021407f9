// The one pino setup for every Gadget Code process: JSON lines, pretty only on a TTY,
// and secrets redacted wherever they appear in a logged object.
import { type DestinationStream, type Logger, type LoggerOptions, pino } from "pino";

export type { Logger } from "pino";

/** Field names whose values never reach a log, at any depth up to four levels. */
export const redactedKeys = ["apiKey", "credential", "token", "password", "authorization"] as const;

function redactionPaths(): string[] {
  const paths: string[] = [];
  for (const key of [...redactedKeys, "Authorization"]) {
    let prefix = "";
    for (let depth = 0; depth < 5; depth++) {
      paths.push(`${prefix}${key}`);
      prefix += "*.";
    }
  }
  return paths;
}

export interface LoggerSettings {
  /** Minimum level; default "info". */
  level?: string;
  /** Added to every line as `name`. */
  name?: string;
  /** Pretty, coloured output for people; default: only when stdout is a TTY. */
  pretty?: boolean;
  /** Where lines go; default stdout. Tests pass a stream to read what was logged. */
  destination?: DestinationStream;
  /** Fields on every line, e.g. `{ droneId }`. */
  base?: Record<string, unknown>;
}

/**
 * Creates a logger. Values of apiKey, credential, token, password and authorization are replaced by "[redacted]".
 * @example const log = createLogger({ name: "server", level: env.LOG_LEVEL });
 */
export function createLogger(settings: LoggerSettings = {}): Logger {
  const options: LoggerOptions = {
    level: settings.level ?? "info",
    redact: { paths: redactionPaths(), censor: "[redacted]" },
    base: { ...(settings.name ? { name: settings.name } : {}), ...settings.base },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (settings.destination) return pino(options, settings.destination);
  const pretty = settings.pretty ?? Boolean(process.stdout.isTTY);
  if (pretty) {
    return pino({ ...options, transport: { target: "pino-pretty", options: { colorize: true } } });
  }
  return pino(options);
}

/** A logger that drops everything, for callers that pass none. */
export const silentLogger: Logger = pino({ level: "silent" });

// Small formatting helpers for money, tokens, durations and times, as the UI writes them.
import { formatDuration, parseMcpToolName } from "@gadget/protocol";

/** "$0.0412" for small amounts, "$1.50" from a dollar up. */
export function formatCost(cost: number): string {
  if (!Number.isFinite(cost)) return "$–";
  if (cost === 0) return "$0.00";
  if (cost < 1) return `$${cost.toFixed(4)}`;
  return `$${cost.toFixed(2)}`;
}

/** "950", "12.3k", "1.2M". */
export function formatTokens(tokens: number): string {
  if (tokens < 1000) return String(Math.round(tokens));
  if (tokens < 1_000_000) return `${(tokens / 1000).toFixed(tokens < 10_000 ? 1 : 0)}k`;
  return `${(tokens / 1_000_000).toFixed(1)}M`;
}

/** "850ms" below a second, "4.2s" below ten, then protocol's "1m 05s" style, "2d 03h" past a day. */
export function formatElapsed(durationMs: number): string {
  if (durationMs < 1000) return `${Math.max(0, Math.round(durationMs))}ms`;
  if (durationMs < 10_000) return `${(durationMs / 1000).toFixed(1)}s`;
  const hours = Math.floor(durationMs / 3_600_000);
  if (hours >= 24) return `${Math.floor(hours / 24)}d ${String(hours % 24).padStart(2, "0")}h`;
  return formatDuration(durationMs);
}

/** "just now", "5 min ago", "3 h ago", else a date. */
export function formatAgo(date: Date | string | null | undefined, now = Date.now()): string {
  if (!date) return "never";
  const time = typeof date === "string" ? Date.parse(date) : date.getTime();
  if (!Number.isFinite(time)) return "unknown";
  const seconds = Math.round((now - time) / 1000);
  if (seconds < 10) return "just now";
  if (seconds < 60) return `${seconds} s ago`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return new Date(time).toLocaleDateString();
}

/** "in 5 min", "in 3 h", "in 12 days" for a time ahead; "expired" once it has passed. */
export function formatUntil(date: Date | string | null | undefined, now = Date.now()): string {
  const time = timeOf(date);
  if (time === null) return "unknown";
  const seconds = Math.round((time - now) / 1000);
  if (seconds <= 0) return "expired";
  if (seconds < 60) return `in ${seconds} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `in ${minutes} min`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `in ${hours} h`;
  return `in ${Math.round(hours / 24)} days`;
}

/** Milliseconds since epoch from a wire date (ISO string or Date), or null. */
export function timeOf(date: Date | string | null | undefined): number | null {
  if (!date) return null;
  const time = typeof date === "string" ? Date.parse(date) : date.getTime();
  return Number.isFinite(time) ? time : null;
}

/**
 * A tool's name as people read it: an MCP server's tool as "mcp · <server> › <tool>", a built-in
 * tool as it is.
 */
export function toolLabel(name: string): string {
  const mcp = parseMcpToolName(name);
  return mcp ? `mcp · ${mcp.server} › ${mcp.tool}` : name;
}

/** A one-line preview of tool arguments: the path or command when there is one. */
export function describeParams(params: unknown): string {
  if (params === undefined || params === null) return "";
  if (typeof params !== "object") return String(params);
  const record = params as Record<string, unknown>;
  for (const key of ["command", "path", "pattern"]) {
    const value = record[key];
    if (typeof value === "string") return value;
  }
  const text = JSON.stringify(params);
  return text.length > 160 ? `${text.slice(0, 157)}…` : text;
}

/** Sizes as people read them: 1.2 MB (decimal units, as file managers show). */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = -1;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}

/** An ISO time as a short local date and time. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short" });
}

/** Milliseconds as 120 ms, 3.4 s or 2 min 5 s. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** How long a query took: its recorded timings when it has them (the status times are whole seconds). */
function queryDuration(status: {
  CreatedAt: string;
  UpdatedAt: string;
  Timings?: { QueueWaitMs: number; LoadMs: number; ExecuteMs: number; WriteMs: number } | null;
}): number {
  const t = status.Timings;
  if (t) return t.QueueWaitMs + t.LoadMs + t.ExecuteMs + t.WriteMs;
  return Math.max(0, Date.parse(status.UpdatedAt) - Date.parse(status.CreatedAt));
}

/**
 * How long a finished query took, or "reused" for one that did not run but
 * answered from an identical earlier query's kept result (its times say 0 ms).
 */
export function queryTiming(status: Parameters<typeof queryDuration>[0] & { Reused: boolean }): string {
  if (status.Reused) return "reused";
  const t = status.Timings;
  // A query that waited its turn (behind the owner's other queries, say) says so apart from its own run.
  if (t && t.QueueWaitMs >= 1000)
    return `${formatDuration(t.LoadMs + t.ExecuteMs + t.WriteMs)} (after ${formatDuration(t.QueueWaitMs)} in the queue)`;
  return formatDuration(queryDuration(status));
}

/** `n` things, in the singular for one: "1 row", "2,000 rows". */
export function countOf(n: number, thing: string): string {
  return `${formatCount(n)} ${thing}${n === 1 ? "" : "s"}`;
}

import type { QueryLimits } from "../config";
import type { DataTypeName } from "../ingest/value-types";

/** The states of a query (DECISIONS §7). */
export type QueryStatus = "queued" | "running" | "succeeded" | "failed" | "cancelled";

export const FINISHED: ReadonlySet<QueryStatus> = new Set(["succeeded", "failed", "cancelled"]);

/** Where the time of a run went, in milliseconds. */
export interface QueryTimings {
  queueWaitMs: number;
  loadMs: number;
  executeMs: number;
  writeMs: number;
}

/** A result column as the engine reports it, typed with the service's data types. */
export interface ResultColumn {
  name: string;
  type: DataTypeName;
}

/** Everything known about one query; the Durable Object of the query owns it. */
export interface QueryRecord {
  queryId: string;
  ownerUserId: string;
  sql: string;
  /** The limits in force when it was submitted; the engine Worker runs it under these (absent on older records). */
  limits?: QueryLimits;
  status: QueryStatus;
  message: string;
  createdAt: string;
  updatedAt: string;
  /** Creation time in epoch milliseconds, for the queue-wait timing (createdAt has whole seconds). */
  createdAtMs: number;
  /** Result file size in bytes; 0 until it succeeds. */
  size: number;
  rowCount: number | null;
  bytesLoaded: number | null;
  peakMemoryBytes: number | null;
  timings: QueryTimings | null;
  /** Which engine ran it: sql.js in the engine Worker, or a data item's table store. */
  engine?: "sqljs" | "store";
  resultKey: string | null;
  resultColumns: ResultColumn[] | null;
  expiresAt: string | null;
}

/** What a finished run reports. */
export type RunOutcome =
  | {
      status: "succeeded";
      engine?: "sqljs" | "store";
      size: number;
      rowCount: number;
      bytesLoaded: number;
      peakMemoryBytes: number | null;
      timings: QueryTimings;
      resultKey: string;
      resultColumns: ResultColumn[];
      expiresAt: string;
    }
  | {
      status: "failed";
      engine?: "sqljs" | "store";
      message: string;
      bytesLoaded?: number;
      peakMemoryBytes?: number | null;
      timings?: Partial<QueryTimings>;
    };

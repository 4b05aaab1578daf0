import type { DataTypeName } from "../ingest/value-types";
import { isoSeconds } from "../util/time";
import type { Parameters } from "./sql/parameters";
import type { QueryCallback } from "../webhooks/completion";

/** The states of a query (docs/api.md). */
export type QueryStatus = "queued" | "running" | "succeeded" | "failed" | "cancelled";
/** The states a query ends in. */
export type FinalStatus = "succeeded" | "failed" | "cancelled";

export const FINISHED: ReadonlySet<QueryStatus> = new Set(["succeeded", "failed", "cancelled"]);

export function isFinished(status: QueryStatus): status is FinalStatus {
  return FINISHED.has(status);
}

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

/** What a run leaves behind; empty (NO_FIGURES) until the query has ended. */
export interface QueryFigures {
  /** Result file size in bytes; 0 unless it succeeded. */
  size: number;
  rowCount: number | null;
  bytesLoaded: number | null;
  peakMemoryBytes: number | null;
  timings: QueryTimings | null;
  /** Which engine ran it: sql.js in the engine Worker, or a data item's table store. */
  engine: "sqljs" | "store" | null;
  resultKey: string | null;
  resultColumns: ResultColumn[] | null;
  expiresAt: string | null;
  /** A succeeded run's reuse key (reuse.ts): what a later identical query finds its result by; never shown. */
  reuseKey: string | null;
}

export const NO_FIGURES: QueryFigures = {
  size: 0,
  rowCount: null,
  bytesLoaded: null,
  peakMemoryBytes: null,
  timings: null,
  engine: null,
  resultKey: null,
  resultColumns: null,
  expiresAt: null,
  reuseKey: null,
};

/** Where a query stands: its status, what it is doing or how it ended, and its figures. */
export interface QueryProgress extends QueryFigures {
  status: QueryStatus;
  message: string;
  updatedAt: string;
}

/** How a query ended, as its D1 row keeps it. */
export interface QueryEnd extends QueryProgress {
  status: FinalStatus;
}

/** A query's D1 row (history.ts): who submitted what, when, and, once it has ended, how. */
export interface QueryRow {
  queryId: string;
  ownerUserId: string;
  sql: string;
  /** The values of its placeholders, as submitted; null without. */
  parameters: Parameters | null;
  /** ISO 8601 with milliseconds, so the history keeps the order of queries submitted within one second. */
  createdAt: string;
  /** Null while the query lives: its Durable Object (QueryState) holds its state until it ends. */
  end: QueryEnd | null;
  /** The completion webhook it was submitted with, and its latest delivery attempt; null without. */
  callback: QueryCallback | null;
  /** It answered from an earlier query's result (reuse.ts) instead of running; which one is never shown. */
  reused: boolean;
}

/** A query as its owner sees it: its row, with where it stands. */
export interface QueryRecord extends QueryProgress {
  queryId: string;
  ownerUserId: string;
  sql: string;
  parameters: Parameters | null;
  /** The row's creation time at whole seconds, like every time on the wire. */
  createdAt: string;
  callback: QueryCallback | null;
  reused: boolean;
}

export function queryRecord(row: QueryRow, progress: QueryProgress): QueryRecord {
  return {
    queryId: row.queryId,
    ownerUserId: row.ownerUserId,
    sql: row.sql,
    parameters: row.parameters,
    createdAt: isoSeconds(Math.floor(Date.parse(row.createdAt) / 1000)),
    reused: row.reused,
    status: progress.status,
    message: progress.message,
    updatedAt: progress.updatedAt,
    size: progress.size,
    rowCount: progress.rowCount,
    bytesLoaded: progress.bytesLoaded,
    peakMemoryBytes: progress.peakMemoryBytes,
    timings: progress.timings,
    engine: progress.engine,
    resultKey: progress.resultKey,
    resultColumns: progress.resultColumns,
    expiresAt: progress.expiresAt,
    callback: row.callback,
    reuseKey: progress.reuseKey,
  };
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
      /** Null when the query may not be reused (reuse.ts). */
      reuseKey: string | null;
    }
  | {
      status: "failed";
      engine?: "sqljs" | "store";
      message: string;
      bytesLoaded?: number;
      peakMemoryBytes?: number | null;
      timings?: Partial<QueryTimings>;
    };

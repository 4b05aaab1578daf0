import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { settings } from "../../src/worker/config";
import { insertQuery } from "../../src/worker/query/history";
import type { RunOutcome } from "../../src/worker/query/query-record";
import type { QueryState } from "../../src/worker/query/query-state";
import { randomToken } from "../../src/worker/util/crypto";
import { dbFailing } from "./http";
import { stateOf } from "./query";

const HOUR_MS = 3_600_000;

/** A run that succeeded with a small result, as the engine reports it to the query's QueryState. */
export const SUCCEEDED_RUN: Extract<RunOutcome, { status: "succeeded" }> = {
  status: "succeeded",
  size: 12,
  rowCount: 2,
  bytesLoaded: 40,
  peakMemoryBytes: 1000,
  timings: { queueWaitMs: 1, loadMs: 2, executeMs: 3, writeMs: 4 },
  resultKey: "results/x.csv",
  resultColumns: [{ name: "a", type: "INTEGER" }],
  expiresAt: "2030-01-01T00:00:00Z",
  reuseKey: null,
};

/**
 * A query's row, as a submit writes it (with a Callback to `callbackUrl`
 * when given), and the stub of its QueryState (not created yet) with what
 * creates it: an hour to run.
 */
export async function newQueryState(ownerUserId: string, options: { sql?: string; callbackUrl?: string } = {}) {
  const queryId = randomToken(16);
  const callback = options.callbackUrl !== undefined;
  await insertQuery(
    env.DB,
    {
      queryId,
      ownerUserId,
      sql: options.sql ?? "SELECT 1",
      parameters: null,
      createdAt: new Date().toISOString(),
      callback: callback ? { url: options.callbackUrl!, lastDelivery: null } : null,
    },
    null,
  );
  const limits = { ...settings(env).query, timeLimitMs: HOUR_MS };
  return { queryId, stub: stateOf(queryId), init: { queryId, ownerUserId, limits, callback } };
}

/** The QueryState's `finish(outcome)` while every UPDATE of the queries table fails in D1. */
export function finishWhileD1Fails(stub: DurableObjectStub<QueryState>, outcome: RunOutcome) {
  return runInDurableObject(stub, async (instance: QueryState) => {
    const real = Reflect.get(instance, "env") as Env;
    Reflect.set(instance, "env", { ...real, DB: dbFailing(/^UPDATE queries/) });
    try {
      return await instance.finish(outcome);
    } finally {
      Reflect.set(instance, "env", real);
    }
  });
}

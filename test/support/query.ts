import { createExecutionContext, createMessageBatch, getQueueResult, type QueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, vi } from "vitest";
import { consumeDeadQueries, consumeQueries, type WorkMessage } from "../../src/worker/query/consumer";
import type { PrepareMessage } from "../../src/worker/query/prepare-item";
import { findQuery } from "../../src/worker/query/history";
import { recordOfRow } from "../../src/worker/query/queries";
import type { QueryRecord } from "../../src/worker/query/query-record";
import type { QueryState } from "../../src/worker/query/query-state";
import { createDataset, datasetId, followDownload, uploadOk } from "./catalog";
import { call, readEnvelope, workerWith, type Fetch } from "./http";
import { authHeader } from "./login";
import type { components } from "../../src/sdk/openapi-types";
import type { QueryStatus } from "../../src/sdk/types";

/** QueryStatusResponse Data as the status route sends it: the SDK's wire type, generated from the OpenAPI document. */
export type QueryStatusData = QueryStatus;

/** The list of the caller's queries, one page. */
export type QueryListData = components["schemas"]["QueryListResponse"]["Data"];

const NO_METRICS = { metrics: { backlogCount: 0, backlogBytes: 0 } };

/**
 * A stand-in for the query queue: it keeps what is sent (queries, and the
 * column-image requests of uploads and the cron), and, when built with a
 * consumer environment, runs the consumer on each message as a real queue
 * would, in the background. Tests thereby decide when a query runs or
 * images are built, instead of racing the local queue.
 */
export class TestQueue implements Queue<WorkMessage> {
  readonly sent: WorkMessage[] = [];
  private readonly runs: Promise<ConsumerOutcome>[] = [];

  constructor(private readonly consumerEnv: Partial<Env> | null = null) {}

  async send(body: WorkMessage): Promise<QueueSendResponse> {
    this.sent.push(body);
    if (this.consumerEnv) this.runs.push(deliver([body], this.consumerEnv));
    return { metadata: NO_METRICS };
  }

  async sendBatch(messages: Iterable<MessageSendRequest<WorkMessage>>): Promise<QueueSendBatchResponse> {
    for (const message of messages) await this.send(message.body);
    return { metadata: NO_METRICS };
  }

  async metrics(): Promise<QueueMetrics> {
    return { backlogCount: this.sent.length, backlogBytes: 0 };
  }

  /** The column-image requests sent so far. */
  prepares(): PrepareMessage[] {
    return this.sent.filter((body): body is PrepareMessage => "prepare" in body);
  }

  /** What the consumer did with every message sent so far. */
  settled(): Promise<ConsumerOutcome[]> {
    return Promise.all(this.runs);
  }
}

/** The service with a queue the test controls (nothing runs unless the queue was given a consumer environment). */
export function serviceWith(queue: TestQueue, overrides: Partial<Env> = {}): Fetch {
  return workerWith({ ...overrides, QUERY_QUEUE: queue, BUILD_QUEUE: queue });
}

let messageCounter = 0;

/** What a consumer run did with its messages: the queue's view, and the delay of each retry. */
export interface ConsumerOutcome {
  acked: number;
  retried: (number | undefined)[];
  result: QueueResult;
}

/**
 * Delivers one message per query id to the real consumer (or the dead-letter
 * consumer), with settings changed, and reports its acks and retries. The
 * test pool's messages do not keep retry options, so each message's retry
 * is watched for its delay.
 */
export function consume(
  queryIds: string[],
  overrides: Partial<Env> = {},
  options: { attempts?: number; dead?: boolean; quickLane?: boolean } = {},
): Promise<ConsumerOutcome> {
  return deliver(
    queryIds.map((queryId) => ({ queryId })),
    overrides,
    options,
  );
}

/**
 * Delivers messages of any kind (queries, column-image requests) to the real consumer, as consume() does: as the
 * long lane does unless `quickLane` (which sends a query needing more than its share to LONG_QUERY_QUEUE).
 */
export async function deliver(
  bodies: WorkMessage[],
  overrides: Partial<Env> = {},
  options: { attempts?: number; dead?: boolean; quickLane?: boolean } = {},
): Promise<ConsumerOutcome> {
  const batch = createMessageBatch<WorkMessage>(
    options.dead ? "dqs-queries-dlq" : "dqs-queries",
    bodies.map((body) => ({
      id: `message-${++messageCounter}`,
      timestamp: new Date(),
      attempts: options.attempts ?? 1,
      body,
    })),
  );
  const retries = batch.messages.map((message) => vi.spyOn(message, "retry"));
  const ctx = createExecutionContext();
  if (options.dead) await consumeDeadQueries(batch, { ...env, ...overrides });
  else await consumeQueries(batch, { ...env, ...overrides }, options.quickLane);
  const result = await getQueueResult(batch, ctx);
  return {
    acked: result.explicitAcks.length + (result.ackAll ? batch.messages.length : 0),
    retried: retries.flatMap((spy) => spy.mock.calls.map(([retryOptions]) => retryOptions?.delaySeconds)),
    result,
  };
}

/** Acks and retry delays of a consumer run, for comparing in one expectation. */
export function outcomeOf(outcome: ConsumerOutcome): { acked: number; retried: (number | undefined)[] } {
  return { acked: outcome.acked, retried: outcome.retried };
}

/** POST /v1/query with a JSON body and extra headers. */
export function submit(
  token: string,
  body: unknown,
  via: Fetch,
  headers: Record<string, string> = {},
): Promise<Response> {
  return call(
    "/v1/query",
    {
      method: "POST",
      headers: { ...authHeader(token), "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    },
    via,
  );
}

/**
 * Submits SQL and checks it was accepted; returns the QueryId. It opts out of
 * result reuse (test/query/reuse.test.ts covers that), so the query runs
 * when the test lets it, however often the same SQL was run before.
 */
export async function submitOk(
  token: string,
  sql: string,
  via: Fetch,
  headers: Record<string, string> = {},
): Promise<string> {
  const body = await readEnvelope<{ QueryId: string }>(
    await submit(token, { Sql: sql, Reuse: false }, via, headers),
    200,
  );
  expect(body.Data.QueryId).toMatch(/^[A-Za-z0-9_-]{22}$/);
  return body.Data.QueryId;
}

/** GET /v1/query/{id}/status, checked to be 200. */
export async function statusOf(token: string, queryId: string): Promise<QueryStatusData> {
  const response = await call(`/v1/query/${queryId}/status`, { headers: authHeader(token) });
  return (await readEnvelope<QueryStatusData>(response, 200)).Data;
}

/** A GET on one of a query's endpoints. */
export function queryGet(
  token: string,
  queryId: string,
  what: "status" | "results/rawdata" | "results/metadata/schema",
) {
  return call(`/v1/query/${queryId}/${what}`, { headers: authHeader(token) });
}

/** POST /v1/query/{id}/cancel. */
export function cancelQuery(token: string, queryId: string): Promise<Response> {
  return call(`/v1/query/${queryId}/cancel`, { method: "POST", headers: authHeader(token) });
}

/** The result CSV of a succeeded query, through the redirect and the signed URL, as a client reads it. */
export async function resultText(token: string, queryId: string): Promise<string> {
  const redirect = await queryGet(token, queryId, "results/rawdata");
  expect(redirect.status, await redirect.clone().text()).toBe(302);
  const download = await followDownload(redirect.headers.get("location") ?? "");
  expect(download.status).toBe(200);
  return download.text();
}

/** What a query ended as: its status and, when it succeeded, its result CSV. */
export interface QueryRun {
  queryId: string;
  status: QueryStatusData;
  csv: string | null;
}

/** Submits SQL, runs it through the real consumer with settings changed, and reads its status and result. */
export async function runSql(token: string, sql: string, overrides: Partial<Env> = {}): Promise<QueryRun> {
  const queue = new TestQueue();
  // Settings apply where a deployment reads them: the API records the limits with the query at submit.
  const queryId = await submitOk(token, sql, serviceWith(queue, overrides));
  expect(outcomeOf(await consume([queryId], overrides))).toEqual({ acked: 1, retried: [] });
  const status = await statusOf(token, queryId);
  const csv = status.Status === "succeeded" ? await resultText(token, queryId) : null;
  return { queryId, status, csv };
}

/** Runs SQL that must succeed and returns its result CSV. */
export async function csvOf(token: string, sql: string, overrides: Partial<Env> = {}): Promise<string> {
  const run = await runSql(token, sql, overrides);
  expect(run.status.Status, run.status.Message).toBe("succeeded");
  return run.csv ?? "";
}

/** Runs SQL that must fail and returns its message. */
export async function failureOf(token: string, sql: string, overrides: Partial<Env> = {}): Promise<string> {
  const run = await runSql(token, sql, overrides);
  expect(run.status.Status, run.status.Message).toBe("failed");
  return run.status.Message;
}

/** The Durable Object of a query. */
export function stateOf(queryId: string): DurableObjectStub<QueryState> {
  return env.QUERY_STATE.get(env.QUERY_STATE.idFromName(queryId));
}

/** A query's full record, as the service reads it: its row, with its Durable Object's state while it lives. */
export async function recordOf(queryId: string): Promise<QueryRecord | null> {
  const row = await findQuery(env.DB, queryId);
  return row && recordOfRow(env, row);
}

/** Query state whose stubs do something else for one method. */
export function stateWith(
  method: keyof QueryState,
  replacement: (stub: DurableObjectStub<QueryState>) => (...args: never[]) => Promise<unknown>,
): DurableObjectNamespace<QueryState> {
  return new Proxy(env.QUERY_STATE, {
    get(target, property) {
      if (property === "get")
        return (id: DurableObjectId) => {
          const real = target.get(id);
          return new Proxy(real, {
            get(stub, name) {
              return name === method ? replacement(real) : Reflect.get(stub, name);
            },
          });
        };
      const value: unknown = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Query state whose stubs fail one method, as a Durable Object that cannot be reached does. */
export function stateFailing(method: keyof QueryState): DurableObjectNamespace<QueryState> {
  return stateWith(method, () => () => Promise.reject(new Error("Durable Object unreachable")));
}

/** A name made only of letters, digits and '_', so SQL can name it bare. */
export function bareName(prefix: string): string {
  return `${prefix}_${crypto.randomUUID().replace(/-/g, "").slice(0, 10)}`;
}

/** A column of a TableDefinition: name and type. */
export type ColumnSpec = [name: string, type: "STRING" | "INTEGER" | "DOUBLE" | "BOOLEAN" | "DATE" | "TIMESTAMP"];

/** The Schema part of an upload that declares exactly these columns (all nullable). */
export function schemaFor(columns: ColumnSpec[]): string {
  return JSON.stringify({
    SchemaVersion: "1.0",
    TableDefinition: {
      Columns: columns.map(([Name, DataType]) => ({
        Name,
        DataType: { DataType, DataTypeOptions: { Nullable: true } },
      })),
    },
  });
}

/** Creates a dataset and uploads data items into it, each with a declared schema. */
export async function seedDataset(
  token: string,
  account: string,
  dataset: string,
  items: Record<string, { columns: ColumnSpec[]; csv: string }>,
  visibility: "private" | "public" = "private",
): Promise<void> {
  await createDataset(token, account, dataset, { Visibility: visibility });
  for (const [name, item] of Object.entries(items))
    await uploadOk(token, `${account}/${dataset}/${name}`, item.csv, { Schema: schemaFor(item.columns) });
}

/** Waits until a condition holds, polling; fails after the timeout. */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** One data item of a user, uploaded through a queue the test controls: its names and where its objects are. */
export interface QueuedItem {
  account: string;
  dataset: string;
  data: string;
  /** account/dataset/data, for the HTTP routes. */
  path: string;
  /** "account"."dataset"."data", for SQL. */
  table: string;
  /** data/<dataset id>/, where its R2 objects are. */
  prefix: string;
  queue: TestQueue;
}

/** Creates a new dataset of `owner` (name from `prefix`) and uploads one data item with `upload`, which returns its queue. */
export async function newQueuedItem(
  owner: { accessToken: string; accountName: string },
  prefix: string,
  data: string,
  upload: (path: string) => Promise<TestQueue>,
): Promise<QueuedItem> {
  const dataset = bareName(prefix);
  await createDataset(owner.accessToken, owner.accountName, dataset);
  const path = `${owner.accountName}/${dataset}/${data}`;
  const queue = await upload(path);
  return {
    account: owner.accountName,
    dataset,
    data,
    path,
    table: `"${owner.accountName}"."${dataset}"."${data}"`,
    prefix: `data/${await datasetId(owner.accountName, dataset)}/`,
    queue,
  };
}

import { beforeAll, describe, expect, it } from "vitest";
import { call, readEnvelope } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";
import {
  bareName,
  consume,
  outcomeOf,
  resultText,
  seedDataset,
  serviceWith,
  statusOf,
  submit,
  TestQueue,
  type QueryListData,
} from "../support/query";

let owner: LoggedIn;
let items: string;

beforeAll(async () => {
  owner = await login("q_params");
  const dataset = bareName("params");
  await seedDataset(owner.accessToken, owner.accountName, dataset, {
    items: {
      columns: [
        ["id", "INTEGER"],
        ["label", "STRING"],
      ],
      csv: "id,label\n1,one\n2,two\n3,three\n",
    },
  });
  items = `${owner.accountName}.${dataset}.items`;
});

async function refusal(body: unknown, queue = new TestQueue()): Promise<string> {
  const response = await submit(owner.accessToken, body, serviceWith(queue));
  const message = (await readEnvelope(response, 400)).Status.Message;
  expect(queue.sent).toEqual([]);
  return message;
}

describe("POST /v1/query with Parameters", () => {
  it("should run a query with named parameters, bound, and echo them in the status", async () => {
    const queue = new TestQueue();
    const Parameters = { low: 2, label: "three" };
    const response = await submit(
      owner.accessToken,
      { Sql: `SELECT id, label FROM ${items} WHERE id >= :low OR label = $label ORDER BY id`, Parameters },
      serviceWith(queue),
    );
    const { QueryId } = (await readEnvelope<{ QueryId: string }>(response, 200)).Data;

    expect(outcomeOf(await consume([QueryId]))).toEqual({ acked: 1, retried: [] });
    const status = await statusOf(owner.accessToken, QueryId);
    expect(status).toMatchObject({ Status: "succeeded", Parameters });
    expect(await resultText(owner.accessToken, QueryId)).toBe("id,label\n2,two\n3,three\n");
  });

  it("should run a query with positional parameters", async () => {
    const response = await submit(
      owner.accessToken,
      { Sql: `SELECT label FROM ${items} WHERE id = ? OR id = ?2 ORDER BY id`, Parameters: [1, 3] },
      serviceWith(new TestQueue()),
    );
    const { QueryId } = (await readEnvelope<{ QueryId: string }>(response, 200)).Data;
    await consume([QueryId]);

    expect(await resultText(owner.accessToken, QueryId)).toBe("label\none\nthree\n");
  });

  it("should echo no Parameters as null", async () => {
    const response = await submit(owner.accessToken, { Sql: "SELECT 1" }, serviceWith(new TestQueue()));
    const { QueryId } = (await readEnvelope<{ QueryId: string }>(response, 200)).Data;

    expect((await statusOf(owner.accessToken, QueryId)).Parameters).toBeNull();
  });

  it("should answer 400 naming the placeholder without a value, the value without a placeholder, and a mix", async () => {
    expect(await refusal({ Sql: "SELECT :a" })).toBe("The placeholder :a has no value: the request has no Parameters.");
    expect(await refusal({ Sql: "SELECT :a, @b", Parameters: { a: 1 } })).toBe(
      'The placeholder @b has no value: add "b" to Parameters.',
    );
    expect(await refusal({ Sql: "SELECT :a", Parameters: { a: 1, c: 2 } })).toBe(
      'Parameters has "c", but Sql has no placeholder :c, @c or $c; remove it or use it.',
    );
    expect(await refusal({ Sql: "SELECT ?", Parameters: [1, 2] })).toBe(
      "Parameters has a value at position 2 (?2), but Sql has no placeholder for it; remove the value or use it.",
    );
    expect(await refusal({ Sql: "SELECT :a, ?", Parameters: { a: 1 } })).toBe(
      "Sql mixes named placeholders (:a) with positional ones (?); use one kind.",
    );
  });

  it("should answer 400 for more values than the engines bind", async () => {
    expect(await refusal({ Sql: `SELECT ${Array(101).fill("?").join(", ")}`, Parameters: Array(101).fill(0) })).toBe(
      "Parameters has 101 values; a query binds at most 100.",
    );
  });

  it("should answer 400 for Parameters longer than Sql may be, as they are kept and shown with the query", async () => {
    expect(await refusal({ Sql: "SELECT length(:a)", Parameters: { a: "x".repeat(100_000) } })).toBe(
      "Parameters is 100008 characters long as JSON; the limit is 100000, as for Sql.",
    );
  });

  it("should answer 413 for a body larger than a query's Sql and Parameters can be, before reading it", async () => {
    const body = JSON.stringify({ Sql: "SELECT 1", Padding: "x".repeat(2_000_000) });
    for (const path of ["/v1/query", "/v1/query/validate"]) {
      const response = await call(path, {
        method: "POST",
        headers: { ...authHeader(owner.accessToken), "content-type": "application/json" },
        body,
      });

      expect((await readEnvelope(response, 413)).Status.Message).toBe(
        "The request body is larger than 1265536 bytes; a query's Sql and Parameters are each at most 100000 characters.",
      );
    }
  });

  it("should answer 400 for Parameters that are not an object or array of plain values", async () => {
    expect(await refusal({ Sql: "SELECT :a", Parameters: "a=1" })).toBe(
      "Invalid request: Parameters: Parameters must be an object (for :name, @name, $name) or an array (for ?, ?NNN) whose values are strings, numbers, booleans or null.",
    );
    expect(await refusal({ Sql: "SELECT :a", Parameters: { a: { b: 1 } } })).toMatch(/^Invalid request: Parameters/);
    expect(await refusal({ Sql: "SELECT ?", Parameters: [[1]] })).toMatch(/^Invalid request: Parameters/);
  });

  it("should take the parameters into account for an Idempotency-Key", async () => {
    const queue = new TestQueue();
    const key = crypto.randomUUID();
    const send = (Parameters: unknown) =>
      submit(owner.accessToken, { Sql: "SELECT :a, :b", Parameters }, serviceWith(queue), { "idempotency-key": key });

    const first = (await readEnvelope<{ QueryId: string }>(await send({ a: 1, b: "x" }), 200)).Data.QueryId;
    const again = await readEnvelope<{ QueryId: string }>(await send({ b: "x", a: 1 }), 200);
    const other = await readEnvelope(await send({ a: 2, b: "x" }), 400);

    expect(again.Data.QueryId).toBe(first);
    expect(other.Status.Message).toBe(
      "This Idempotency-Key was already used for different SQL or Parameters; use a new key for a new query.",
    );
    expect(queue.sent).toEqual([{ queryId: first }]);
  });
});

describe("GET /v1/me/queries", () => {
  it("should list each query with its Parameters", async () => {
    const response = await submit(
      owner.accessToken,
      { Sql: "SELECT ?", Parameters: ["listed"] },
      serviceWith(new TestQueue()),
    );
    const { QueryId } = (await readEnvelope<{ QueryId: string }>(response, 200)).Data;

    const list = await call("/v1/me/queries?limit=100", { headers: authHeader(owner.accessToken) });
    const { QueryList } = (await readEnvelope<QueryListData>(list, 200)).Data;
    expect(QueryList.find((q) => q.QueryId === QueryId)?.Parameters).toEqual(["listed"]);
  });
});

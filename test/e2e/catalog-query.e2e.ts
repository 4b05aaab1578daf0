import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DqsApiError, DqsClient, DqsQueryError, MemoryTokenStore, type QueryStatus } from "../../src/sdk";
import { httpLogin } from "./support/http-login";
import { COUNTING_SQL, statusUntil } from "./support/long-query";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

/** A running service and a fetch that sends its logged-in user's token. */
interface Service {
  server: DevServer;
  api(path: string, init?: RequestInit): Promise<Response>;
}

const ACCOUNT = "e2e-carol";
const CSV = 'id,name,amount,day,ok\n1,"Smith, J",10.5,2024-01-02,true\n2,Ünïcode "q",3,2024-02-03,false\n3,,7.25,,1\n';
const plain = new TextEncoder().encode(CSV);
const gzipped = new Uint8Array(gzipSync(plain));

/** Starts `wrangler dev` with `vars` and logs the account in. */
async function serve(vars: Record<string, string> = {}): Promise<Service> {
  const server = await startWranglerDev(vars);
  const token = (await httpLogin(server.url, ACCOUNT)).accessToken;
  return {
    server,
    api: (path, init = {}) =>
      fetch(`${server.url}${path}`, {
        ...init,
        redirect: "manual",
        headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
      }),
  };
}

function upload(service: Service, path: string, bytes: Uint8Array, filename: string) {
  const form = new FormData();
  form.append("Data", new Blob([bytes]), filename);
  return service.api(path, { method: "POST", body: form });
}

async function envelope(response: Response) {
  return (await response.json()) as { Status: { Code: number; Message: string }; Data?: Record<string, unknown> };
}

/** The storage endpoint's view of a data item in the sales dataset. */
async function storage(service: Service, name: string) {
  const response = await service.api(`/v1/data/${ACCOUNT}/sales/${name}/metadata/storage`);
  expect(response.status).toBe(200);
  return (await envelope(response)).Data as { QueryReady: boolean; ColumnImageBytes: number[] | null };
}

/** Runs the join of the two items, checks its result CSV and Size, and gives its status. */
async function runJoin(service: Service): Promise<Record<string, unknown>> {
  const submitted = await service.api("/v1/query", {
    method: "POST",
    headers: { "content-type": "application/json", prefer: "wait=20" },
    body: JSON.stringify({
      Sql: `SELECT g.name, g.amount, o.day FROM "${ACCOUNT}".sales.orders_gz g JOIN \`${ACCOUNT}.sales.orders.csv\` o ON o.id = g.id WHERE g.ok = 1 ORDER BY g.amount DESC`,
    }),
  });
  expect(submitted.status).toBe(200);
  const queryId = String((await envelope(submitted)).Data?.QueryId);

  const status = (await envelope(await service.api(`/v1/query/${queryId}/status`))).Data!;
  expect(status).toMatchObject({ Status: "succeeded", RowCount: 2 });

  const redirect = await service.api(`/v1/query/${queryId}/results/rawdata`);
  expect(redirect.status).toBe(302);
  const result = await (await fetch(redirect.headers.get("location")!)).text();
  expect(result).toBe('name,amount,day\n"Smith, J",10.5,2024-01-02\n,7.25,\n');
  expect(status.Size).toBe(new TextEncoder().encode(result).byteLength);
  return status;
}

// The catalog and the column-image path share one service (images built as uploaded); the CSV path has its own.
let service: Service;

beforeAll(async () => {
  service = await serve();
}, 180_000);

afterAll(async () => {
  await service?.server.stop();
});

describe("catalog against wrangler dev", () => {
  it("should create a dataset and upload a plain and a gzipped CSV through multipart", async () => {
    expect((await service.api(`/v1/dataset/${ACCOUNT}/sales`, { method: "PUT" })).status).toBe(201);
    const first = await upload(service, "/v1/data/e2e-carol/sales/orders.csv", plain, "orders.csv");
    expect(first.status).toBe(200);
    expect((await envelope(first)).Status.Message).toContain("3 rows");
    const second = await upload(service, "/v1/data/e2e-carol/sales/orders_gz", gzipped, "orders.csv.gz");
    expect(second.status).toBe(200);
    expect((await envelope(second)).Status.Message).toContain("gzip");
  });

  it("should list the data items and the dataset", async () => {
    const items = await envelope(await service.api("/v1/dataset/e2e-carol/sales/data"));
    expect(items.Data).toEqual({
      DataCount: 2,
      DataList: [
        expect.objectContaining({
          AccountName: "e2e-carol",
          DatasetName: "sales",
          DataName: "orders.csv",
          RowCount: 3,
        }),
        expect.objectContaining({ AccountName: "e2e-carol", DatasetName: "sales", DataName: "orders_gz", RowCount: 3 }),
      ],
    });
    const datasets = await envelope(await service.api("/v1/me/datasets"));
    expect(datasets.Data).toEqual({
      DatasetCount: 1,
      DatasetList: [{ AccountName: "e2e-carol", DatasetName: "sales" }],
    });
  });

  it("should return the generated schema with the detected delivery type", async () => {
    const body = await envelope(await service.api("/v1/data/e2e-carol/sales/orders_gz/metadata/schema"));
    const schema = JSON.parse(String(body.Data?.Schema)) as {
      TableDefinition: { Columns: { Name: string; DataType: { DataType: string } }[] };
      DataSpecification: { DeliveryType: string };
    };
    expect(schema.DataSpecification.DeliveryType).toBe("GZIP");
    expect(schema.TableDefinition.Columns.map((c) => [c.Name, c.DataType.DataType])).toEqual([
      ["id", "INTEGER"],
      ["name", "STRING"],
      ["amount", "DOUBLE"],
      ["day", "DATE"],
      ["ok", "BOOLEAN"],
    ]);
  });

  it("should redirect downloads to a signed URL that serves the exact bytes without a token", async () => {
    for (const [name, bytes] of [
      ["orders.csv", plain],
      ["orders_gz", gzipped],
    ] as const) {
      const redirect = await service.api(`/v1/data/e2e-carol/sales/${name}/rawdata`);
      expect(redirect.status).toBe(302);
      const download = await fetch(redirect.headers.get("location")!);
      expect(download.status).toBe(200);
      expect(new Uint8Array(await download.arrayBuffer())).toEqual(bytes);
    }
  });
});

/** Polls the storage endpoint until the items (by default both orders) are query-ready (their column images are built). */
async function untilQueryReady(on: Service, names = ["orders.csv", "orders_gz"]): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const items = await Promise.all(names.map((name) => storage(on, name)));
    if (items.every((item) => item.QueryReady)) return;
    if (Date.now() > deadline) throw new Error("the column images were not built within 60 s");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("queries against wrangler dev, reading column images", () => {
  beforeAll(() => untilQueryReady(service), 90_000);

  it("should run a join in the queue consumer with sql.js on the items' column images, parsing no CSV", async () => {
    const gz = (await storage(service, "orders_gz")).ColumnImageBytes!;
    const csv = (await storage(service, "orders.csv")).ColumnImageBytes!;
    expect([gz.length, csv.length]).toEqual([5, 5]);

    const status = await runJoin(service);

    // BytesLoaded counts the column images attached and the CSV parsed (none). A table's images are those of the
    // columns whose names the query mentions anywhere: all five, for both items.
    const images = [...gz, ...csv].reduce((sum, bytes) => sum + bytes, 0);
    expect(status).toMatchObject({ Engine: "sqljs", BytesLoaded: images });
  });

  it("should read a ';' or tab separated file by the delimiter detected at upload, keeping TIMESTAMP in results", async () => {
    const rows = [
      ["id", "name", "at"],
      ["1", "Smith, J", "2024-03-01 18:07:14"],
      ["2", "Zoë", "2024-03-02 09:00"],
    ];
    for (const [name, delimiter] of [
      ["semi.csv", ";"],
      ["tabs.tsv", "\t"],
    ] as const) {
      const file = rows.map((row) => row.join(delimiter) + "\n").join("");
      const path = `/v1/data/${ACCOUNT}/sales/${name}`;
      const uploaded = await upload(service, path, new TextEncoder().encode(file), name);
      expect(uploaded.status).toBe(200);
      expect((await envelope(uploaded)).Status.Message).toContain(
        `2 rows, 3 columns (delimiter ${JSON.stringify(delimiter)})`,
      );
      const stored = JSON.parse(
        String((await envelope(await service.api(`${path}/metadata/schema`))).Data?.Schema),
      ) as {
        TableDefinition: { Columns: { Name: string; DataType: { DataType: string } }[] };
        DataSpecification: { DataOptions: unknown };
      };
      expect(stored.DataSpecification.DataOptions).toEqual({ Header: true, Delimiter: delimiter });
      expect(stored.TableDefinition.Columns.map((c) => `${c.Name}:${c.DataType.DataType}`)).toEqual([
        "id:INTEGER",
        "name:STRING",
        "at:TIMESTAMP",
      ]);
      // The column images, built from the stored file by its delimiter, are what the query reads.
      await untilQueryReady(service, [name]);
      const images = (await storage(service, name)).ColumnImageBytes!;

      const submitted = await service.api("/v1/query", {
        method: "POST",
        headers: { "content-type": "application/json", prefer: "wait=20" },
        body: JSON.stringify({
          Sql: `SELECT name, at FROM \`${ACCOUNT}.sales.${name}\` WHERE at >= '2024-03-01 18:07:14' ORDER BY id`,
        }),
      });
      const queryId = String((await envelope(submitted)).Data?.QueryId);
      expect((await envelope(await service.api(`/v1/query/${queryId}/status`))).Data).toMatchObject({
        Status: "succeeded",
        Engine: "sqljs",
        BytesLoaded: images.reduce((sum, bytes) => sum + bytes, 0),
      });
      const redirect = await service.api(`/v1/query/${queryId}/results/rawdata`);
      const result = await (await fetch(redirect.headers.get("location")!)).text();
      expect(result).toBe('name,at\n"Smith, J",2024-03-01 18:07:14\nZoë,2024-03-02 09:00:00\n');
      const resultSchema = JSON.parse(
        String((await envelope(await service.api(`/v1/query/${queryId}/results/metadata/schema`))).Data?.Schema),
      ) as { TableDefinition: { Columns: { DataType: { DataType: string; DataTypeOptions: unknown } }[] } };
      expect(resultSchema.TableDefinition.Columns.map((c) => c.DataType)).toEqual([
        { DataType: "STRING", DataTypeOptions: { Nullable: true } },
        { DataType: "TIMESTAMP", DataTypeOptions: { Nullable: true, StoredAs: "YYYY-MM-DD HH:MM:SS[.fff]" } },
      ]);
    }
  });

  it("should end a query that is not read-only as failed with the reason", async () => {
    const submitted = await service.api("/v1/query", {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "wait=20" },
      body: JSON.stringify({ Sql: `WITH x AS (SELECT 1) DELETE FROM "${ACCOUNT}".sales.orders_gz` }),
    });
    const queryId = String((await envelope(submitted)).Data?.QueryId);
    const status = await envelope(await service.api(`/v1/query/${queryId}/status`));
    expect(status.Data).toMatchObject({ Status: "failed" });
    expect(String(status.Data?.Message)).toContain("read-only");
    const results = await service.api(`/v1/query/${queryId}/results/rawdata`);
    expect(results.status).toBe(400);
  });
});

describe("queries against wrangler dev with COLUMN_IMAGES=off, reading the CSV", () => {
  let csvOnly: Service;

  beforeAll(async () => {
    csvOnly = await serve({ COLUMN_IMAGES: "off" });
    expect((await csvOnly.api(`/v1/dataset/${ACCOUNT}/sales`, { method: "PUT" })).status).toBe(201);
    expect((await upload(csvOnly, `/v1/data/${ACCOUNT}/sales/orders.csv`, plain, "orders.csv")).status).toBe(200);
    expect((await upload(csvOnly, `/v1/data/${ACCOUNT}/sales/orders_gz`, gzipped, "orders.csv.gz")).status).toBe(200);
  }, 180_000);

  afterAll(async () => {
    await csvOnly?.server.stop();
  });

  it("should run the same join in sql.js on both items' CSV, and build no column images", async () => {
    const status = await runJoin(csvOnly);

    // Both items' CSV, as parsed (after gzip), and no image.
    expect(status).toMatchObject({ Engine: "sqljs", BytesLoaded: 2 * plain.byteLength });
    for (const name of ["orders.csv", "orders_gz"])
      expect(await storage(csvOnly, name)).toMatchObject({ QueryReady: false, ColumnImageBytes: null });
  });
});

describe("cancelling a running query against wrangler dev", () => {
  // Reuse false: the query after a cancelled one must run, to show the engine let the cancelled one go.
  const submit = async (sql: string) => {
    const submitted = await service.api("/v1/query", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ Sql: sql, Reuse: false }),
    });
    expect(submitted.status).toBe(200);
    return String((await envelope(submitted)).Data?.QueryId);
  };
  const statusOf = async (queryId: string) =>
    (await envelope(await service.api(`/v1/query/${queryId}/status`))).Data as QueryStatus;

  it("should cancel it through the API at once, never serve a result, and let the user's next query run", async () => {
    const queryId = await submit(COUNTING_SQL);
    expect(
      (
        await statusUntil(
          () => statusOf(queryId),
          (s) => s.Status !== "queued",
        )
      ).Status,
    ).toBe("running");

    const cancelled = await service.api(`/v1/query/${queryId}/cancel`, { method: "POST" });

    expect(cancelled.status).toBe(200);
    expect((await envelope(cancelled)).Data).toMatchObject({
      QueryId: queryId,
      Status: "cancelled",
      Message: "Cancelled by its owner.",
    });
    const results = await service.api(`/v1/query/${queryId}/results/rawdata`);
    expect(results.status).toBe(400);
    expect((await envelope(results)).Status.Message).toContain("cancelled");
    expect((await service.api(`/v1/query/${queryId}/results/metadata/schema`)).status).toBe(404);
    // One running query per user here: the next one runs only once the engine has let the cancelled one go.
    const next = await submit("SELECT 1 AS one");
    expect(
      (
        await statusUntil(
          () => statusOf(next),
          (s) => s.Status !== "queued" && s.Status !== "running",
        )
      ).Status,
    ).toBe("succeeded");
    expect(await statusOf(queryId)).toMatchObject({ Status: "cancelled", Size: 0, RowCount: null });
  });

  it("should cancel it through the SDK: waitForQuery then throws a DqsQueryError, and the result is refused", async () => {
    const client = new DqsClient({ baseUrl: service.server.url, tokens: new MemoryTokenStore() });
    await client.loginWithRefreshToken((await httpLogin(service.server.url, ACCOUNT)).refreshToken);
    const { queryId } = await client.submitQuery(COUNTING_SQL);
    const running = await statusUntil(
      () => client.queryStatus(queryId),
      (s) => s.Status !== "queued",
    );
    expect(running.Status).toBe("running");

    const cancelled: QueryStatus = await client.cancelQuery(queryId);

    expect(cancelled).toMatchObject({ QueryId: queryId, Status: "cancelled" });
    const error = await client.waitForQuery(queryId).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DqsQueryError);
    expect(error).toMatchObject({
      reason: "cancelled",
      message: `Query ${queryId} cancelled: Cancelled by its owner.`,
    });
    const refused = await client.queryResult(queryId).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DqsApiError);
    expect(refused).toMatchObject({ code: 400, message: expect.stringContaining("cancelled") });
  });
});

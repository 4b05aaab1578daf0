import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpLogin } from "./support/http-login";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

let server: DevServer;
let token: string;

const CSV = 'id,name,amount,day,ok\n1,"Smith, J",10.5,2024-01-02,true\n2,Ünïcode "q",3,2024-02-03,false\n3,,7.25,,1\n';

const api = (path: string, init: RequestInit = {}) =>
  fetch(`${server.url}${path}`, {
    ...init,
    redirect: "manual",
    headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
  });

function upload(path: string, bytes: Uint8Array, filename: string) {
  const form = new FormData();
  form.append("Data", new Blob([bytes]), filename);
  return api(path, { method: "POST", body: form });
}

async function envelope(response: Response) {
  return (await response.json()) as { Status: { Code: number; Message: string }; Data?: Record<string, unknown> };
}

beforeAll(async () => {
  server = await startWranglerDev();
  token = (await httpLogin(server.url, "e2e-carol")).accessToken;
}, 180_000);

afterAll(async () => {
  await server?.stop();
});

describe("catalog against wrangler dev", () => {
  const plain = new TextEncoder().encode(CSV);
  const gzipped = new Uint8Array(gzipSync(plain));

  it("should create a dataset and upload a plain and a gzipped CSV through multipart", async () => {
    expect((await api("/v1/dataset/e2e-carol/sales", { method: "PUT" })).status).toBe(201);
    const first = await upload("/v1/data/e2e-carol/sales/orders.csv", plain, "orders.csv");
    expect(first.status).toBe(200);
    expect((await envelope(first)).Status.Message).toContain("3 rows");
    const second = await upload("/v1/data/e2e-carol/sales/orders_gz", gzipped, "orders.csv.gz");
    expect(second.status).toBe(200);
    expect((await envelope(second)).Status.Message).toContain("gzip");
  });

  it("should list the data items and the dataset", async () => {
    const items = await envelope(await api("/v1/dataset/e2e-carol/sales/data"));
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
    const datasets = await envelope(await api("/v1/me/datasets"));
    expect(datasets.Data).toEqual({
      DatasetCount: 1,
      DatasetList: [{ AccountName: "e2e-carol", DatasetName: "sales" }],
    });
  });

  it("should return the generated schema with the detected delivery type", async () => {
    const body = await envelope(await api("/v1/data/e2e-carol/sales/orders_gz/metadata/schema"));
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
      const redirect = await api(`/v1/data/e2e-carol/sales/${name}/rawdata`);
      expect(redirect.status).toBe(302);
      const download = await fetch(redirect.headers.get("location")!);
      expect(download.status).toBe(200);
      expect(new Uint8Array(await download.arrayBuffer())).toEqual(bytes);
    }
  });
});

describe("queries against wrangler dev", () => {
  it("should run a query in the queue consumer with sql.js and serve its result", async () => {
    const submitted = await api("/v1/query", {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "wait=20" },
      body: JSON.stringify({
        Sql: 'SELECT g.name, g.amount, o.day FROM "e2e-carol".sales.orders_gz g JOIN `e2e-carol.sales.orders.csv` o ON o.id = g.id WHERE g.ok = 1 ORDER BY g.amount DESC',
      }),
    });
    expect(submitted.status).toBe(200);
    const queryId = String((await envelope(submitted)).Data?.QueryId);

    const status = await envelope(await api(`/v1/query/${queryId}/status`));
    expect(status.Data).toMatchObject({ Status: "succeeded", RowCount: 2 });

    const redirect = await api(`/v1/query/${queryId}/results/rawdata`);
    expect(redirect.status).toBe(302);
    const result = await (await fetch(redirect.headers.get("location")!)).text();
    expect(result).toBe('name,amount,day\n"Smith, J",10.5,2024-01-02\n,7.25,\n');
    expect(status.Data?.Size).toBe(new TextEncoder().encode(result).byteLength);
  });

  it("should end a query that is not read-only as failed with the reason", async () => {
    const submitted = await api("/v1/query", {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "wait=20" },
      body: JSON.stringify({ Sql: 'WITH x AS (SELECT 1) DELETE FROM "e2e-carol".sales.orders_gz' }),
    });
    const queryId = String((await envelope(submitted)).Data?.QueryId);
    const status = await envelope(await api(`/v1/query/${queryId}/status`));
    expect(status.Data).toMatchObject({ Status: "failed" });
    expect(String(status.Data?.Message)).toContain("read-only");
    const results = await api(`/v1/query/${queryId}/results/rawdata`);
    expect(results.status).toBe(400);
  });
});

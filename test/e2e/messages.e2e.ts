import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpLogin } from "./support/http-login";
import { startWranglerDev, type DevServer } from "./support/wrangler-dev";

// What a new user is told when a name, a file or a header is not what they meant (issue 24 §3), against `wrangler dev`.

type Envelope = { Status: { Code: number; Message: string }; Data?: Record<string, unknown> };

const WEATHER =
  "date,precipitation,temp_max,temp_min,wind,weather\n" +
  "2012-01-01,0.0,12.8,5.0,4.7,drizzle\n" +
  "2012-01-02,10.9,10.6,2.8,4.5,rain\n" +
  "2012-01-03,0.8,11.7,7.2,2.3,rain\n";
const WEATHER_SCHEMA = JSON.stringify({
  TableDefinition: {
    Columns: [
      ["date", "DATE"],
      ["precipitation", "DOUBLE"],
      ["temp_max", "DOUBLE"],
      ["temp_min", "DOUBLE"],
      ["wind", "DOUBLE"],
      ["weather", "STRING"],
    ].map(([Name, DataType]) => ({ Name, DataType: { DataType } })),
  },
  DataSpecification: { DataOptions: { Header: true, Delimiter: "," } },
});

let server: DevServer;
let dana: (path: string, init?: RequestInit) => Promise<Response>;
let erin: (path: string, init?: RequestInit) => Promise<Response>;

async function as(user: string) {
  const token = (await httpLogin(server.url, user)).accessToken;
  return (path: string, init: RequestInit = {}) =>
    fetch(`${server.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
    });
}

async function envelope(response: Response, status: number): Promise<Envelope> {
  const body = (await response.json()) as Envelope;
  expect(response.status, body.Status.Message).toBe(status);
  return body;
}

function upload(api: typeof dana, path: string, file: string, schema?: string) {
  const form = new FormData();
  if (schema) form.append("Schema", schema);
  form.append("Data", new Blob([file]), path.split("/").at(-1)!);
  return api(`/v1/data/${path}`, { method: "POST", body: form });
}

/** Runs a query to its end; its status (Status, Message). */
async function run(api: typeof dana, sql: string): Promise<{ Status: string; Message: string }> {
  const submit = () =>
    api("/v1/query", {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "wait=20" },
      body: JSON.stringify({ Sql: sql }),
    });
  let response = await submit();
  // Local storage is busy at times while an upload's column images are built: the 503 says to send again.
  for (let tries = 0; response.status === 503 && tries < 10; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    response = await submit();
  }
  const submitted = await envelope(response, 200);
  const status = await envelope(await api(`/v1/query/${String(submitted.Data!.QueryId)}/status`), 200);
  return status.Data as { Status: string; Message: string };
}

async function validate(api: typeof dana, sql: string): Promise<{ Valid: boolean; Message: string }> {
  const body = await envelope(
    await api("/v1/query/validate", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ Sql: sql }),
    }),
    200,
  );
  return body.Data as { Valid: boolean; Message: string };
}

beforeAll(async () => {
  server = await startWranglerDev();
  dana = await as("dana");
  erin = await as("erin");
  expect((await dana("/v1/dataset/dana/vega-demo", { method: "PUT" })).status).toBe(201);
  await envelope(await upload(dana, "dana/vega-demo/seattle-weather.csv", WEATHER), 200);
  // Erin's private copy, named the same in a dataset named the same.
  expect((await erin("/v1/dataset/erin/vega-demo", { method: "PUT" })).status).toBe(201);
  await envelope(await upload(erin, "erin/vega-demo/seattle-weather.csv", WEATHER), 200);
}, 240_000);

afterAll(async () => {
  await server?.stop();
});

describe("names in queries", () => {
  it("should suggest, for a dashed name written bare, a whole name that runs as written", async () => {
    const failed = await run(dana, "SELECT count(*) AS n FROM dana.vega-demo.`seattle-weather.csv`");

    expect(failed.Status).toBe("failed");
    const suggested = /is written in backticks: (\S+)$/.exec(failed.Message)?.[1];
    expect(suggested, failed.Message).toBe("dana.`vega-demo`.`seattle-weather.csv`");
    expect(await run(dana, `SELECT count(*) AS n FROM ${suggested}`)).toMatchObject({ Status: "succeeded" });
  });

  it("should name the closest item and columns, on the run and in validation", async () => {
    const item = "SELECT * FROM dana.`vega-demo`.`seatle-weather.csv`";
    const column = "SELECT temp FROM dana.`vega-demo`.`seattle-weather.csv`";

    const itemFailed = await run(dana, item);
    const columnFailed = await run(dana, column);

    expect(itemFailed).toMatchObject({
      Status: "failed",
      Message:
        "Failed: table dana.vega-demo.seatle-weather.csv does not exist, or you may not read it. " +
        "Did you mean dana.`vega-demo`.`seattle-weather.csv`?",
    });
    expect(columnFailed).toMatchObject({
      Status: "failed",
      Message: "Failed: no such column: temp. Did you mean temp_max or temp_min?",
    });
    expect(await validate(dana, item)).toEqual(expect.objectContaining({ Valid: false, Message: itemFailed.Message }));
    expect(await validate(dana, column)).toEqual(
      expect.objectContaining({ Valid: false, Message: columnFailed.Message }),
    );
  });

  it("should never name another user's private item, and name it once it is public", async () => {
    const sql = "SELECT * FROM erin.`vega-demo`.`seatle-weather.csv`";
    const hidden = "Failed: table erin.vega-demo.seatle-weather.csv does not exist, or you may not read it.";

    expect(await run(dana, sql)).toMatchObject({ Status: "failed", Message: hidden });
    expect((await validate(dana, sql)).Message).toBe(hidden);

    await envelope(
      await erin("/v1/dataset/erin/vega-demo", {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ Visibility: "public" }),
      }),
      200,
    );
    expect((await validate(dana, sql)).Message).toBe(
      `${hidden} Did you mean erin.\`vega-demo\`.\`seattle-weather.csv\`?`,
    );
  });
});

describe("uploads", () => {
  it("should say that a ';' file sent with a comma schema looks ';'-delimited, and how to declare it", async () => {
    const refused = await envelope(
      await upload(dana, "dana/vega-demo/semicolons.csv", WEATHER.replaceAll(",", ";"), WEATHER_SCHEMA),
      400,
    );

    expect(refused.Status.Message).toContain("the header row has 1 field, but the TableDefinition has 6 columns");
    expect(refused.Status.Message).toContain(
      'The file looks ";"-delimited (6 fields a row), but was read with the Schema\'s Delimiter ",": declare it with ' +
        '{"DataSpecification": {"DataOptions": {"Delimiter": ";"}}} in the Schema',
    );
  });

  it("should say that a JSON file does not look like CSV", async () => {
    const json = JSON.stringify([{ date: "2012-01-01", wind: 4.7 }, { date: "2012-01-02" }], null, 2);

    const refused = await envelope(await upload(dana, "dana/vega-demo/weather.json", json), 400);

    expect(refused.Status.Message).toMatch(/^The file looks like JSON, not CSV \(it starts with "\["\): only CSV/);
  });

  it("should say which header names were changed", async () => {
    const body = await envelope(
      await upload(dana, "dana/vega-demo/names.csv", "id,name,name,,value\n1,a,b,c,2\n"),
      200,
    );
    const warning =
      "2 header names were changed, as a table needs distinct, non-blank column names (letter case ignored): " +
      "column 3 'name' became 'name_2', column 4 (blank) became 'column_4'.";

    expect(body.Status.Message).toMatch(/: 1 row, 5 columns, \d+ bytes\. /);
    expect(body.Status.Message.endsWith(warning)).toBe(true);
    expect(body.Data).toEqual({ Warnings: [warning] });
  });

  it("should warn when the first row, taken as the header, looks like data", async () => {
    const stocks = "MSFT,Jan 1 2000,39.81\nMSFT,Feb 1 2000,36.35\nAAPL,Jan 1 2000,25.94\n";

    const body = await envelope(await upload(dana, "dana/vega-demo/stocks.csv", stocks), 200);
    const declared = await envelope(
      await upload(
        dana,
        "dana/vega-demo/stocks.csv",
        stocks,
        JSON.stringify({ DataSpecification: { DataOptions: { Header: false } } }),
      ),
      200,
    );

    expect(body.Data).toEqual({
      Warnings: [
        "The first row was taken as the header row, and its values became the column names, but it looks like data " +
          "('MSFT', 'Jan 1 2000', '39.81'): if the file has no header row, upload it again with " +
          '{"DataSpecification": {"DataOptions": {"Header": false}}} in the Schema.',
      ],
    });
    expect(body.Status.Message).toContain("it looks like data");
    expect(declared.Data).toEqual({ Warnings: [] });
    expect(declared.Status.Message).toContain(": 3 rows, 3 columns");
  });
});

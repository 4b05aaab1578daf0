import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/worker/http/app";
import { runMaintenance } from "../../src/worker/maintenance/scheduled";
import { PART_SIZE } from "../../src/worker/storage/r2-writer";
import {
  BOUNDARY,
  bytesOf,
  columnsOf,
  createDataset,
  dataItemRow,
  datasetId,
  downloadBytes,
  gzip,
  multipartBody,
  objectKeys,
  orphansUnder,
  schemaOf,
  uniqueName,
  upload,
  uploadOk,
  uploadRaw,
} from "../support/catalog";
import { call, dbFailing, readEnvelope, readUnauthorized, workerWith } from "../support/http";
import { authHeader, login, type LoggedIn } from "../support/login";

let owner: LoggedIn;

beforeAll(async () => {
  owner = await login("up-owner");
});

afterEach(() => {
  vi.useRealTimers();
});

/** A new private dataset of the owner; returns "account/dataset". */
async function freshDataset(): Promise<string> {
  const name = uniqueName("up");
  await createDataset(owner.accessToken, owner.accountName, name);
  return `${owner.accountName}/${name}`;
}

/** The R2 prefix under which a dataset's versions are stored. */
async function dataPrefix(dataset: string): Promise<string> {
  const [account, name] = dataset.split("/") as [string, string];
  return `data/${await datasetId(account, name)}/`;
}

async function failedUpload(response: Response, status: number): Promise<string> {
  return (await readEnvelope(response, status)).Status.Message;
}

function schemaWith(columns: [string, string, boolean?][], dataOptions?: Record<string, unknown>): string {
  return JSON.stringify({
    SchemaVersion: "1.0",
    TableDefinition: {
      Columns: columns.map(([Name, DataType, nullable]) => ({
        Name,
        DataType: { DataType, DataTypeOptions: { Nullable: nullable ?? true } },
      })),
    },
    ...(dataOptions ? { DataSpecification: { FormatType: "CSV", DataOptions: dataOptions } } : {}),
  });
}

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
    .map((byte) => byte.toString(16).padStart(2, "0"))
    .join("");
}

function text(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

const ORDERS = "id,item,price\n1,apple,0.5\n2,banana,0.25\n";

describe("POST /v1/data/{AccountName}/{DatasetName}/{DataName}", () => {
  it("should register a CSV file, list it, and serve back exactly the uploaded bytes", async () => {
    const dataset = await freshDataset();

    const message = await uploadOk(owner.accessToken, `${dataset}/orders.csv`, ORDERS);

    expect(message).toBe(`Registered ${dataset}/orders.csv: 2 rows, 3 columns, ${ORDERS.length} bytes.`);
    const list = await readEnvelope<{ DataCount: number; DataList: { DataName: string }[] }>(
      await call(`/v1/dataset/${dataset}/data`, { headers: authHeader(owner.accessToken) }),
      200,
    );
    expect(list.Data.DataList.map((item) => item.DataName)).toEqual(["orders.csv"]);
    expect(text(await downloadBytes(owner.accessToken, `${dataset}/orders.csv`))).toBe(ORDERS);
  });

  it("should recognise gzip by its magic bytes even when the file is named .csv", async () => {
    const dataset = await freshDataset();
    const gzipped = await gzip(ORDERS);

    const message = await uploadOk(owner.accessToken, `${dataset}/orders`, gzipped, {}, "x.csv");

    expect(message).toContain(`2 rows, 3 columns, ${gzipped.length} bytes (gzip).`);
    const schema = await schemaOf(owner.accessToken, `${dataset}/orders`);
    expect(schema.DataSpecification.DeliveryType).toBe("GZIP");
    expect(columnsOf(schema)).toEqual(["id:INTEGER", "item:STRING", "price:DOUBLE"]);
    expect(await downloadBytes(owner.accessToken, `${dataset}/orders`)).toEqual(gzipped);
  });

  it("should treat a plain file named .gz as plain CSV", async () => {
    const dataset = await freshDataset();

    const message = await uploadOk(owner.accessToken, `${dataset}/orders`, ORDERS, {}, "y.gz");

    expect(message).not.toContain("gzip");
    const schema = await schemaOf(owner.accessToken, `${dataset}/orders`);
    expect(schema.DataSpecification.DeliveryType).toBe("RAW");
    expect(columnsOf(schema)).toEqual(["id:INTEGER", "item:STRING", "price:DOUBLE"]);
  });

  it("should generate the narrowest type of every column", async () => {
    const dataset = await freshDataset();
    const csv = [
      "count,ratio,flag,day,moment,label,zip,mixed,nothing",
      "1,1.5,true,2024-01-31,2024-01-31T13:45:00Z,a,007,1,",
      "-42,2,FALSE,2024-02-29,2024-02-29 08:00,b,010,2.5,",
      ",,,,,,,,",
    ].join("\n");

    await uploadOk(owner.accessToken, `${dataset}/types.csv`, csv);

    expect(columnsOf(await schemaOf(owner.accessToken, `${dataset}/types.csv`))).toEqual([
      "count:INTEGER",
      "ratio:DOUBLE",
      "flag:BOOLEAN",
      "day:DATE",
      "moment:TIMESTAMP",
      "label:STRING",
      "zip:STRING",
      "mixed:DOUBLE",
      "nothing:STRING",
    ]);
  });

  it("should store the generated TableDefinition and the DeliveryType in the schema string", async () => {
    const dataset = await freshDataset();
    await uploadOk(owner.accessToken, `${dataset}/orders.csv`, ORDERS);

    const body = await readEnvelope<{ Schema: string }>(
      await call(`/v1/data/${dataset}/orders.csv/metadata/schema`, { headers: authHeader(owner.accessToken) }),
      200,
    );

    expect(JSON.parse(body.Data.Schema)).toEqual({
      SchemaVersion: "1.0",
      TableDefinition: {
        Columns: [
          { Name: "id", DataType: { DataType: "INTEGER", DataTypeOptions: { Nullable: true } } },
          { Name: "item", DataType: { DataType: "STRING", DataTypeOptions: { Nullable: true } } },
          { Name: "price", DataType: { DataType: "DOUBLE", DataTypeOptions: { Nullable: true } } },
        ],
      },
      DataSpecification: {
        FormatType: "CSV",
        DeliveryType: "RAW",
        DataOptions: { Header: true, Delimiter: "," },
      },
    });
  });

  it("should keep a given TableDefinition that the file fits, even where it would infer otherwise", async () => {
    const dataset = await freshDataset();
    const schema = schemaWith([
      ["code", "STRING", false],
      ["amount", "DOUBLE"],
    ]);

    await uploadOk(owner.accessToken, `${dataset}/codes.csv`, "code,amount\n1,2\n3,\n", { Schema: schema });

    const stored = await schemaOf(owner.accessToken, `${dataset}/codes.csv`);
    expect(columnsOf(stored)).toEqual(["code:STRING", "amount:DOUBLE"]);
    expect(stored.TableDefinition.Columns[0]!.DataType.DataTypeOptions.Nullable).toBe(false);
  });

  it("should read the file with the delimiter and header setting the schema gives", async () => {
    const dataset = await freshDataset();
    const schema = JSON.stringify({ DataSpecification: { DataOptions: { Header: false, Delimiter: ";" } } });

    const message = await uploadOk(owner.accessToken, `${dataset}/semi.csv`, "1;x\n2;y\n3;z\n", { Schema: schema });

    expect(message).toContain("3 rows, 2 columns");
    const stored = await schemaOf(owner.accessToken, `${dataset}/semi.csv`);
    expect(columnsOf(stored)).toEqual(["column_1:INTEGER", "column_2:STRING"]);
    expect(stored.DataSpecification.DataOptions).toEqual({ Header: false, Delimiter: ";" });
  });

  it("should answer 400 with the row, column and value of each violation of the TableDefinition, and store nothing", async () => {
    const dataset = await freshDataset();
    const schema = schemaWith([
      ["id", "INTEGER"],
      ["amount", "INTEGER"],
      ["day", "DATE"],
    ]);
    const csv = "id,amount,day\n1,10,2024-01-01\n2,abc,2024-01-02\n3,30,2024-13-01\n4,4.5,2024-01-04\n";

    const message = await failedUpload(
      await upload(owner.accessToken, `${dataset}/bad.csv`, csv, { Schema: schema, Force: "false" }),
      400,
    );

    expect(message).toContain("does not match the TableDefinition");
    expect(message).toContain("row 2, column 'amount': 'abc' is not a valid INTEGER");
    expect(message).toContain("row 3, column 'day': '2024-13-01' is not a valid DATE");
    expect(message).toContain("row 4, column 'amount': '4.5' is not a valid INTEGER");
    const [account, name] = dataset.split("/") as [string, string];
    expect(await dataItemRow(account, name, "bad.csv")).toBeNull();
    expect(await objectKeys(await dataPrefix(dataset))).toEqual([]);
    expect(await orphansUnder(await dataPrefix(dataset))).toEqual([]);
  });

  it("should answer 400 listing the first five problems when a large file breaks the TableDefinition from its start", async () => {
    const dataset = await freshDataset();
    const [account, name] = dataset.split("/") as [string, string];
    const csv = `n\n${"x\n".repeat(300_000)}`;

    const message = await failedUpload(
      await upload(owner.accessToken, `${dataset}/wrong.csv`, csv, { Schema: schemaWith([["n", "INTEGER"]]) }),
      400,
    );

    for (const row of [1, 2, 3, 4, 5]) expect(message).toContain(`row ${row}, column 'n': 'x' is not a valid INTEGER`);
    expect(message).not.toContain("row 6,");
    expect(message).toMatch(/\(only the first 5 problems are listed\)\.$/);
    expect(await dataItemRow(account, name, "wrong.csv")).toBeNull();
    expect(await objectKeys(await dataPrefix(dataset))).toEqual([]);
    expect(await orphansUnder(await dataPrefix(dataset))).toEqual([]);
  });

  it("should answer 400 for a large file that stops being UTF-8 near its start", async () => {
    const dataset = await freshDataset();
    const csv = new Uint8Array([...bytesOf("n\n"), 0xff, 0x0a, ...bytesOf("1\n".repeat(300_000))]);

    const message = await failedUpload(await upload(owner.accessToken, `${dataset}/binary.csv`, csv), 400);

    expect(message).toContain("The file is not valid UTF-8: byte 0xFF at byte offset 2, in data row 1");
    expect(await objectKeys(await dataPrefix(dataset))).toEqual([]);
  });

  it("should answer 400 for a row with a different number of fields than the TableDefinition", async () => {
    const dataset = await freshDataset();
    const schema = schemaWith([
      ["a", "INTEGER"],
      ["b", "INTEGER"],
    ]);

    const message = await failedUpload(
      await upload(owner.accessToken, `${dataset}/short.csv`, "a,b\n1,2\n3\n", { Schema: schema }),
      400,
    );

    expect(message).toContain("row 2 has 1 field, expected 2");
  });

  it("should answer 400 for an empty value in a column that is not nullable", async () => {
    const dataset = await freshDataset();
    const schema = schemaWith([
      ["a", "INTEGER", false],
      ["b", "STRING"],
    ]);

    const message = await failedUpload(
      await upload(owner.accessToken, `${dataset}/nulls.csv`, "a,b\n1,x\n,y\n", { Schema: schema }),
      400,
    );

    expect(message).toContain("row 2, column 'a': the value is empty, but the column is not nullable");
  });

  it("should say which header names it changed and warn of a first row that looks like data, in Message and Data.Warnings", async () => {
    const dataset = await freshDataset();

    const renamed = await readEnvelope<{ Warnings: string[] }>(
      await upload(owner.accessToken, `${dataset}/names.csv`, "id,name,name,,value\n1,a,b,c,2\n"),
      200,
    );
    const headless = await readEnvelope<{ Warnings: string[] }>(
      await upload(owner.accessToken, `${dataset}/stocks.csv`, "MSFT,Jan 1 2000,39.81\nMSFT,Feb 1 2000,36.35\n"),
      200,
    );
    const plain = await readEnvelope<{ Warnings: string[] }>(
      await upload(owner.accessToken, `${dataset}/orders.csv`, ORDERS),
      200,
    );

    expect(renamed.Data.Warnings).toEqual([
      "2 header names were changed, as a table needs distinct, non-blank column names (letter case ignored): " +
        "column 3 'name' became 'name_2', column 4 (blank) became 'column_4'.",
    ]);
    expect(renamed.Status.Message).toBe(
      `Registered ${dataset}/names.csv: 1 row, 5 columns, 30 bytes. ${renamed.Data.Warnings[0]}`,
    );
    expect(headless.Data.Warnings).toEqual([expect.stringMatching(/^The first row was taken as the header row/)]);
    expect(headless.Status.Message).toContain(`Registered ${dataset}/stocks.csv: 1 row, 3 columns`);
    expect(headless.Status.Message).toContain(headless.Data.Warnings[0]);
    expect(plain.Data.Warnings).toEqual([]);
  });

  it("should say when a refused file looks ';'-delimited or like JSON", async () => {
    const dataset = await freshDataset();
    const schema = schemaWith(
      [
        ["id", "INTEGER"],
        ["item", "STRING"],
        ["price", "DOUBLE"],
      ],
      { Header: true, Delimiter: "," },
    );

    const semicolons = await failedUpload(
      await upload(owner.accessToken, `${dataset}/orders.csv`, ORDERS.replaceAll(",", ";"), { Schema: schema }),
      400,
    );
    const json = await failedUpload(
      await upload(owner.accessToken, `${dataset}/orders.json`, '[\n  {"id": 1, "item": "apple"},\n  {"id": 2}\n]\n'),
      400,
    );

    expect(semicolons).toContain(
      'The file looks ";"-delimited (3 fields a row), but was read with the Schema\'s Delimiter ","',
    );
    expect(json).toMatch(/^The file looks like JSON, not CSV \(it starts with "\["\)/);
  });

  it("should generate the TableDefinition when ForceGenerateTableDefinition is true, whatever the Schema says", async () => {
    const dataset = await freshDataset();
    const schema = schemaWith([["name", "INTEGER"]]);

    await uploadOk(owner.accessToken, `${dataset}/names.csv`, "name,age\nann,31\nbob,42\n", {
      Schema: schema,
      Force: "true",
    });

    expect(columnsOf(await schemaOf(owner.accessToken, `${dataset}/names.csv`))).toEqual([
      "name:STRING",
      "age:INTEGER",
    ]);
  });

  it("should answer 400 for a ForceGenerateTableDefinition that is neither true nor false", async () => {
    const dataset = await freshDataset();

    const message = await failedUpload(
      await upload(owner.accessToken, `${dataset}/a.csv`, ORDERS, { Force: "yes" }),
      400,
    );

    expect(message).toBe("ForceGenerateTableDefinition must be true or false, got 'yes'");
  });

  it("should answer 400 for a Schema that is not JSON", async () => {
    const dataset = await freshDataset();

    const message = await failedUpload(
      await upload(owner.accessToken, `${dataset}/a.csv`, ORDERS, { Schema: "{TableDefinition:" }),
      400,
    );

    expect(message).toMatch(/^Schema is not valid JSON: /);
  });

  it("should answer 400 naming an unknown DataType and the types there are", async () => {
    const dataset = await freshDataset();

    const message = await failedUpload(
      await upload(owner.accessToken, `${dataset}/a.csv`, ORDERS, { Schema: schemaWith([["id", "VARCHAR"]]) }),
      400,
    );

    expect(message).toBe(
      "Schema.TableDefinition.Columns[0].DataType.DataType: unknown type 'VARCHAR'; expected one of STRING, INTEGER, DOUBLE, BOOLEAN, DATE, TIMESTAMP",
    );
  });

  it("should answer 400 for a Schema of the wrong shape, naming where", async () => {
    const dataset = await freshDataset();
    const wrongShape = JSON.stringify({ TableDefinition: { Columns: { Name: "id" } } });
    const misspelt = JSON.stringify({
      TableDefinition: {
        Columns: [{ Name: "id", DataType: { DataType: "INTEGER", DataTypeOptions: { nullable: false } } }],
      },
    });

    const shape = await failedUpload(
      await upload(owner.accessToken, `${dataset}/a.csv`, ORDERS, { Schema: wrongShape }),
      400,
    );
    const field = await failedUpload(
      await upload(owner.accessToken, `${dataset}/a.csv`, ORDERS, { Schema: misspelt }),
      400,
    );

    expect(shape).toBe("Schema.TableDefinition.Columns: expected an array, got an object");
    expect(field).toContain("Schema.TableDefinition.Columns[0].DataType.DataTypeOptions: unknown field 'nullable'");
    expect(field).toContain("did you mean 'Nullable'?");
  });

  it("should answer 400 when there is no Data part", async () => {
    const dataset = await freshDataset();
    const form = new FormData();
    form.append("Schema", schemaWith([["id", "INTEGER"]]));

    const message = await failedUpload(
      await call(`/v1/data/${dataset}/a.csv`, { method: "POST", headers: authHeader(owner.accessToken), body: form }),
      400,
    );

    expect(message).toBe("No 'Data' part: send the CSV file as a file part named 'Data'.");
  });

  it("should answer 400 'multiple files' for a second file part and leave the current version alone", async () => {
    const dataset = await freshDataset();
    const [account, name] = dataset.split("/") as [string, string];
    await uploadOk(owner.accessToken, `${dataset}/a.csv`, ORDERS);
    const before = await dataItemRow(account, name, "a.csv");
    const body = multipartBody([
      { name: "Data", filename: "one.csv", bytes: bytesOf("x\n1\n") },
      { name: "Data", filename: "two.csv", bytes: bytesOf("y\n2\n") },
    ]);

    const message = await failedUpload(await uploadRaw(owner.accessToken, `${dataset}/a.csv`, body), 400);

    expect(message).toBe("Multiple files received; send exactly one file, as the 'Data' part.");
    expect(await dataItemRow(account, name, "a.csv")).toEqual(before);
    expect(await objectKeys(await dataPrefix(dataset))).toEqual([before!.objectKey]);
    expect(await orphansUnder(await dataPrefix(dataset))).toEqual([]);
  });

  it("should answer 400 for a second file part under another name and store nothing", async () => {
    const dataset = await freshDataset();
    const [account, name] = dataset.split("/") as [string, string];
    const body = multipartBody([
      { name: "Data", filename: "one.csv", bytes: bytesOf("x\n1\n") },
      { name: "Extra", filename: "two.csv", bytes: bytesOf("y\n2\n") },
    ]);

    const message = await failedUpload(await uploadRaw(owner.accessToken, `${dataset}/a.csv`, body), 400);

    expect(message).toContain("Multiple files");
    expect(await dataItemRow(account, name, "a.csv")).toBeNull();
    expect(await objectKeys(await dataPrefix(dataset))).toEqual([]);
  });

  it("should answer 400 when the Schema part comes after the Data part, and store nothing", async () => {
    const dataset = await freshDataset();
    const [account, name] = dataset.split("/") as [string, string];
    const body = multipartBody([
      { name: "Data", filename: "a.csv", bytes: bytesOf(ORDERS) },
      { name: "Schema", value: schemaWith([["id", "INTEGER"]]) },
    ]);

    const message = await failedUpload(await uploadRaw(owner.accessToken, `${dataset}/a.csv`, body), 400);

    expect(message).toBe("Send the 'Schema' part before the 'Data' part.");
    expect(await dataItemRow(account, name, "a.csv")).toBeNull();
    expect(await objectKeys(await dataPrefix(dataset))).toEqual([]);
  });

  it("should take a Schema sent as a file part, as curl -F Schema=@schema.json sends it", async () => {
    const dataset = await freshDataset();
    const schema = schemaWith([
      ["id", "INTEGER"],
      ["item", "STRING"],
      ["price", "STRING"],
    ]);
    const body = multipartBody([
      { name: "Schema", filename: "schema.json", bytes: bytesOf(schema) },
      { name: "Data", filename: "a.csv", bytes: bytesOf(ORDERS) },
    ]);

    expect((await uploadRaw(owner.accessToken, `${dataset}/orders`, body)).status).toBe(200);

    // The given schema, not one inferred from the file (which would type price as DOUBLE).
    expect(columnsOf(await schemaOf(owner.accessToken, `${dataset}/orders`))).toEqual([
      "id:INTEGER",
      "item:STRING",
      "price:STRING",
    ]);
  });

  it("should answer 400 for a Schema file part after the Data part, or longer than 1 MiB", async () => {
    const dataset = await freshDataset();
    const schema = bytesOf(schemaWith([["id", "INTEGER"]]));
    const late = multipartBody([
      { name: "Data", filename: "a.csv", bytes: bytesOf(ORDERS) },
      { name: "Schema", filename: "schema.json", bytes: schema },
    ]);
    const long = multipartBody([
      { name: "Schema", filename: "schema.json", bytes: bytesOf(" ".repeat(1024 * 1024 + 1)) },
      { name: "Data", filename: "a.csv", bytes: bytesOf(ORDERS) },
    ]);

    expect(await failedUpload(await uploadRaw(owner.accessToken, `${dataset}/a.csv`, late), 400)).toBe(
      "Send the 'Schema' part before the 'Data' part.",
    );
    expect(await failedUpload(await uploadRaw(owner.accessToken, `${dataset}/b.csv`, long), 400)).toBe(
      "The 'Schema' part is longer than 1 MiB.",
    );
  });

  it("should answer 400 for the file sent as a plain field, saying to send it as a file", async () => {
    const dataset = await freshDataset();
    const body = multipartBody([{ name: "Data", value: ORDERS }]);

    const message = await failedUpload(await uploadRaw(owner.accessToken, `${dataset}/a.csv`, body), 400);

    expect(message).toBe(
      "The 'Data' part has no filename, so it is not a file; send the CSV as a file part (curl -F 'Data=@file.csv').",
    );
  });

  it("should answer 400 for a Schema part sent twice rather than take one of them", async () => {
    const dataset = await freshDataset();
    const [account, name] = dataset.split("/") as [string, string];
    const body = multipartBody([
      { name: "Schema", value: "{}" },
      { name: "Schema", value: "{}" },
      { name: "Data", filename: "a.csv", bytes: bytesOf(ORDERS) },
    ]);

    const message = await failedUpload(await uploadRaw(owner.accessToken, `${dataset}/a.csv`, body), 400);

    expect(message).toBe("The 'Schema' part is sent twice; send it once.");
    expect(await dataItemRow(account, name, "a.csv")).toBeNull();
  });

  it("should answer 400 naming the parts there are for an unexpected part", async () => {
    const dataset = await freshDataset();
    const body = multipartBody([
      { name: "Format", value: "csv" },
      { name: "Data", filename: "a.csv", bytes: bytesOf(ORDERS) },
    ]);

    const message = await failedUpload(await uploadRaw(owner.accessToken, `${dataset}/a.csv`, body), 400);

    expect(message).toBe("Unexpected part 'Format'; the parts are Schema, ForceGenerateTableDefinition, Data.");
  });

  it.each([
    ["application/json", JSON.stringify({ Data: "a,b" })],
    ["text/csv", ORDERS],
  ])("should answer 415 for a %s body", async (contentType, body) => {
    const dataset = await freshDataset();

    const message = await failedUpload(await uploadRaw(owner.accessToken, `${dataset}/a.csv`, body, contentType), 415);

    expect(message).toBe("Send the upload as multipart/form-data with a 'Data' file part.");
  });

  it("should answer without waiting for the build queue to take the request", async () => {
    const dataset = await freshDataset();
    const [account, name] = dataset.split("/") as [string, string];
    let asked = 0;
    // As the local build queue does while the long lane's process runs a long statement: no answer for now.
    const stuck = { send: () => (asked++, new Promise<never>(() => undefined)) } as unknown as Queue;
    const app = createApp();
    const changed = { ...env, COLUMN_IMAGES: "build", BUILD_QUEUE: stuck };
    // The response, not what the request leaves running after it (waitUntil).
    const answerOnly = async (request: Request) => app.fetch(request, changed, createExecutionContext());

    const answered = await Promise.race([
      upload(owner.accessToken, `${dataset}/quick.csv`, "n\n1\n", {}, "quick.csv", answerOnly),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 5_000)),
    ]);

    expect(answered?.status).toBe(200);
    expect(asked).toBe(1);
    expect(await dataItemRow(account, name, "quick.csv")).not.toBeNull();
  });

  it("should answer 500 when the catalog cannot record the upload, and keep nothing of it", async () => {
    const dataset = await freshDataset();
    const [account, name] = dataset.split("/") as [string, string];
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    const outage = workerWith({ DB: dbFailing(/INSERT INTO data_items/) });

    await readEnvelope(await upload(owner.accessToken, `${dataset}/lost.csv`, "n\n1\n", {}, "lost.csv", outage), 500);

    expect(await dataItemRow(account, name, "lost.csv")).toBeNull();
    expect(await objectKeys(await dataPrefix(dataset))).toEqual([]);
    expect(await orphansUnder(await dataPrefix(dataset))).toEqual([]);
  });

  it("should answer 413 for an upload larger than MAX_UPLOAD_BYTES, and store nothing", async () => {
    const dataset = await freshDataset();
    const [account, name] = dataset.split("/") as [string, string];
    const small = workerWith({ MAX_UPLOAD_BYTES: "1000" });

    const body = multipartBody([{ name: "Data", filename: "big.csv", bytes: bytesOf(`n\n${"1\n".repeat(1000)}`) }]);

    const headers = {
      ...authHeader(owner.accessToken),
      "content-type": `multipart/form-data; boundary=${BOUNDARY}`,
      "content-length": String(body.length),
    };

    const message = await failedUpload(
      await call(`/v1/data/${dataset}/big.csv`, { method: "POST", headers, body }, small),
      413,
    );

    expect(message).toBe("The upload is larger than the limit of 1000 bytes.");
    expect(await dataItemRow(account, name, "big.csv")).toBeNull();
    expect(await objectKeys(await dataPrefix(dataset))).toEqual([]);
  });

  it("should answer 413 for a streamed upload without Content-Length once the file passes MAX_UPLOAD_BYTES", async () => {
    const dataset = await freshDataset();
    const [account, name] = dataset.split("/") as [string, string];
    const body = multipartBody([{ name: "Data", filename: "big.csv", bytes: bytesOf(`n\n${"1\n".repeat(5000)}`) }]);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < body.length; at += 512) controller.enqueue(body.slice(at, at + 512));
        controller.close();
      },
    });

    const response = await uploadRaw(
      owner.accessToken,
      `${dataset}/big.csv`,
      stream,
      undefined,
      workerWith({ MAX_UPLOAD_BYTES: "1000" }),
    );

    expect(await failedUpload(response, 413)).toBe("The file is larger than the upload limit of 1000 bytes.");
    expect(await dataItemRow(account, name, "big.csv")).toBeNull();
    expect(await objectKeys(await dataPrefix(dataset))).toEqual([]);
    expect(await orphansUnder(await dataPrefix(dataset))).toEqual([]);
  });

  it("should answer 413 for a gzip file that decompresses past MAX_CSV_BYTES", async () => {
    const dataset = await freshDataset();
    const bomb = await gzip(`n\n${"0\n".repeat(500_000)}`);
    expect(bomb.length).toBeLessThan(10_000);

    const message = await failedUpload(
      await upload(
        owner.accessToken,
        `${dataset}/bomb.csv`,
        bomb,
        {},
        "bomb.csv",
        workerWith({ MAX_CSV_BYTES: "100000" }),
      ),
      413,
    );

    expect(message).toBe("The file is larger than the limit of 100000 bytes once decompressed.");
    expect(await objectKeys(await dataPrefix(dataset))).toEqual([]);
  });

  it("should answer 400 for a file that is not UTF-8, saying where", async () => {
    const dataset = await freshDataset();
    const latin1 = new Uint8Array([...bytesOf("name\nok\n"), 0x5a, 0xfc, 0x72, 0x69, 0x63, 0x68, 0x0a]);

    const message = await failedUpload(await upload(owner.accessToken, `${dataset}/latin1.csv`, latin1), 400);

    expect(message).toBe(
      "The file is not valid UTF-8: byte 0xFC at byte offset 9, in data row 2 is not part of a valid character. Save the file as UTF-8 and upload it again.",
    );
  });

  it("should answer 400 for a file that starts like gzip but is not", async () => {
    const dataset = await freshDataset();
    const broken = new Uint8Array([0x1f, 0x8b, ...bytesOf("this is not deflate data at all")]);

    const message = await failedUpload(await upload(owner.accessToken, `${dataset}/broken.csv`, broken), 400);

    expect(message).toMatch(/^The file starts like gzip but cannot be decompressed: /);
  });

  it("should answer 400 for an empty file", async () => {
    const dataset = await freshDataset();

    const message = await failedUpload(await upload(owner.accessToken, `${dataset}/empty.csv`, ""), 400);

    expect(message).toContain("The file is empty");
  });

  it.each([
    [
      ".hidden",
      "DataName '.hidden' is invalid: use 1-128 characters of A-Z, a-z, 0-9, '_', '-' and '.', not starting with '.'.",
    ],
    [
      "two%20words",
      "DataName 'two words' is invalid: use 1-128 characters of A-Z, a-z, 0-9, '_', '-' and '.', not starting with '.'.",
    ],
    [
      "x".repeat(129),
      `DataName '${"x".repeat(129)}' is invalid: use 1-128 characters of A-Z, a-z, 0-9, '_', '-' and '.', not starting with '.'.`,
    ],
  ])("should answer 400 naming the rule for the DataName %s", async (dataName, expected) => {
    const dataset = await freshDataset();

    expect(await failedUpload(await upload(owner.accessToken, `${dataset}/${dataName}`, ORDERS), 400)).toBe(expected);
  });

  it("should accept a DataName of 128 characters with dots, dashes and underscores", async () => {
    const dataset = await freshDataset();
    const dataName = `a.b-c_d${"x".repeat(121)}`;

    await uploadOk(owner.accessToken, `${dataset}/${dataName}`, ORDERS);

    expect(text(await downloadBytes(owner.accessToken, `${dataset}/${dataName}`))).toBe(ORDERS);
  });

  it("should answer 400 naming the rule for an invalid DatasetName or AccountName", async () => {
    const dataset = await failedUpload(
      await upload(owner.accessToken, `${owner.accountName}/bad.name/a.csv`, ORDERS),
      400,
    );
    const account = await failedUpload(await upload(owner.accessToken, `b@d/sales/a.csv`, ORDERS), 400);

    expect(dataset).toBe("DatasetName 'bad.name' is invalid: use 1-64 characters of A-Z, a-z, 0-9, '_' and '-'.");
    expect(account).toBe("AccountName 'b@d' is invalid: use 1-64 characters of A-Z, a-z, 0-9, '_' and '-'.");
  });

  it("should answer 404 for a dataset that does not exist", async () => {
    const message = await failedUpload(
      await upload(owner.accessToken, `${owner.accountName}/no-such-dataset/a.csv`, ORDERS),
      404,
    );

    expect(message).toBe(`Dataset ${owner.accountName}/no-such-dataset not found, or you may not access it.`);
  });

  it("should answer 404 for a dataset whose name differs only in letter case", async () => {
    const dataset = await freshDataset();

    await failedUpload(await upload(owner.accessToken, `${dataset.toUpperCase()}/a.csv`, ORDERS), 404);
  });

  it("should require an access token", async () => {
    const dataset = await freshDataset();
    const form = new FormData();
    form.append("Data", new File([bytesOf(ORDERS)], "a.csv"));

    const message = await readUnauthorized(await call(`/v1/data/${dataset}/a.csv`, { method: "POST", body: form }));

    expect(message).toMatch(/Missing bearer token/);
  });
});

describe("real-world CSV files through the upload", () => {
  it.each([
    ["a byte order mark", "\uFEFFid,name\n1,ann\n", ["id:INTEGER", "name:STRING"], 1],
    [
      "quoted commas, quotes and line breaks",
      'id,text\n1,"a, b"\n2,"she said ""hi"""\n3,"line one\nline two"\n',
      ["id:INTEGER", "text:STRING"],
      3,
    ],
    ["CRLF line ends", "a,b\r\n1,2\r\n3,4\r\n", ["a:INTEGER", "b:INTEGER"], 2],
    ["no line break at the end", "a,b\n1,2\n3,4", ["a:INTEGER", "b:INTEGER"], 2],
    ["empty fields", "a,b,c\n1,,x\n,2,\n", ["a:INTEGER", "b:INTEGER", "c:STRING"], 2],
    ["non-ASCII text", "名前,Straße\n東京,Zürich\nΑθήνα,😀\n", ["名前:STRING", "Straße:STRING"], 2],
    ["a header and no rows", "a,b\n", ["a:STRING", "b:STRING"], 0],
  ])("should take a file with %s and keep its bytes", async (_what, csv, columns, rows) => {
    const dataset = await freshDataset();

    const message = await uploadOk(owner.accessToken, `${dataset}/file.csv`, csv);

    expect(message).toContain(
      `: ${rows} ${rows === 1 ? "row" : "rows"}, ${columns.length} columns, ${bytesOf(csv).length} bytes.`,
    );
    expect(columnsOf(await schemaOf(owner.accessToken, `${dataset}/file.csv`))).toEqual(columns);
    expect(await downloadBytes(owner.accessToken, `${dataset}/file.csv`)).toEqual(bytesOf(csv));
  });

  it("should take a row of 2,000 columns", async () => {
    const dataset = await freshDataset();
    const header = Array.from({ length: 2000 }, (_, i) => `c${i + 1}`).join(",");
    const row = Array.from({ length: 2000 }, (_, i) => String(i)).join(",");

    const message = await uploadOk(owner.accessToken, `${dataset}/wide.csv`, `${header}\n${row}\n`);

    expect(message).toContain(": 1 row, 2000 columns,");
    const columns = columnsOf(await schemaOf(owner.accessToken, `${dataset}/wide.csv`));
    expect(columns).toHaveLength(2000);
    expect(columns[0]).toBe("c1:INTEGER");
    expect(columns[1999]).toBe("c2000:INTEGER");
  });
});

describe("replacing a data item", () => {
  const V1 = "id,name\n1,first\n2,second\n";
  const V1_SCHEMA = schemaWith([
    ["id", "INTEGER"],
    ["name", "STRING"],
  ]);

  /** A dataset with v1 of item.csv uploaded under a TableDefinition; returns its path, R2 prefix and v1's key. */
  async function withVersionOne(): Promise<{ path: string; prefix: string; v1Key: string }> {
    const dataset = await freshDataset();
    await uploadOk(owner.accessToken, `${dataset}/item.csv`, V1, { Schema: V1_SCHEMA });
    const [account, name] = dataset.split("/") as [string, string];
    const row = await dataItemRow(account, name, "item.csv");
    return { path: `${dataset}/item.csv`, prefix: await dataPrefix(dataset), v1Key: row!.objectKey };
  }

  async function expectVersionOneIntact(path: string, prefix: string, v1Key: string): Promise<void> {
    expect(text(await downloadBytes(owner.accessToken, path))).toBe(V1);
    expect(columnsOf(await schemaOf(owner.accessToken, path))).toEqual(["id:INTEGER", "name:STRING"]);
    expect(await objectKeys(prefix)).toEqual([v1Key]);
    expect(await orphansUnder(prefix)).toEqual([]);
  }

  it("should keep v1 byte for byte when v2 breaks the TableDefinition", async () => {
    const { path, prefix, v1Key } = await withVersionOne();

    const message = await failedUpload(
      await upload(owner.accessToken, path, "id,name\n3,third\nfour,fourth\n", { Schema: V1_SCHEMA }),
      400,
    );

    expect(message).toContain("row 2, column 'id': 'four' is not a valid INTEGER");
    await expectVersionOneIntact(path, prefix, v1Key);
  });

  it("should keep v1 when the v2 body breaks off in the middle of the file", async () => {
    const { path, prefix, v1Key } = await withVersionOne();
    const body = multipartBody([
      { name: "Data", filename: "v2.csv", bytes: bytesOf(`id,name\n${"3,third\n".repeat(200)}`) },
    ]);

    const message = await failedUpload(await uploadRaw(owner.accessToken, path, body.slice(0, body.length - 300)), 400);

    expect(message).toBe("The multipart body is malformed: Unexpected end of form.");
    await expectVersionOneIntact(path, prefix, v1Key);
  });

  it("should keep v1 when a streamed v2 body stops before the end of the file", async () => {
    const { path, prefix, v1Key } = await withVersionOne();
    const body = multipartBody([
      { name: "Data", filename: "v2.csv", bytes: bytesOf(`id,name\n${"3,third\n".repeat(2000)}`) },
    ]);
    const partial = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < body.length / 2; at += 1024) controller.enqueue(body.slice(at, at + 1024));
        controller.close();
      },
    });

    await failedUpload(await uploadRaw(owner.accessToken, path, partial), 400);

    await expectVersionOneIntact(path, prefix, v1Key);
  });

  it("should keep v1 when v2 is refused for a bad part", async () => {
    const { path, prefix, v1Key } = await withVersionOne();

    await failedUpload(await upload(owner.accessToken, path, "id,name\n3,third\n", { Force: "maybe" }), 400);
    await failedUpload(
      await uploadRaw(
        owner.accessToken,
        path,
        multipartBody([
          { name: "Data", filename: "v2.csv", bytes: bytesOf("id,name\n3,third\n") },
          { name: "Data", filename: "v3.csv", bytes: bytesOf("id,name\n4,fourth\n") },
        ]),
      ),
      400,
    );

    await expectVersionOneIntact(path, prefix, v1Key);
  });

  it("should replace v1 with a valid v2, and keep v1's object until its grace period is over", async () => {
    const { path, prefix, v1Key } = await withVersionOne();
    const v2 = "id,name,score\n3,third,1.5\n";

    await uploadOk(owner.accessToken, path, v2);

    expect(text(await downloadBytes(owner.accessToken, path))).toBe(v2);
    expect(columnsOf(await schemaOf(owner.accessToken, path))).toEqual(["id:INTEGER", "name:STRING", "score:DOUBLE"]);
    const orphans = await orphansUnder(prefix);
    expect(orphans).toEqual([
      { objectKey: v1Key, reason: "replaced by a new version", deleteAfter: expect.any(String) },
    ]);
    expect(Date.parse(orphans[0]!.deleteAfter)).toBeGreaterThan(Date.now());
    const keys = await objectKeys(prefix);
    expect(keys).toHaveLength(2);
    const v2Key = keys.find((key) => key !== v1Key)!;

    await runMaintenance(env);
    expect(await env.BUCKET.head(v1Key)).not.toBeNull();

    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.parse(orphans[0]!.deleteAfter) + 1000);
    await runMaintenance(env);
    vi.useRealTimers();

    expect(await env.BUCKET.head(v1Key)).toBeNull();
    expect(await orphansUnder(prefix)).toEqual([]);
    expect(await objectKeys(prefix)).toEqual([v2Key]);
    expect(text(await downloadBytes(owner.accessToken, path))).toBe(v2);
  });
});

describe("large files", () => {
  function largeCsv(minBytes: number): Uint8Array<ArrayBuffer> {
    const rows = ["id,label,amount,day"];
    let size = rows[0]!.length + 1;
    for (let i = 0; size <= minBytes; i++) {
      const row = `${i},label number ${i},${(i * 1.25).toFixed(2)},2024-01-${String((i % 28) + 1).padStart(2, "0")}`;
      rows.push(row);
      size += row.length + 1;
    }
    return bytesOf(`${rows.join("\n")}\n`);
  }

  it("should store a file larger than one R2 part and serve it back byte for byte", async () => {
    const dataset = await freshDataset();
    const csv = largeCsv(PART_SIZE + 1024 * 1024);
    expect(csv.length).toBeGreaterThan(PART_SIZE);

    const message = await uploadOk(owner.accessToken, `${dataset}/large.csv`, csv);

    expect(message).toContain(`, 4 columns, ${csv.length} bytes.`);
    const downloaded = await downloadBytes(owner.accessToken, `${dataset}/large.csv`);
    expect(downloaded.length).toBe(csv.length);
    expect(await sha256(new Uint8Array(downloaded))).toBe(await sha256(csv));
    expect(columnsOf(await schemaOf(owner.accessToken, `${dataset}/large.csv`))).toEqual([
      "id:INTEGER",
      "label:STRING",
      "amount:DOUBLE",
      "day:DATE",
    ]);
    const keys = await objectKeys(await dataPrefix(dataset));
    expect(keys).toHaveLength(1);
    expect((await env.BUCKET.head(keys[0]!))!.size).toBe(csv.length);
  });

  it("should keep nothing of a large file whose body breaks off after the first R2 part", async () => {
    const dataset = await freshDataset();
    const csv = largeCsv(PART_SIZE + 2 * 1024 * 1024);
    const body = multipartBody([{ name: "Data", filename: "large.csv", bytes: csv }]);
    const [account, name] = dataset.split("/") as [string, string];

    await failedUpload(
      await uploadRaw(owner.accessToken, `${dataset}/large.csv`, body.slice(0, PART_SIZE + 1024 * 1024)),
      400,
    );

    expect(await dataItemRow(account, name, "large.csv")).toBeNull();
    expect(await objectKeys(await dataPrefix(dataset))).toEqual([]);
    expect(await orphansUnder(await dataPrefix(dataset))).toEqual([]);
  });
});

import { env } from "cloudflare:workers";
import { call, ORIGIN, readEnvelope, worker, type Fetch } from "./http";
import { authHeader } from "./login";

/** Dataset settings as the experimental PUT takes them (docs/api.md). */
export interface DatasetSettingsBody {
  Visibility?: "private" | "public";
  Description?: string;
}

/** The optional text parts of an upload (interface §2.8); `Force` is ForceGenerateTableDefinition. */
export interface UploadParts {
  Schema?: string;
  Force?: string;
}

/** The stored DataSchema as the schema endpoint returns it (docs/api.md). */
export interface StoredSchema {
  SchemaVersion: string;
  TableDefinition: {
    Columns: {
      Name: string;
      DataType: { DataType: string; DataTypeOptions: { Nullable: boolean; StoredAs?: string } };
    }[];
  };
  DataSpecification: {
    FormatType: string;
    DeliveryType: string;
    DataOptions: { Header: boolean; Delimiter: string };
  };
}

/** A name nobody else in the run uses, so tests never see each other's datasets. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

/** PUT /v1/dataset/{account}/{name}, with an optional JSON body (a string is sent as it is). */
export function putDataset(
  token: string,
  account: string,
  name: string,
  settings?: DatasetSettingsBody | string,
  via: Fetch = worker,
): Promise<Response> {
  const headers = new Headers(authHeader(token));
  let body: string | undefined;
  if (settings !== undefined) {
    headers.set("content-type", "application/json");
    body = typeof settings === "string" ? settings : JSON.stringify(settings);
  }
  return call(`/v1/dataset/${account}/${name}`, { method: "PUT", headers, body }, via);
}

/** Creates a dataset and checks that it was created (201). */
export async function createDataset(
  token: string,
  account: string,
  name: string,
  settings?: DatasetSettingsBody,
): Promise<void> {
  await readEnvelope(await putDataset(token, account, name, settings), 201);
}

/** PUT a grant on a dataset for another account. */
export function grant(
  token: string,
  account: string,
  dataset: string,
  grantee: string,
  permission: string,
): Promise<Response> {
  return call(`/v1/dataset/${account}/${dataset}/grants/${grantee}`, {
    method: "PUT",
    headers: { ...authHeader(token), "content-type": "application/json" },
    body: JSON.stringify({ Permission: permission }),
  });
}

/** The text of a CSV file as UTF-8 bytes. */
export function bytesOf(text: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(new TextEncoder().encode(text));
}

/** Gzips bytes with the platform's CompressionStream. */
export async function gzip(data: string | Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
  const input = typeof data === "string" ? bytesOf(data) : data;
  const stream = new Blob([input]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/**
 * POSTs a real multipart/form-data upload to /v1/data/{path}: the Schema and
 * ForceGenerateTableDefinition parts first when given, then the Data file.
 */
export function upload(
  token: string,
  path: string,
  csv: string | Uint8Array<ArrayBuffer>,
  parts: UploadParts = {},
  filename = "data.csv",
  via: Fetch = worker,
): Promise<Response> {
  const form = new FormData();
  if (parts.Schema !== undefined) form.append("Schema", parts.Schema);
  if (parts.Force !== undefined) form.append("ForceGenerateTableDefinition", parts.Force);
  form.append("Data", new File([typeof csv === "string" ? bytesOf(csv) : csv], filename));
  return call(`/v1/data/${path}`, { method: "POST", headers: authHeader(token), body: form }, via);
}

/** Uploads and checks that the file was registered (200); returns the envelope's message. */
export async function uploadOk(
  token: string,
  path: string,
  csv: string | Uint8Array<ArrayBuffer>,
  parts: UploadParts = {},
  filename = "data.csv",
): Promise<string> {
  return (await readEnvelope(await upload(token, path, csv, parts, filename), 200)).Status.Message;
}

/** One part of a hand-built multipart body: a text field, or a file when it has a filename. */
export type RawPart = { name: string; value: string } | { name: string; filename: string; bytes: Uint8Array };

export const BOUNDARY = "dqs-test-boundary-7MA4YWxkTrZu0gW";

/** A multipart/form-data body built byte by byte, for bodies FormData cannot produce (order, extra files, truncation). */
export function multipartBody(parts: RawPart[], boundary = BOUNDARY): Uint8Array<ArrayBuffer> {
  const chunks: Uint8Array[] = [];
  for (const part of parts) {
    const disposition =
      "filename" in part
        ? `form-data; name="${part.name}"; filename="${part.filename}"\r\nContent-Type: application/octet-stream`
        : `form-data; name="${part.name}"`;
    chunks.push(bytesOf(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n\r\n`));
    chunks.push("filename" in part ? part.bytes : bytesOf(part.value));
    chunks.push(bytesOf("\r\n"));
  }
  chunks.push(bytesOf(`--${boundary}--\r\n`));
  const body = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.length;
  }
  return body;
}

/** POSTs a hand-built multipart body (or any body with any content type) to /v1/data/{path}. */
export function uploadRaw(
  token: string,
  path: string,
  body: BodyInit,
  contentType = `multipart/form-data; boundary=${BOUNDARY}`,
  via: Fetch = worker,
): Promise<Response> {
  return call(
    `/v1/data/${path}`,
    { method: "POST", headers: { ...authHeader(token), "content-type": contentType }, body },
    via,
  );
}

/** GET .../rawdata: the 302's Location, checked to be a redirect. */
export async function downloadLocation(token: string, path: string): Promise<string> {
  const response = await call(`/v1/data/${path}/rawdata`, { headers: authHeader(token) });
  if (response.status !== 302)
    throw new Error(`GET /v1/data/${path}/rawdata answered ${response.status}: ${await response.text()}`);
  return response.headers.get("location") ?? "";
}

/** Follows a download URL as a client does after a redirect: no Authorization header. */
export function followDownload(location: string, init: RequestInit = {}): Promise<Response> {
  return worker(new Request(location, { redirect: "manual", ...init }));
}

/** The raw bytes of a data item, through the redirect. */
export async function downloadBytes(token: string, path: string): Promise<Uint8Array> {
  const response = await followDownload(await downloadLocation(token, path));
  if (response.status !== 200) throw new Error(`the download answered ${response.status}: ${await response.text()}`);
  return new Uint8Array(await response.arrayBuffer());
}

/** The schema string the schema endpoint returns, parsed. */
export async function schemaOf(token: string, path: string): Promise<StoredSchema> {
  const body = await readEnvelope<{ Schema: string }>(
    await call(`/v1/data/${path}/metadata/schema`, { headers: authHeader(token) }),
    200,
  );
  return JSON.parse(body.Data.Schema) as StoredSchema;
}

/** Column names and types of a stored schema, as `name:TYPE`. */
export function columnsOf(schema: StoredSchema): string[] {
  return schema.TableDefinition.Columns.map((column) => `${column.Name}:${column.DataType.DataType}`);
}

/** The id D1 gives a dataset, for looking at its R2 objects and rows. */
export async function datasetId(account: string, dataset: string): Promise<string> {
  const row = await env.DB.prepare(
    "SELECT d.id FROM datasets d JOIN accounts a ON a.id = d.account_id WHERE a.name = ? AND d.name = ?",
  )
    .bind(account, dataset)
    .first<{ id: string }>();
  if (!row) throw new Error(`no dataset ${account}/${dataset} in D1`);
  return row.id;
}

/** Every R2 key under a prefix. */
export async function objectKeys(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.BUCKET.list({ prefix, cursor });
    keys.push(...page.objects.map((object) => object.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return keys.sort();
}

/** The orphan_objects rows whose key starts with a prefix. */
export async function orphansUnder(
  prefix: string,
): Promise<{ objectKey: string; reason: string; deleteAfter: string }[]> {
  const { results } = await env.DB.prepare(
    `SELECT object_key AS objectKey, reason, delete_after AS deleteAfter FROM orphan_objects
     WHERE substr(object_key, 1, length(?)) = ? ORDER BY object_key`,
  )
    .bind(prefix, prefix)
    .all<{ objectKey: string; reason: string; deleteAfter: string }>();
  return results;
}

/** The data_items row of a data item, or null. */
export async function dataItemRow(
  account: string,
  dataset: string,
  data: string,
): Promise<{ objectKey: string; version: string; rowCount: number; size: number } | null> {
  return env.DB.prepare(
    `SELECT i.object_key AS objectKey, i.version, i.row_count AS rowCount, i.size
     FROM data_items i JOIN datasets d ON d.id = i.dataset_id JOIN accounts a ON a.id = d.account_id
     WHERE a.name = ? AND d.name = ? AND i.name = ?`,
  )
    .bind(account, dataset, data)
    .first();
}

/** Lets every orphan become due now, as if its grace period had passed. */
export async function makeOrphansDue(prefix: string): Promise<void> {
  await env.DB.prepare(
    "UPDATE orphan_objects SET delete_after = '2000-01-01T00:00:00Z' WHERE substr(object_key, 1, length(?)) = ?",
  )
    .bind(prefix, prefix)
    .run();
}

/** A URL on the service's origin. */
export function serviceUrl(path: string): URL {
  return new URL(path, ORIGIN);
}

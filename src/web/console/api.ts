import createClient from "openapi-fetch";
import type { components, paths } from "../../sdk/openapi-types";

export type CatalogEntry = components["schemas"]["CatalogEntry"];
export type DataInfo = components["schemas"]["DataInfo"];
export type GrantInfo = components["schemas"]["GrantInfo"];
export type QueryStatus = components["schemas"]["QueryStatus"];
export type DataStorage = components["schemas"]["DataStorageResponse"]["Data"];

/**
 * Sent with every request: the service refuses a cookie-authenticated change
 * without it (CSRF protection; the browser adds Origin itself).
 */
const CONSOLE_HEADERS = { "X-Dqs-Console": "1" };

/** The API, typed by the SDK's generated wire types; the session cookie goes along (same origin). */
export const api = createClient<paths>({
  baseUrl: `${location.origin}/v1`,
  headers: CONSOLE_HEADERS,
  credentials: "same-origin",
});

/** An error answer: its status and the envelope's message, which is written for a person to act on. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

let signedOutListener: (message: string) => void = () => {};

/** Who hears that the session has ended (a 401 from any call): the app, which shows the sign-in screen. */
export function onSignedOut(listener: (message: string) => void): void {
  signedOutListener = listener;
}

function errorOf(response: Response, body: unknown): ApiError {
  const message =
    (body as { Status?: { Message?: string } } | undefined)?.Status?.Message ??
    `The service answered ${response.status} ${response.statusText}.`;
  if (response.status === 401) signedOutListener(message);
  return new ApiError(response.status, message);
}

/** The body of a successful call; an error answer throws ApiError with the envelope's message. */
export async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: Awaited<typeof call>;
  try {
    result = await call;
  } catch {
    throw new ApiError(0, "The service could not be reached; check the connection and try again.");
  }
  if (result.response.ok && result.data !== undefined) return result.data;
  throw errorOf(result.response, result.error);
}

/** GET /console/session: the account signed in, or null when nobody is (a 200 either way). */
export async function currentAccount(): Promise<string | null> {
  const response = await fetch("/console/session", { headers: CONSOLE_HEADERS, credentials: "same-origin" });
  const body = (await response.json()) as { Data?: { AccountName: string | null }; Status?: { Message: string } };
  if (!response.ok || !body.Data) throw errorOf(response, body);
  return body.Data.AccountName;
}

/** POST /console/sign-out: the service revokes the session and clears the cookie. */
export async function signOut(): Promise<void> {
  const response = await fetch("/console/sign-out", {
    method: "POST",
    headers: CONSOLE_HEADERS,
    credentials: "same-origin",
  });
  if (!response.ok) throw errorOf(response, await response.json().catch(() => undefined));
}

/** What this deployment's API offers beyond version 1, read from its own OpenAPI document. */
export interface Capabilities {
  /** GET /query/{QueryId}/results/rows (JSON rows by the page). */
  rows: boolean;
  /** The result formats of GET /query/{QueryId}/results/rawdata?format=…; ["csv"] without the parameter. */
  formats: string[];
}

let capabilities: Promise<Capabilities> | null = null;

/** The API's capabilities, read once. */
export function apiCapabilities(): Promise<Capabilities> {
  capabilities ??= (async () => {
    const doc = (await (await fetch("/v1/openapi.json")).json()) as {
      paths: Record<string, Record<string, { parameters?: { name: string; schema?: { enum?: string[] } }[] }>>;
    };
    const rawdata = doc.paths["/query/{QueryId}/results/rawdata"]?.get;
    const format = rawdata?.parameters?.find((parameter) => parameter.name === "format");
    return {
      rows: "/query/{QueryId}/results/rows" in doc.paths,
      formats: format?.schema?.enum ?? ["csv"],
    };
  })().catch(() => ({ rows: false, formats: ["csv"] }));
  return capabilities;
}

/** The path of a data item's API resource, each name encoded. */
export function dataPath(account: string, dataset: string, item: string): string {
  return [account, dataset, item].map(encodeURIComponent).join("/");
}

/** What an upload sends beside the file: a declared schema (DataSchema JSON), or the service infers one. */
export type UploadSchema = { kind: "infer" } | { kind: "declared"; schema: string };

/**
 * Uploads a file with XMLHttpRequest, the one browser API that reports upload
 * progress; resolves with the service's message, rejects with ApiError (its
 * refusal, with row, column and value) or an AbortError.
 */
export function uploadFile(
  target: { account: string; dataset: string; item: string },
  file: File,
  schema: UploadSchema,
  onProgress: (sent: number, total: number) => void,
  signal: AbortSignal,
): Promise<string> {
  const form = new FormData();
  // The service reads Schema before Data (it checks the file as it streams); without one it infers the columns.
  if (schema.kind === "declared") form.append("Schema", schema.schema);
  form.append("Data", file, file.name);
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/v1/data/${dataPath(target.account, target.dataset, target.item)}`);
    for (const [name, value] of Object.entries(CONSOLE_HEADERS)) xhr.setRequestHeader(name, value);
    xhr.responseType = "json";
    xhr.upload.onprogress = (event) => onProgress(event.loaded, event.lengthComputable ? event.total : file.size);
    xhr.onload = () => {
      const body = xhr.response as { Status?: { Message?: string } } | null;
      if (xhr.status >= 200 && xhr.status < 300) resolve(body?.Status?.Message ?? "Uploaded.");
      else reject(errorOf(new Response(null, { status: xhr.status, statusText: xhr.statusText }), body));
    };
    xhr.onerror = () => reject(new ApiError(0, "The upload could not reach the service; check the connection."));
    xhr.onabort = () => reject(new DOMException("The upload was cancelled.", "AbortError"));
    signal.addEventListener("abort", () => xhr.abort(), { once: true });
    xhr.send(form);
  });
}

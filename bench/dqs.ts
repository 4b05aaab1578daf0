/** The service's HTTP API, as a client uses it: login, dataset, multipart upload, query. */
import { createReadStream, statSync } from "node:fs";
import { request } from "node:http";
import { basename } from "node:path";

/** Logs in (see `loginTokens`) and returns the access token. */
export async function login(baseUrl: string, username: string): Promise<string> {
  return (await loginTokens(baseUrl, username)).AccessToken;
}

/**
 * Logs in through the development identity provider, as a `curl` with a
 * cookie jar would: GET /v1/auth → POST /idp/authorize with the username →
 * the callback with Accept: application/json → when it answers 401 (terms
 * not accepted yet) POST /v1/auth/terms. Returns the session's tokens.
 */
export async function loginTokens(
  baseUrl: string,
  username: string,
): Promise<{ AccessToken: string; RefreshToken: string }> {
  const jar = new Map<string, string>();
  const step = async (url: string, init: RequestInit = {}) => {
    const response = await fetch(new URL(url, baseUrl), {
      ...init,
      redirect: "manual",
      headers: {
        ...(init.headers as Record<string, string>),
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; "),
      },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const at = pair.indexOf("=");
      if (at > 0) jar.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    return response;
  };
  const location = (response: Response, what: string) => {
    const to = response.headers.get("location");
    if (!to) throw new Error(`login: ${what} answered ${response.status} without a redirect`);
    return to;
  };

  const start = await step("/v1/auth");
  const authorize = new URL(location(start, "/v1/auth"), baseUrl);
  const form = new URLSearchParams(authorize.searchParams);
  form.set("username", username);
  const signedIn = await step("/idp/authorize", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: form,
  });
  let tokens = await step(location(signedIn, "/idp/authorize"), { headers: { accept: "application/json" } });
  if (tokens.status === 401) {
    tokens = await step("/v1/auth/terms", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams({ state: jar.get("dqs_login") ?? "", accept: "yes" }),
    });
  }
  if (tokens.status !== 200) throw new Error(`login failed: ${tokens.status} ${await tokens.text()}`);
  const body = (await tokens.json()) as { Data: { AccessToken: string; RefreshToken: string } };
  return body.Data;
}

export class Client {
  readonly baseUrl: string;
  readonly token: string;

  constructor(baseUrl: string, token: string) {
    this.baseUrl = baseUrl;
    this.token = token;
  }

  private get auth() {
    return { authorization: `Bearer ${this.token}` };
  }

  async createDataset(account: string, dataset: string): Promise<void> {
    const response = await fetch(`${this.baseUrl}/v1/dataset/${account}/${dataset}`, {
      method: "PUT",
      headers: this.auth,
    });
    if (response.status !== 200 && response.status !== 201)
      throw new Error(`creating dataset ${account}/${dataset}: ${response.status} ${await response.text()}`);
  }

  /** Gives `grantee` (an account that has logged in once) read or write access to a dataset. */
  async grant(account: string, dataset: string, grantee: string, permission: "read" | "write"): Promise<void> {
    const response = await fetch(`${this.baseUrl}/v1/dataset/${account}/${dataset}/grants/${grantee}`, {
      method: "PUT",
      headers: { ...this.auth, "content-type": "application/json" },
      body: JSON.stringify({ Permission: permission }),
    });
    if (response.status !== 200)
      throw new Error(
        `granting ${grantee} ${permission} on ${account}/${dataset}: ${response.status} ${await response.text()}`,
      );
  }

  /**
   * Uploads a file through the multipart endpoint, streamed from disk (the
   * bench never holds it whole) with a Content-Length, as `curl -F` sends it.
   */
  async upload(
    account: string,
    dataset: string,
    dataName: string,
    path: string,
  ): Promise<{ status: number; message: string; seconds: number }> {
    return postMultipart(new URL(`${this.baseUrl}/v1/data/${account}/${dataset}/${dataName}`), path, this.auth);
  }

  /**
   * Polls the experimental storage endpoint until the data item is
   * query-ready (QueryReady: its column images, or its table store, built),
   * every 100 ms; a table store that failed ends the wait. `seconds` runs from the
   * call, which the bench makes as soon as the upload answered.
   */
  async waitQueryReady(
    account: string,
    dataset: string,
    dataName: string,
    timeoutMs = 300_000,
  ): Promise<{ ready: boolean; seconds: number; imageBytes: number[] | null; tableStore: TableStoreInfo | null }> {
    const started = performance.now();
    for (;;) {
      const response = await fetch(`${this.baseUrl}/v1/data/${account}/${dataset}/${dataName}/metadata/storage`, {
        headers: this.auth,
      });
      const seconds = (performance.now() - started) / 1000;
      if (response.status !== 200)
        throw new Error(`storage of ${dataName}: ${response.status} ${await response.text()}`);
      const body = (await response.json()) as {
        Data: { QueryReady: boolean; ColumnImageBytes: number[] | null; TableStore?: TableStoreInfo | null };
      };
      const tableStore = body.Data.TableStore ?? null;
      if (body.Data.QueryReady) return { ready: true, seconds, imageBytes: body.Data.ColumnImageBytes, tableStore };
      // A store that failed to build never becomes ready: no point waiting for it.
      if (seconds * 1000 > timeoutMs || tableStore?.State === "failed")
        return { ready: false, seconds, imageBytes: null, tableStore };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /**
   * Submits `sql`, waits for it to end (Prefer: wait on the submit, then
   * polling the status), and downloads the result through the 302 with no
   * token. `seconds` runs from just before the submit to the last byte of
   * the result (or to the moment the failure is known). It runs the query
   * (`Reuse: false`) unless `reuse` is true: the bench times the engines, and
   * an identical earlier query's result would answer it otherwise.
   */
  async query(sql: string, options: { pollMs?: number; timeoutMs?: number; reuse?: boolean } = {}): Promise<QueryRun> {
    const pollMs = options.pollMs ?? 50;
    const timeoutMs = options.timeoutMs ?? 300_000;
    const started = performance.now();
    const elapsed = () => (performance.now() - started) / 1000;
    /** Answers that were not the service's JSON (e.g. workerd's plain-text page when the isolate died). */
    const oddities: string[] = [];
    const note = (what: string, answer: Answer) => {
      if (oddities.length < 5) oddities.push(`${what} answered ${answer.status}: ${answer.text.slice(0, 200).trim()}`);
    };
    const withNotes = (message: string) => (oddities.length ? `${message} [${oddities.join(" | ")}]` : message);

    const submitted = await jsonAnswer(
      fetch(`${this.baseUrl}/v1/query`, {
        method: "POST",
        headers: { ...this.auth, "content-type": "application/json", prefer: "wait=30" },
        body: JSON.stringify({ Sql: sql, Reuse: options.reuse ?? false }),
      }),
    );
    const submitSeconds = elapsed();
    const queryId = (submitted.json?.Data as { QueryId?: string } | undefined)?.QueryId;
    if (submitted.status !== 200 || !queryId) {
      note("submit", submitted);
      return { ok: false, message: withNotes(`submit failed`), seconds: elapsed() };
    }

    let status: QueryStatus | undefined;
    for (;;) {
      const answer = await jsonAnswer(fetch(`${this.baseUrl}/v1/query/${queryId}/status`, { headers: this.auth }));
      const data = answer.json?.Data as QueryStatus | undefined;
      if (answer.status === 200 && data) {
        status = data;
        if (data.Status === "succeeded" || data.Status === "failed" || data.Status === "cancelled") break;
      } else note("status", answer); // The isolate may be restarting: keep asking until the time-out.
      if (performance.now() - started > timeoutMs)
        return {
          ok: false,
          queryId,
          status,
          message: withNotes(
            `the bench gave up after ${timeoutMs / 1000} s; the query was still ${status?.Status ?? "unknown"}: ${status?.Message ?? ""}`,
          ),
          seconds: elapsed(),
        };
      await new Promise((r) => setTimeout(r, pollMs));
    }
    if (status.Status !== "succeeded") {
      const message = /^(failed|cancelled)/i.test(status.Message)
        ? status.Message
        : `${status.Status}: ${status.Message}`;
      return { ok: false, queryId, status, message: withNotes(message), seconds: elapsed() };
    }

    const redirect = await fetch(`${this.baseUrl}/v1/query/${queryId}/results/rawdata`, {
      headers: this.auth,
      redirect: "manual",
    });
    const to = redirect.headers.get("location");
    if (redirect.status !== 302 || !to)
      return {
        ok: false,
        queryId,
        status,
        message: withNotes(`rawdata answered ${redirect.status}: ${(await redirect.text()).slice(0, 200)}`),
        seconds: elapsed(),
      };
    // The download URL is signed: no bearer token.
    const download = await fetch(new URL(to, this.baseUrl));
    const csv = await download.text();
    const seconds = elapsed();
    if (download.status !== 200)
      return {
        ok: false,
        queryId,
        status,
        message: withNotes(`download answered ${download.status}: ${csv.slice(0, 200)}`),
        seconds,
      };
    return { ok: true, queryId, status, csv, seconds, submitSeconds, notes: oddities };
  }
}

/**
 * POSTs a file as one multipart/form-data part named `Data`, streamed from
 * disk in 256 KiB reads, with a Content-Length; `seconds` runs from the
 * request's start to the end of the response. dqs's upload and the upload
 * floor's Worker get the very same bytes this way.
 */
export function postMultipart(
  url: URL,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; message: string; seconds: number }> {
  const boundary = `----dqs-bench-${Math.random().toString(16).slice(2)}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="Data"; filename="${basename(path)}"\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const length = head.byteLength + statSync(path).size + tail.byteLength;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        headers: {
          ...headers,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-length": String(length),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => {
          const seconds = (performance.now() - started) / 1000;
          let message = text;
          try {
            message = (JSON.parse(text) as { Message?: string }).Message ?? text;
          } catch {
            // not JSON
          }
          resolve({ status: res.statusCode ?? 0, message, seconds });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.write(head);
    const file = createReadStream(path, { highWaterMark: 256 * 1024 });
    file.on("error", (error) => req.destroy(error));
    file.on("end", () => req.end(tail));
    file.pipe(req, { end: false });
  });
}

export interface Answer {
  status: number;
  text: string;
  json: { Message?: string; Data?: unknown } | null;
  retryAfter: string | null;
}

/** A response read as text, and as JSON when it is JSON; a network error is status 0. */
export async function jsonAnswer(pending: Promise<Response>): Promise<Answer> {
  try {
    const response = await pending;
    const text = await response.text();
    let json: Answer["json"] = null;
    try {
      json = JSON.parse(text) as Answer["json"];
    } catch {
      json = null;
    }
    return { status: response.status, text, json, retryAfter: response.headers.get("retry-after") };
  } catch (error) {
    return {
      status: 0,
      text: error instanceof Error ? `${error.message} ${String(error.cause ?? "")}` : String(error),
      json: null,
      retryAfter: null,
    };
  }
}

export interface QueryStatus {
  QueryId: string;
  Status: "queued" | "running" | "succeeded" | "failed" | "cancelled";
  Message: string;
  Size: number;
  RowCount: number | null;
  BytesLoaded: number | null;
  PeakMemoryBytes: number | null;
  Timings: { QueueWaitMs: number; LoadMs: number; ExecuteMs: number; WriteMs: number } | null;
  /** Which engine ran it (null until it ran, and for a reused result; absent before issue 12). */
  Engine?: "sqljs" | "store" | null;
  /** It answered from an identical earlier query's result (absent before issue 13). */
  Reused?: boolean;
}

/** The storage endpoint's `TableStore` (issue 12): null for a version without one. */
export interface TableStoreInfo {
  State: "building" | "ready" | "failed";
  Rows: number | null;
  Bytes: number | null;
  Message: string | null;
}

export type QueryRun =
  | {
      ok: true;
      queryId: string;
      status: QueryStatus;
      csv: string;
      seconds: number;
      /** Until the submit's answer (Prefer: wait included). */
      submitSeconds: number;
      notes: string[];
    }
  | { ok: false; queryId?: string; status?: QueryStatus; message: string; seconds: number };

/**
 * `npm run bench -- --pages`: result pages and formats (issue 13), on their
 * own. One file is uploaded (default the 1M-row one) and `SELECT * … ORDER BY
 * id` run over it, so the result has as many rows as the file. Then:
 * - the rows endpoint: page 1 and page N (default 900, 1,000 rows a page),
 *   each asked for `repeats` times (median, min–max): the row index should
 *   make page N cost what page 1 does;
 * - each format (NDJSON, Parquet, Arrow): its first request, which makes the
 *   file from the CSV, and a second one, which finds it made; both followed
 *   to the last byte of the download.
 * See bench/README.md ("Result pages and formats").
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client, login } from "./dqs.ts";
import { prepareData, type FileLabel } from "./generate.ts";
import { ROOT, startWranglerDev, type DevServer } from "./server.ts";

const ACCOUNT = "bench";
const DATASET = "pages";
const PAGE_ROWS = 1000;
/** Pages of this many rows carry the bench to page N's cursor quickly (the service's largest). */
const STRIDE_ROWS = 10_000;
const FORMATS = ["ndjson", "parquet", "arrow"] as const;

export interface PagesOptions {
  file: FileLabel;
  page: number;
  repeats: number;
  vars: Record<string, string>;
  out: string;
}

interface Spread {
  median: number;
  min: number;
  max: number;
}

interface PagesReport {
  date: string;
  file: FileLabel;
  rows: number;
  resultBytes: number;
  querySeconds: number;
  engine: string | null;
  page: number;
  repeats: number;
  firstPage: Spread;
  pageN: Spread;
  pageNFirstId: unknown;
  pageNExpectedId: number;
  /** Per format: the first request's redirect (the file made) and its download, then the same again (kept). */
  formats: {
    format: string;
    bytes: number;
    firstSeconds: number;
    firstRedirectSeconds: number;
    againSeconds: number;
    againRedirectSeconds: number;
  }[];
}

function spread(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)]!, min: sorted[0]!, max: sorted.at(-1)! };
}

interface RowsPage {
  Rows: unknown[][];
  RowCount: number;
  NextCursor: string | null;
}

export async function runPagesBench(options: PagesOptions, log: (line: string) => void): Promise<void> {
  const [file] = await prepareData(join(ROOT, "bench/data"), log, [options.file]);
  if (!file) throw new Error(`no file ${options.file}`);
  if ((options.page - 1) * PAGE_ROWS >= file.rows)
    throw new Error(`page ${options.page} is beyond the ${file.rows} rows of ${file.label}`);
  let server: DevServer | null = null;
  try {
    log("starting wrangler dev (fresh state) ...");
    server = await startWranglerDev(options.vars);
    const client = new Client(server.url, await login(server.url, ACCOUNT));
    const auth = { authorization: `Bearer ${client.token}` };
    await client.createDataset(ACCOUNT, DATASET);
    const uploaded = await client.upload(ACCOUNT, DATASET, "t", file.path);
    if (uploaded.status !== 200) throw new Error(`upload failed: ${uploaded.status} ${uploaded.message}`);
    const ready = await client.waitQueryReady(ACCOUNT, DATASET, "t", 900_000);
    if (!ready.ready) throw new Error("the data item did not become query-ready");
    log(`uploaded ${file.label} in ${uploaded.seconds.toFixed(1)} s, query-ready ${ready.seconds.toFixed(1)} s later`);

    const query = await client.query(`SELECT * FROM ${ACCOUNT}.${DATASET}.t ORDER BY id`, { timeoutMs: 900_000 });
    if (!query.ok) throw new Error(`the query failed: ${query.message}`);
    log(
      `SELECT * … ORDER BY id: ${query.status.RowCount} rows, ${query.status.Size} bytes, ${query.seconds.toFixed(2)} s`,
    );
    const base = `${server.url}/v1/query/${query.queryId}/results`;

    const page = async (limit: number, cursor: string | null): Promise<{ data: RowsPage; seconds: number }> => {
      const url = `${base}/rows?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const started = performance.now();
      const response = await fetch(url, { headers: auth });
      const body = (await response.json()) as { Data: RowsPage; Status: { Message: string } };
      const seconds = (performance.now() - started) / 1000;
      if (response.status !== 200) throw new Error(`rows answered ${response.status}: ${body.Status.Message}`);
      return { data: body.Data, seconds };
    };
    const timed = async (cursor: string | null) => {
      const seconds: number[] = [];
      let data: RowsPage | null = null;
      for (let i = 0; i < options.repeats; i++) {
        const answer = await page(PAGE_ROWS, cursor);
        seconds.push(answer.seconds);
        data = answer.data;
      }
      return { data: data!, seconds: spread(seconds) };
    };

    const first = await timed(null);
    // The cursor of page N: large pages first, then pages of 1,000 rows (a cursor is opaque: only following works).
    const target = (options.page - 1) * PAGE_ROWS;
    let row = 0;
    let cursor: string | null = null;
    while (row < target) {
      const limit = target - row >= STRIDE_ROWS ? STRIDE_ROWS : PAGE_ROWS;
      const { data } = await page(limit, cursor);
      row += data.Rows.length;
      cursor = data.NextCursor;
    }
    const pageN = await timed(cursor);
    log(
      `rows: page 1 ${first.seconds.median.toFixed(3)} s, page ${options.page} ${pageN.seconds.median.toFixed(3)} s (medians of ${options.repeats})`,
    );

    const formats: PagesReport["formats"] = [];
    for (const format of FORMATS) {
      const download = async () => {
        const started = performance.now();
        const redirect = await fetch(`${base}/rawdata?format=${format}`, { headers: auth, redirect: "manual" });
        const location = redirect.headers.get("location");
        if (redirect.status !== 302 || !location)
          throw new Error(`rawdata?format=${format} answered ${redirect.status}: ${await redirect.text()}`);
        const redirectSeconds = (performance.now() - started) / 1000;
        const bytes = (await (await fetch(new URL(location, server!.url))).arrayBuffer()).byteLength;
        return { bytes, seconds: (performance.now() - started) / 1000, redirectSeconds };
      };
      const made = await download();
      const again = await download();
      formats.push({
        format,
        bytes: made.bytes,
        firstSeconds: made.seconds,
        firstRedirectSeconds: made.redirectSeconds,
        againSeconds: again.seconds,
        againRedirectSeconds: again.redirectSeconds,
      });
      log(
        `${format}: ${made.bytes} bytes; first request ${made.seconds.toFixed(2)} s (redirect after ${made.redirectSeconds.toFixed(2)} s), ` +
          `again ${again.seconds.toFixed(2)} s (redirect after ${again.redirectSeconds.toFixed(2)} s)`,
      );
    }

    const report: PagesReport = {
      date: new Date().toISOString(),
      file: file.label,
      rows: query.status.RowCount ?? 0,
      resultBytes: query.status.Size,
      querySeconds: query.seconds,
      engine: query.status.Engine ?? null,
      page: options.page,
      repeats: options.repeats,
      firstPage: first.seconds,
      pageN: pageN.seconds,
      pageNFirstId: pageN.data.Rows[0]?.[0],
      pageNExpectedId: target + 1,
      formats,
    };
    const markdown = renderPages(report);
    writeFileSync(join(ROOT, `bench/results/${options.out}.json`), JSON.stringify(report, null, 2) + "\n");
    writeFileSync(join(ROOT, `bench/results/${options.out}.md`), markdown);
    process.stdout.write(markdown);
    log(`wrote bench/results/${options.out}.md and .json`);
  } finally {
    if (server) writeFileSync(join(ROOT, "bench/data/wrangler-dev.log"), server.output());
    await server?.stop();
  }
}

function renderPages(r: PagesReport): string {
  const s = (x: Spread) => `${x.median.toFixed(3)} (${x.min.toFixed(3)}–${x.max.toFixed(3)})`;
  return [
    `**Result pages and formats, ${r.date.slice(0, 19).replace("T", " ")} UTC.** \`SELECT * … ORDER BY id\` on ${r.file}: ${r.rows} rows, ${(r.resultBytes / 1e6).toFixed(1)} MB of CSV, ${r.querySeconds.toFixed(2)} s end to end (${r.engine ?? "?"}, CSV downloaded).`,
    "",
    `| rows endpoint, ${PAGE_ROWS} rows a page | seconds: median (min–max) of ${r.repeats} | first id |`,
    "| --- | ---: | ---: |",
    `| page 1 | ${s(r.firstPage)} | 1 |`,
    `| page ${r.page} | ${s(r.pageN)} | ${String(r.pageNFirstId)} (expected ${r.pageNExpectedId}) |`,
    "",
    "| format | bytes | first request s: redirect (made from the CSV) | downloaded | again s: redirect (kept) | downloaded |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
    ...r.formats.map(
      (f) =>
        `| ${f.format} | ${f.bytes} | ${f.firstRedirectSeconds.toFixed(2)} | ${f.firstSeconds.toFixed(2)} | ` +
        `${f.againRedirectSeconds.toFixed(2)} | ${f.againSeconds.toFixed(2)} |`,
    ),
    "",
  ].join("\n");
}

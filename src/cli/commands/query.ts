import { Option, type Command } from "commander";
import { createWriteStream } from "node:fs";
import { rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { randomBytes } from "node:crypto";
import { pipeline } from "node:stream/promises";
import { Readable } from "node:stream";
import ora from "ora";
import {
  DqsQueryError,
  type DqsClient,
  type QueryParameters,
  type QueryState,
  type QueryStatus,
  type QueryValidation,
  type ResultFormat,
  type WebhookDelivery,
} from "../../sdk";
import { Context, InvalidQueryError, UsageError } from "../context";
import { bytes, details, hiddenNote, json, layoutTable, oneLine, table, terminalWidth } from "../output";
import { collectParam, parametersFrom } from "../parameters";
import { nodeStream, saveDownload } from "./data";

type Format = "csv" | "json" | "table" | "ndjson" | "parquet" | "arrow";

interface QueryCommandOptions {
  wait: boolean | string | undefined;
  reuse: boolean;
  output?: string;
  format?: Format;
  limit?: string;
  param: string[];
  callback?: string;
}

/** Rows a table shows when neither a terminal nor --limit says how many. */
const TABLE_ROWS_ELSEWHERE = 1000;
/** Lines of a screen a table leaves free: the query's summary above it, its header, the note below it, the prompt. */
const SCREEN_LINES_AROUND_TABLE = 4;

/** `dqs query` stopped waiting while the query still runs: exit code 5 (main.ts), its id in the message. */
export class QueryStillRunningError extends Error {
  override name = "QueryStillRunningError";
}

const PARAM_HELP =
  'a placeholder\'s value, repeatable: NAME=VALUE for :NAME, @NAME, $NAME, or VALUE for each ? in order; VALUE is JSON (42, 1.5, true, null, "text"), else text';

/** `dqs query`, `dqs status`, `dqs cancel`, `dqs queries`. */
export function queryCommands(program: Command): void {
  program
    .command("query")
    .argument("<sql>", "one SELECT statement; name data items as ACCOUNT.DATASET.NAME")
    .description("run SQL and print or save the result (waits for it, showing its state)")
    .option(
      "--wait [seconds]",
      "how long to wait for the query to end (default 300; 0: only submit, as --no-wait); still running then: exit code 5, with its id",
    )
    .option("--no-wait", "only submit the query and print its id")
    .option("--param <value>", PARAM_HELP, collectParam, [])
    .option("--no-reuse", "run it even if an identical earlier query's result could answer it")
    .option("-o, --output <file>", "write the result to this file")
    .option("--callback <url>", "POST a signed completion webhook to this URL when the query ends (experimental)")
    .option(
      "--limit <n>",
      `table format: show at most this many rows (default: a screenful at a terminal, else ${TABLE_ROWS_ELSEWHERE})`,
    )
    .addOption(
      new Option(
        "--format <format>",
        "csv, json, table, or ndjson, parquet, arrow (made by the service; default: table at a terminal, else csv)",
      ).choices(["csv", "json", "table", "ndjson", "parquet", "arrow"]),
    )
    .addHelpText(
      "after",
      "\nExit codes: 0 done; 4 the query failed or was cancelled (its message says why); 5 it was still running when\n--wait ran out: it goes on, follow it with dqs status QUERY_ID (or stop it with dqs cancel QUERY_ID).",
    )
    .action(async (sql: string, options: QueryCommandOptions, command: Command) =>
      query(Context.of(command), sql, options),
    );

  program
    .command("validate")
    .argument("<sql>", "one SELECT statement; name data items as ACCOUNT.DATASET.NAME")
    .description(
      "check SQL without running it: its result columns, the data it would read, the engine (experimental endpoint); exit code 4 when not valid",
    )
    .option("--param <value>", PARAM_HELP, collectParam, [])
    .action(async (sql: string, options: { param: string[] }, command: Command) => {
      const ctx = Context.of(command);
      const validation = await (await ctx.client()).validate(sql, { parameters: parametersFrom(options.param) });
      if (!validation.Valid) {
        if (ctx.json) await ctx.print(validation, () => "");
        throw new InvalidQueryError(`Not valid: ${validation.Message}`);
      }
      await ctx.print(validation, () => describeValidation(validation));
    });

  program
    .command("status")
    .argument("<query-id>")
    .description("show a query's state, message, size and timings")
    .action(async (id: string, _: unknown, command: Command) => {
      const ctx = Context.of(command);
      const status = await (await ctx.client()).queryStatus(id);
      await ctx.print(status, () => describeStatus(status));
    });

  program
    .command("cancel")
    .argument("<query-id>")
    .description("cancel a queued or running query (experimental endpoint)")
    .action(async (id: string, _: unknown, command: Command) => {
      const ctx = Context.of(command);
      const status = await (await ctx.client()).cancelQuery(id);
      await ctx.print(status, () => `Query ${status.QueryId} is ${status.Status}.\n`);
    });

  program
    .command("queries")
    .description("list your queries, newest first (experimental endpoint)")
    .option("--limit <n>", "how many (1-100)", "20")
    .option("--cursor <cursor>", "where the previous page ended")
    .action(async (options: { limit: string; cursor?: string }, command: Command) => {
      const ctx = Context.of(command);
      const limit = Number(options.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new UsageError("--limit must be 1 to 100.");
      const page = await (await ctx.client()).listQueries({ limit, cursor: options.cursor });
      await ctx.print({ Queries: page.queries, NextCursor: page.nextCursor }, () => {
        if (page.queries.length === 0) return "No queries.\n";
        const rows = page.queries.map((q) => [
          q.QueryId,
          q.Status,
          q.CreatedAt,
          q.RowCount ?? "",
          bytes(q.Size),
          oneLine(q.Sql, 50),
        ]);
        const more = page.nextCursor ? `\nMore: dqs queries --cursor ${page.nextCursor}\n` : "";
        return table(["QUERY ID", "STATUS", "CREATED", "ROWS", "SIZE", "SQL"], rows) + more;
      });
    });
}

async function query(ctx: Context, sql: string, options: QueryCommandOptions): Promise<void> {
  const client = await ctx.client();
  const parameters: QueryParameters | undefined = parametersFrom(options.param);
  const wait = typeof options.wait === "string" ? Number(options.wait) : 300;
  if (!Number.isFinite(wait) || wait < 0) throw new UsageError("--wait must be a number of seconds (0: do not wait).");
  const limit = options.limit === undefined ? undefined : Number(options.limit);
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit > 0))
    throw new UsageError("--limit must be a whole number of rows, at least 1.");
  if (options.wait === false || wait === 0) {
    const { queryId, message } = await client.submitQuery(sql, {
      idempotencyKey: crypto.randomUUID(),
      parameters,
      callback: options.callback,
      reuse: options.reuse ? undefined : false,
    });
    await ctx.print({ QueryId: queryId, Message: message }, () => `${queryId}\n`);
    return;
  }
  const format: Format =
    options.format ?? (ctx.json ? "json" : options.output || !process.stdout.isTTY ? "csv" : "table");
  if (limit !== undefined && format !== "table")
    throw new UsageError(`--limit is for the table format; ${format} holds every row (add --format table).`);
  if ((format === "parquet" || format === "arrow") && !options.output && process.stdout.isTTY)
    throw new UsageError(`--format ${format} is binary: write it to a file with -o FILE, or pipe it.`);

  const reuse = options.reuse ? undefined : false;
  let status: QueryStatus;
  try {
    status = await withSpinner((onStatus) =>
      client.runQuery(sql, { wait, onStatus, parameters, callback: options.callback, reuse }),
    );
  } catch (error) {
    if (error instanceof DqsQueryError && error.reason === "timeout") return stillRunning(ctx, error, wait);
    throw error;
  }
  if (format === "table") return printTable(ctx, client, status, options.output, limit);
  await writeResult(client, status, format, options.output);
  if (options.output)
    await ctx.note(
      `Wrote ${status.RowCount === null ? "the rows" : rowsOf(status.RowCount)} (${format}) to ${options.output}.`,
    );
}

/** The wait is over and the query goes on: says so with its id and how to follow it, then exits with code 5. */
async function stillRunning(ctx: Context, error: DqsQueryError, wait: number): Promise<never> {
  const id = error.queryId;
  const state = error.query?.Status ?? "queued or running";
  const message = `Query ${id} is still ${state} after ${wait} s; it goes on: follow it with dqs status ${id} (stop it with dqs cancel ${id}).`;
  if (ctx.json) await ctx.print({ QueryId: id, Status: error.query?.Status ?? null, Message: message }, () => "");
  throw new QueryStillRunningError(message);
}

/** Shows the query's state while it runs: a spinner at a terminal, a line per state elsewhere. */
async function withSpinner(
  run: (onStatus: (status: QueryStatus) => void) => Promise<QueryStatus>,
): Promise<QueryStatus> {
  // A terminal that reports no width (some pseudo-terminals) would make the spinner redraw without end.
  const isEnabled = process.stderr.isTTY === true && (process.stderr.columns ?? 0) > 0;
  const spinner = ora({ stream: process.stderr, text: "Submitting the query", isEnabled });
  const interactive = spinner.isEnabled;
  if (interactive) spinner.start();
  let last: QueryState | null = null;
  const started = Date.now();
  try {
    const status = await run((status) => {
      if (interactive) spinner.text = `Query ${status.QueryId} ${status.Status}: ${status.Message}`;
      // Without a terminal, a line per state while it waits; the outcome gets its own line below.
      else if (status.Status !== last && (status.Status === "queued" || status.Status === "running"))
        process.stderr.write(`- Query ${status.QueryId} ${status.Status}\n`);
      last = status.Status;
    });
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    const reused = status.Reused ? " (reused an identical earlier query's result)" : "";
    const summary = `Query ${status.QueryId} succeeded: ${status.RowCount === null ? "? rows" : rowsOf(status.RowCount)}, ${bytes(status.Size)} in ${seconds} s${reused}`;
    // At a terminal the spinner turns into a green tick; in a log, a plain one.
    if (interactive) spinner.succeed(summary);
    else process.stderr.write(`✔ ${summary}\n`);
    return status;
  } catch (error) {
    spinner.stop();
    throw error;
  }
}

async function writeResult(
  client: DqsClient,
  status: QueryStatus,
  format: Exclude<Format, "table">,
  output: string | undefined,
) {
  if (format !== "json") {
    const download = await client.queryResult(status.QueryId, format === "csv" ? undefined : format);
    // A result worth waiting for gets a progress bar; a small one would only flash it.
    if (output)
      await saveDownload(
        download,
        output,
        "Downloading the result",
        undefined,
        (download.size ?? Infinity) > 1_000_000,
      );
    else await pipeline(nodeStream(download), process.stdout, { end: false });
    return;
  }
  const { rows } = await client.queryRows(status.QueryId);
  await emit([json(rows)], output);
}

/**
 * The result's first rows as a table: a screenful at a terminal (else
 * TABLE_ROWS_ELSEWHERE, or --limit), fitted to the terminal's width; only
 * those rows are downloaded. A note on stderr says what was left out.
 */
async function printTable(
  ctx: Context,
  client: DqsClient,
  status: QueryStatus,
  output: string | undefined,
  limit: number | undefined,
): Promise<void> {
  const atTerminal = !output && process.stdout.isTTY;
  const screenful = Math.max(1, (process.stdout.rows || 24) - SCREEN_LINES_AROUND_TABLE);
  const rowsToShow = limit ?? (atTerminal ? screenful : TABLE_ROWS_ELSEWHERE);
  const { columns, names, rows, more } = await client.queryRows(status.QueryId, { limit: rowsToShow });
  if (columns.length === 0) return;
  const { layout, lines } = layoutTable(
    names,
    rows.map((row) => names.map((name) => row[name] ?? "NULL")),
    atTerminal ? terminalWidth() : undefined,
  );
  await emit(batches(lines), output);
  const notes = hiddenNote(layout);
  if (more) {
    const left = status.RowCount === null ? "More rows" : `${status.RowCount - rows.length} more rows`;
    const all = status.RowCount === null ? "" : ` (${status.RowCount} in all)`;
    await ctx.note(
      `${notes}${left} not shown${all}: show more with --limit N, or save them all with --format csv -o FILE.`,
    );
  } else if (notes) await ctx.note(notes.trimEnd());
  if (output) await ctx.note(`Wrote ${rowsOf(rows.length)} (table) to ${output}.`);
}

/** Lines joined into chunks of about 64 kB, so that neither a write per line nor one huge string is needed. */
function* batches(lines: Iterable<string>): Generator<string> {
  let chunk = "";
  for (const line of lines) {
    chunk += `${line}\n`;
    if (chunk.length >= 65_536) {
      yield chunk;
      chunk = "";
    }
  }
  if (chunk) yield chunk;
}

/** Writes text to standard output, or to a file that appears (by a rename) only once complete. */
async function emit(chunks: Iterable<string>, output: string | undefined): Promise<void> {
  if (!output) return pipeline(Readable.from(chunks), process.stdout, { end: false });
  const temporary = join(dirname(output), `.${basename(output)}.${randomBytes(4).toString("hex")}.part`);
  try {
    await pipeline(Readable.from(chunks), createWriteStream(temporary));
    await rename(temporary, output);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

function describeValidation(validation: QueryValidation): string {
  const engine = validation.Engine === "store" ? "table store" : "sql.js";
  const columns = table(
    ["COLUMN", "TYPE"],
    validation.Columns.map((column) => [column.Name, column.DataType ?? "(from the values)"]),
  );
  const items = table(
    ["DATA ITEM", "VERSION", "READS"],
    validation.DataItems.map((item) => [
      `${item.AccountName}.${item.DatasetName}.${item.DataName}`,
      item.Version,
      bytes(item.Bytes),
    ]),
  );
  return `${validation.Message}\nEngine: ${engine}\n\n${columns}${validation.DataItems.length > 0 ? `\n${items}` : ""}`;
}

function describeStatus(status: QueryStatus): string {
  const t = status.Timings;
  return details([
    ["Query", status.QueryId],
    ["Status", status.Status],
    ["Message", status.Message],
    ["SQL", oneLine(status.Sql, 200)],
    ["Parameters", status.Parameters === null ? "" : oneLine(JSON.stringify(status.Parameters), 200)],
    ["Created", status.CreatedAt],
    ["Updated", status.UpdatedAt],
    ["Rows", status.RowCount ?? ""],
    ["Size", status.Size ? `${bytes(status.Size)} (${status.Size} bytes)` : "0"],
    ["Loaded", status.BytesLoaded === null ? "" : bytes(status.BytesLoaded)],
    ["Engine", status.Engine === "store" ? "table store" : status.Engine === "sqljs" ? "sql.js" : ""],
    ["Reused", status.Reused ? "yes: the result of an identical earlier query" : "no"],
    [
      "Timings",
      t ? `queue ${t.QueueWaitMs} ms, load ${t.LoadMs} ms, execute ${t.ExecuteMs} ms, write ${t.WriteMs} ms` : "",
    ],
    ["Expires", status.ExpiresAt ?? ""],
    ["Callback", status.Callback?.Url ?? ""],
    ["Delivery", status.Callback ? describeDelivery(status.Callback.LastDelivery) : ""],
  ]);
}

/** The latest attempt to deliver the completion webhook, in a line. */
function describeDelivery(last: WebhookDelivery | null): string {
  if (!last) return "not attempted yet";
  const answer = last.StatusCode === null ? "no answer" : `HTTP ${last.StatusCode}`;
  if (last.Delivered) return `delivered at ${last.At} (attempt ${last.Attempt}, ${answer})`;
  const next = last.NextAttemptAt ? `; next attempt at ${last.NextAttemptAt}` : "; given up";
  return `attempt ${last.Attempt} failed at ${last.At}: ${last.Error ?? answer}${next}`;
}

/** "1 row", "3 rows". */
function rowsOf(n: number): string {
  return `${n} ${n === 1 ? "row" : "rows"}`;
}

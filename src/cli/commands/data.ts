import type { Command } from "commander";
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { openAsBlob } from "node:fs";
import { readFile, rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { DataSchema, Download } from "../../sdk";
import { Context, parseRef, UsageError } from "../context";
import { bytes, details, table } from "../output";
import { ByteProgress } from "../progress";
import { confirmOrRefuse } from "./datasets";

/** `dqs data ls|rm`, `dqs upload`, `dqs download`, `dqs schema`. */
export function dataCommands(program: Command): void {
  const data = program.command("data").description("the data items of a dataset");

  data
    .command("ls")
    .argument("<account/dataset>")
    .description("list the data items of a dataset")
    .action(async (ref: string, _: unknown, command: Command) => {
      const ctx = Context.of(command);
      const [account, dataset] = parseRef(ref, 2);
      const list = await (await ctx.client()).listData(account, dataset);
      await ctx.print(list, () =>
        list.length === 0
          ? "No data.\n"
          : table(
              ["NAME", "ROWS", "SIZE", "UPLOADED", "QUERY-READY"],
              list.map((d) => [d.DataName, d.RowCount, bytes(d.Size), d.UploadedAt, d.QueryReady ? "yes" : "no"]),
            ),
      );
    });

  data
    .command("rm")
    .argument("<account/dataset/name>")
    .description("delete a data item (experimental endpoint)")
    .option("-y, --yes", "do not ask for confirmation")
    .action(async (ref: string, options: { yes?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      const [account, dataset, name] = parseRef(ref, 3);
      await confirmOrRefuse(options.yes, `Delete ${account}/${dataset}/${name}?`);
      const message = await (await ctx.client()).deleteData(account, dataset, name);
      await ctx.print({ Message: message }, () => `${message}.\n`);
    });

  program
    .command("upload")
    .argument("<file>", "a CSV file, gzipped or not")
    .argument("<account/dataset/name>")
    .description("upload a CSV file as a data item (replaces one of the same name)")
    .option("--schema <file>", "a DataSchema JSON file; every row is checked against its TableDefinition")
    .option("--infer", "generate the TableDefinition from the file even if the schema has one")
    .option("--progress", "draw the progress bar even when stderr is not a terminal")
    .action(
      async (
        file: string,
        ref: string,
        options: { schema?: string; infer?: boolean; progress?: boolean },
        command: Command,
      ) => {
        const ctx = Context.of(command);
        const [account, dataset, name] = parseRef(ref, 3);
        const info = await stat(file).catch(() => null);
        if (!info?.isFile()) throw new UsageError(`${file} is not a file.`);
        const schema = options.schema === undefined ? undefined : await readSchema(options.schema);
        const client = await ctx.client();
        const progress = new ByteProgress(`Uploading ${basename(file)}`, options.progress);
        let message: string;
        try {
          // A file-backed Blob streams from disk and can be read again if the upload must be retried.
          message = await client.upload(account, dataset, name, await openAsBlob(file), {
            filename: basename(file),
            schema,
            forceGenerateTableDefinition: options.infer ? true : undefined,
            onProgress: (sent, total) => progress.update(sent, total),
          });
        } finally {
          progress.stop();
        }
        await ctx.print({ Message: message }, () => `${message}\n`);
      },
    );

  program
    .command("download")
    .argument("<account/dataset/name>")
    .description("download a data item's file, exactly as uploaded")
    .option("-o, --output <file>", "write to this file (default: standard output)")
    .option("--progress", "draw the progress bar even when stderr is not a terminal")
    .action(async (ref: string, options: { output?: string; progress?: boolean }, command: Command) => {
      const ctx = Context.of(command);
      const [account, dataset, name] = parseRef(ref, 3);
      const download = await (await ctx.client()).download(account, dataset, name);
      if (!options.output || options.output === "-") {
        await pipeline(nodeStream(download), process.stdout, { end: false });
        return;
      }
      const size = await saveDownload(download, options.output, `Downloading ${name}`, options.progress);
      await ctx.print({ File: options.output, Size: size }, () => `Saved ${options.output} (${bytes(size)}).\n`);
    });

  program
    .command("schema")
    .argument("<account/dataset/name>")
    .description("show a data item's schema (--json: the DataSchema itself)")
    .action(async (ref: string, _: unknown, command: Command) => {
      const ctx = Context.of(command);
      const [account, dataset, name] = parseRef(ref, 3);
      const schema = await (await ctx.client()).dataSchema(account, dataset, name);
      await ctx.print(schema, () => describeSchema(schema));
    });
}

async function readSchema(path: string): Promise<string> {
  const text = await readFile(path, "utf8").catch(() => {
    throw new UsageError(`Cannot read the schema file ${path}.`);
  });
  try {
    JSON.parse(text);
  } catch (error) {
    throw new UsageError(`The schema file ${path} is not JSON: ${(error as Error).message}`);
  }
  return text;
}

/** A schema for people: the format, then one line per column. */
export function describeSchema(schema: DataSchema): string {
  const spec = schema.DataSpecification ?? {};
  const options = spec.DataOptions ?? {};
  const columns = schema.TableDefinition?.Columns ?? [];
  return (
    details([
      ["Format", spec.FormatType ?? ""],
      ["Delivery", spec.DeliveryType ?? ""],
      ["Header", options.Header === false ? "no" : "yes"],
      ["Delimiter", JSON.stringify(options.Delimiter ?? ",")],
    ]) +
    "\n" +
    table(
      ["COLUMN", "TYPE", "NULLABLE"],
      columns.map((c) => [c.Name, c.DataType.DataType, c.DataType.DataTypeOptions?.Nullable === false ? "no" : "yes"]),
    )
  );
}

/** The body of a download as a Node stream. */
export function nodeStream(download: Download): Readable {
  return Readable.fromWeb(download.body as unknown as Parameters<typeof Readable.fromWeb>[0]);
}

/**
 * Writes a download to a file through a temporary file beside it, renamed
 * into place when complete, so an interrupted download never looks finished.
 */
export async function saveDownload(
  download: Download,
  path: string,
  label: string,
  always?: boolean,
  show = true,
): Promise<number> {
  const temporary = join(dirname(path), `.${basename(path)}.${randomBytes(4).toString("hex")}.part`);
  const progress = new ByteProgress(label, always, show);
  let done = 0;
  const count = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      done += chunk.byteLength;
      progress.update(done, download.size);
      callback(null, chunk);
    },
  });
  try {
    await pipeline(nodeStream(download), count, createWriteStream(temporary));
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  } finally {
    progress.stop();
  }
  return done;
}

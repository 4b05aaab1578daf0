import type { StoredDataSchema } from "../../ingest/data-schema";
import { sqlite, wasmHeapBytes } from "../sqlite";
import { ColumnImageBuilder, estimateImageBytes, planPasses } from "./column-images";
import { readStoredCsv, TransientError } from "./load-table";

/** Where a build reads the stored CSV from and puts each finished image. */
export interface ImageBuildIo {
  /** The stored bytes of the version; null when the object is gone. */
  open(): Promise<ReadableStream<Uint8Array> | null>;
  store(columnIndex: number, image: Uint8Array): Promise<void>;
}

export type ImageBuildOutcome = { ok: true; bytes: number[]; passes: number } | { ok: false; message: string };

/**
 * Builds the column images of one stored CSV (see column-images.ts). The
 * columns are built in passes over the file, as many at a time as fit half
 * of what the memory budget leaves beside the WebAssembly heap, so a wide or
 * large file never holds all its images at once; each finished image is
 * stored and freed before the next pass. Storage errors are thrown
 * (TransientError) so the caller can retry; anything else is an outcome.
 */
export async function buildColumnImages(
  schema: StoredDataSchema,
  file: { rows: number; bytes: number; name: string },
  io: ImageBuildIo,
  memoryBudgetBytes: number,
): Promise<ImageBuildOutcome> {
  const sql = await sqlite();
  const columns = schema.TableDefinition.Columns;
  const passBudget = Math.max(8 << 20, (memoryBudgetBytes - wasmHeapBytes()) / 2);
  const passes = planPasses(estimateImageBytes(schema, file.bytes, file.rows), passBudget);
  const bytes: number[] = new Array(columns.length).fill(0);

  for (const pass of passes) {
    const stream = await io.open().catch((error: unknown) => {
      throw new TransientError(`opening ${file.name} failed: ${String(error)}`);
    });
    if (!stream) return { ok: false, message: `the stored file of ${file.name} is gone` };
    const builders = pass.map((index) => new ColumnImageBuilder(sql, columns[index]!.DataType.DataType));
    // builders[0 … next-1] are finished (closed); the rest are discarded if the pass ends early.
    let next = 0;
    try {
      const held = () => wasmHeapBytes() + builders.reduce((sum, builder) => sum + builder.bytes(), 0);
      const read = await readStoredCsv(
        stream,
        { name: file.name, options: schema.DataSpecification.DataOptions },
        () => {
          const now = held();
          return now > memoryBudgetBytes
            ? `building the column images needs more than the memory budget of ${memoryBudgetBytes} bytes (held ${now})`
            : null;
        },
        (row) => {
          for (let j = 0; j < pass.length; j++) builders[j]!.add(row[pass[j]!] ?? "");
        },
      );
      if (!read.ok) return { ok: false, message: read.message };
      if (read.rows !== file.rows)
        return { ok: false, message: `${file.name} has ${read.rows} rows, the catalog says ${file.rows}` };
      // One image at a time: finished, stored, then let go.
      while (next < pass.length) {
        const j = next++;
        const image = builders[j]!.finish();
        bytes[pass[j]!] = image.byteLength;
        await io.store(pass[j]!, image).catch((error: unknown) => {
          throw new TransientError(`storing a column image of ${file.name} failed: ${String(error)}`);
        });
      }
    } finally {
      for (let j = next; j < builders.length; j++) builders[j]!.discard();
    }
  }
  return { ok: true, bytes, passes: passes.length };
}

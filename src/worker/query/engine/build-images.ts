import { retireIfGrown, sqliteInstanceFor, type SqliteInstance } from "../sqlite";
import { ColumnImageBuilder, estimateImageBytes, planPasses } from "./column-images";
import { TransientError } from "../run-limits";
import { readStoredCsv } from "../stored-csv";
import type { TableLayout } from "../table-layout";

/** Where a build reads the stored CSV from and puts each finished image. */
export interface ImageBuildIo {
  /** The stored bytes of the version; null when the object is gone. */
  open(): Promise<ReadableStream<Uint8Array> | null>;
  store(columnIndex: number, image: Uint8Array): Promise<void>;
}

export type ImageBuildOutcome = { ok: true; bytes: number[]; passes: number } | { ok: false; message: string };

/**
 * Builds the column images of one stored CSV (see column-images.ts). The
 * columns are built in passes over the file, as many at a time as are
 * estimated to fit 70% of what the memory budget leaves beside the
 * WebAssembly heap (a pass that outgrows the budget after all is redone as
 * two), so a wide or large file never holds all its images at once; each finished image is
 * stored and freed before the next pass. Storage errors are thrown
 * (TransientError) so the caller can retry; anything else is an outcome.
 * Like a query, a build that grew the heap by more than a quarter of the budget
 * retires its SQLite instance.
 */
export async function buildColumnImages(
  layout: TableLayout,
  file: { rows: number; bytes: number; name: string },
  io: ImageBuildIo,
  memoryBudgetBytes: number,
): Promise<ImageBuildOutcome> {
  const instance = await sqliteInstanceFor(memoryBudgetBytes);
  try {
    return await build(instance, layout, file, io, memoryBudgetBytes);
  } finally {
    retireIfGrown(instance, memoryBudgetBytes / 4);
  }
}

async function build(
  instance: SqliteInstance,
  layout: TableLayout,
  file: { rows: number; bytes: number; name: string },
  io: ImageBuildIo,
  memoryBudgetBytes: number,
): Promise<ImageBuildOutcome> {
  const { sql } = instance;
  const columns = layout.columns;
  const passBudget = Math.max(8 << 20, (memoryBudgetBytes - instance.heapBytes()) * 0.7);
  const pending = planPasses(estimateImageBytes(layout, file.bytes, file.rows), passBudget);
  const bytes: number[] = new Array(columns.length).fill(0);
  let passes = 0;

  for (let pass = pending.shift(); pass; pass = pending.shift()) {
    passes++;
    const stream = await io.open().catch((error: unknown) => {
      throw new TransientError(`opening ${file.name} failed: ${String(error)}`);
    });
    if (!stream) return { ok: false, message: `the stored file of ${file.name} is gone` };
    const builders = pass.map((index) => new ColumnImageBuilder(sql, columns[index]!.type));
    // builders[0 … next-1] are finished (closed); the rest are discarded if the pass ends early.
    let next = 0;
    let overBudget = false;
    try {
      // The images so far, plus the copy export() makes of the largest while the pass finishes.
      const held = () => {
        const sizes = builders.map((builder) => builder.bytes());
        return instance.heapBytes() + sizes.reduce((sum, size) => sum + size, 0) + Math.max(...sizes);
      };
      const current = pass;
      const read = await readStoredCsv(
        stream,
        { name: file.name, layout },
        () => {
          const now = held();
          if (now <= memoryBudgetBytes) return null;
          overBudget = true;
          return `building the column images needs more than the memory budget of ${memoryBudgetBytes} bytes (held ${now})`;
        },
        (row) => {
          for (let j = 0; j < current.length; j++) builders[j]!.add(row[current[j]!] ?? null);
        },
      );
      // The estimate was off: the same columns again, in two passes.
      if (!read.ok && overBudget && pass.length > 1) {
        const half = Math.ceil(pass.length / 2);
        pending.unshift(pass.slice(0, half), pass.slice(half));
        continue;
      }
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
  return { ok: true, bytes, passes };
}

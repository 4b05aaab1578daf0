import { createHash } from "node:crypto";
import type { Config } from "../config";
import { ingestCsv, type IngestResult } from "../ingest/csv-ingest";
import { startsLikeGzip } from "../ingest/upload-bytes";
import {
  completeSchema,
  parseForceGenerate,
  parseSchemaPart,
  serializeSchema,
  tableDefinitionToCheck,
  type DataSchema,
} from "../ingest/data-schema";
import { dataObjectKey } from "../storage/keys";
import { readMultipart, type MultipartFailure } from "../storage/multipart";
import { deleteOrphanNow, deleteOrphanNowIfStill, markOrphan } from "../storage/orphans";
import { R2StreamWriter } from "../storage/r2-writer";
import { randomToken } from "../util/crypto";
import { isoSeconds, nowSeconds } from "../util/time";
import type { Principal } from "./accounts";
import type { DatasetRecord } from "./access";
import { commitDataItemVersion, ORPHAN_GRACE_SECONDS } from "./datasets";

/** An upload that dies with its Worker is swept after this long. */
const UPLOAD_ABANDONED_AFTER_SECONDS = 24 * 3600;
/** The orphan reason of an upload's object until its version is recorded. */
const UPLOAD_IN_PROGRESS = "upload in progress";

export type UploadOutcome =
  | {
      ok: true;
      rowCount: number;
      size: number;
      columns: number;
      /** The names of the TIMESTAMP columns, whose stored form the upload's message gives. */
      timestampColumns: string[];
      deliveryType: "RAW" | "GZIP";
      delimiter: string;
      /** What the uploader should know about how the file was read (ingest/upload-notes.ts). */
      warnings: string[];
    }
  | { ok: false; status: 400 | 413 | 415; message: string };

interface StoredFile {
  ingest: Extract<IngestResult, { ok: true }>;
  schema: DataSchema;
  size: number;
  contentHash: string;
}

/**
 * Receives an upload (docs/api.md) in one pass over the request body: the
 * file streams to R2 under a fresh key while it is decoded, parsed and
 * checked. Only a complete, valid file becomes the data item's current
 * version; anything else deletes what was written and leaves the previous
 * version as it was.
 */
export async function uploadDataItem(
  deps: { db: D1Database; bucket: R2Bucket; config: Config },
  principal: Principal,
  dataset: DatasetRecord,
  dataName: string,
  request: { body: ReadableStream<Uint8Array> | null; contentType: string | undefined; contentLength: number | null },
): Promise<UploadOutcome> {
  const { maxUploadBytes, maxCsvBytes } = deps.config.limits;
  if (request.contentLength !== null && request.contentLength > maxUploadBytes)
    return { ok: false, status: 413, message: `The upload is larger than the limit of ${maxUploadBytes} bytes.` };

  const version = randomToken(12);
  const key = dataObjectKey(dataset.id, version);
  await markOrphan(deps.db, key, UPLOAD_IN_PROGRESS, isoSeconds(nowSeconds() + UPLOAD_ABANDONED_AFTER_SECONDS));
  let writer: R2StreamWriter | null = null;
  const discard = async () => {
    await (writer as R2StreamWriter | null)?.abort();
    await deleteOrphanNow(deps.db, deps.bucket, key);
  };

  let received: Awaited<ReturnType<typeof readMultipart<StoredFile>>>;
  try {
    received = await readMultipart<StoredFile>(
      request.body,
      request.contentType,
      { fileField: "Data", textFields: ["Schema", "ForceGenerateTableDefinition"], maxFileBytes: maxUploadBytes },
      async (fields, file): Promise<StoredFile | MultipartFailure> => {
        const schema = parseSchemaPart(fields.get("Schema") ?? "");
        if (!schema.ok) return { ok: false, status: 400, message: schema.message };
        const force = parseForceGenerate(fields.get("ForceGenerateTableDefinition") ?? "false");
        if (!force.ok) return { ok: false, status: 400, message: force.message };
        const given = schema.schema;

        const pipe = new TransformStream<Uint8Array, Uint8Array>();
        const sink = pipe.writable.getWriter();
        const parsed = ingestCsv(pipe.readable, {
          tableDefinition: tableDefinitionToCheck(given, force.value),
          dataOptions: given.DataSpecification.DataOptions,
          limits: { maxDecompressedBytes: maxCsvBytes },
        });
        const hash = createHash("sha256");
        const head: number[] = [];
        let size = 0;
        writer = new R2StreamWriter(deps.bucket, key, () => ({
          httpMetadata: { contentType: startsLikeGzip(head) ? "application/gzip" : "text/csv; charset=utf-8" },
        }));
        try {
          for await (const chunk of file.stream) {
            for (let i = 0; head.length < 2 && i < chunk.byteLength; i++) head.push(chunk[i]!);
            size += chunk.byteLength;
            hash.update(chunk);
            await writer!.write(chunk);
            await sink.write(chunk);
          }
          await sink.close();
        } catch (error) {
          // The parser stopped reading (it found a problem) or the body broke off; the parser's verdict decides.
          await sink.abort(error).catch(() => undefined);
        }
        const ingest = await parsed;
        if (!ingest.ok) return { ok: false, status: ingest.status, message: ingest.message };
        await writer.finish();
        return { ingest, schema: given, size, contentHash: hash.digest("hex") };
      },
    );
  } catch (error) {
    // Storage failed mid-upload: remove what was written (the sweep retries if this fails too), then report it.
    await discard().catch(() => undefined);
    throw error;
  }

  if (!received.ok) {
    await discard();
    return received;
  }

  const { ingest, schema, size, contentHash } = received.value;
  const now = nowSeconds();
  const commit = commitDataItemVersion(
    deps.db,
    {
      datasetId: dataset.id,
      version,
      name: dataName,
      objectKey: key,
      size,
      rowCount: ingest.rowCount,
      schema: serializeSchema(completeSchema(schema, ingest)),
      deliveryType: ingest.deliveryType,
      contentHash,
      uploadedBy: principal.userId,
    },
    isoSeconds(now),
    isoSeconds(now + ORPHAN_GRACE_SECONDS),
  );
  await commit.catch(async (error: unknown) => {
    // Not recorded (unless D1 failed only to answer): the stored file goes now rather than with the sweep.
    await deleteOrphanNowIfStill(deps.db, deps.bucket, key, UPLOAD_IN_PROGRESS).catch(() => undefined);
    throw error;
  });
  return {
    ok: true,
    rowCount: ingest.rowCount,
    size,
    columns: ingest.columns.length,
    timestampColumns: ingest.columns
      .filter((column) => column.DataType.DataType === "TIMESTAMP")
      .map((column) => column.Name),
    deliveryType: ingest.deliveryType,
    delimiter: ingest.delimiter,
    warnings: ingest.warnings,
  };
}

import type { RequestBody } from "./transport";
import type { DataSchema } from "./types";

/** What an upload sends as the file: bytes, text, a Blob (a File, `fs.openAsBlob`), or a stream. */
export type UploadData = Blob | Uint8Array | ArrayBuffer | string | ReadableStream<Uint8Array>;

export interface UploadOptions {
  /** The DataSchema, as an object or its JSON string. */
  schema?: DataSchema | string;
  /** Generate the TableDefinition from the file even when the schema has one (the `ForceGenerateTableDefinition` part). */
  forceGenerateTableDefinition?: boolean;
  /** The file name sent with the Data part (default: the data name). */
  filename?: string;
  /** The file's size in bytes, when the data is a stream: sent as Content-Length and used for progress. */
  size?: number;
  /** Called as the file's bytes are read into the request, with the bytes so far and the total when known. */
  onProgress?: (sent: number, total: number | null) => void;
}

/** A multipart/form-data body (RFC 7578) that can be built again if it is a Blob, streamed if it must be. */
export interface MultipartBody {
  contentType: string;
  contentLength: number | null;
  body: () => RequestBody;
  replayable: boolean;
}

const encoder = new TextEncoder();

/**
 * Builds the upload body by hand, with the parts in the order the service
 * reads them (Schema, ForceGenerateTableDefinition, then Data), so that the
 * file can stream: FormData would not report progress, and cannot take a
 * stream.
 */
export function uploadBody(data: UploadData, options: UploadOptions & { filename: string }): MultipartBody {
  const boundary = `dqs-${crypto.randomUUID()}`;
  let head = "";
  const field = (name: string, value: string) => {
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  };
  if (options.schema !== undefined)
    field("Schema", typeof options.schema === "string" ? options.schema : JSON.stringify(options.schema));
  if (options.forceGenerateTableDefinition !== undefined)
    field("ForceGenerateTableDefinition", String(options.forceGenerateTableDefinition));
  head +=
    `--${boundary}\r\nContent-Disposition: form-data; name="Data"; filename="${escapeFilename(options.filename)}"\r\n` +
    "Content-Type: application/octet-stream\r\n\r\n";
  const prefix = encoder.encode(head);
  const suffix = encoder.encode(`\r\n--${boundary}--\r\n`);
  const contentType = `multipart/form-data; boundary=${boundary}`;

  const blob =
    data instanceof Blob
      ? data
      : data instanceof ReadableStream
        ? null
        : new Blob([typeof data === "string" ? encoder.encode(data) : new Uint8Array(data)]);
  const fileSize = blob ? blob.size : (options.size ?? null);
  const contentLength = fileSize === null ? null : prefix.byteLength + fileSize + suffix.byteLength;

  if (blob && !options.onProgress)
    return { contentType, contentLength, body: () => new Blob([prefix, blob, suffix]), replayable: true };
  const source = () => (blob ? (blob.stream() as ReadableStream<Uint8Array>) : (data as ReadableStream<Uint8Array>));
  return {
    contentType,
    contentLength,
    body: () => framed(prefix, source(), suffix, fileSize, options.onProgress),
    replayable: blob !== null,
  };
}

/** The file stream between the multipart head and tail, counting its bytes as they are pulled. */
function framed(
  prefix: Uint8Array,
  file: ReadableStream<Uint8Array>,
  suffix: Uint8Array,
  total: number | null,
  onProgress: UploadOptions["onProgress"],
): ReadableStream<Uint8Array> {
  const reader = file.getReader();
  let sent = 0;
  let stage: "head" | "file" | "done" = "head";
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (stage === "head") {
        stage = "file";
        controller.enqueue(prefix);
        onProgress?.(0, total);
        return;
      }
      if (stage === "done") return;
      const { done, value } = await reader.read();
      if (done) {
        stage = "done";
        controller.enqueue(suffix);
        controller.close();
        return;
      }
      sent += value.byteLength;
      controller.enqueue(value);
      onProgress?.(sent, total);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/** HTML's multipart/form-data encoding of a file name: quotes and line breaks percent-encoded. */
function escapeFilename(name: string): string {
  return name.replace(/"/g, "%22").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

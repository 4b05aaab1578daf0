import busboy from "busboy";
import type { Readable } from "node:stream";

/** A multipart request could not be used; `message` says what to change. */
export type MultipartFailure = { ok: false; status: 400 | 413 | 415; message: string };

export interface FilePart {
  filename: string;
  /** The part's bytes as they arrive; the handler must read it to the end or fail. */
  stream: AsyncIterable<Uint8Array>;
}

export interface MultipartSpec {
  /** The one file part allowed. */
  fileField: string;
  /** Text parts allowed; each must come before the file part so the file can be handled as it streams. */
  textFields: readonly string[];
  maxFileBytes: number;
}

/**
 * Streams a multipart/form-data body through busboy: text parts are
 * collected, the single file part is handed to `onFile` while it arrives, and
 * nothing is ever buffered whole. The handler's result is returned only if
 * the whole body turned out well-formed with exactly one file, so the caller
 * can commit then and roll back otherwise.
 */
export async function readMultipart<T>(
  body: ReadableStream<Uint8Array> | null,
  contentType: string | undefined,
  spec: MultipartSpec,
  onFile: (fields: ReadonlyMap<string, string>, file: FilePart) => Promise<T | MultipartFailure>,
): Promise<{ ok: true; value: T } | MultipartFailure> {
  if (!contentType?.toLowerCase().startsWith("multipart/form-data"))
    return {
      ok: false,
      status: 415,
      message: `Send the upload as multipart/form-data with a '${spec.fileField}' file part.`,
    };
  if (!body)
    return { ok: false, status: 400, message: `The request has no body; send a '${spec.fileField}' file part.` };

  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { "content-type": contentType },
      // Text parts may come as file parts too (`curl -F Schema=@schema.json`).
      limits: {
        files: 1 + spec.textFields.length,
        fileSize: spec.maxFileBytes,
        fields: spec.textFields.length + 4,
        fieldSize: TEXT_PART_BYTES,
      },
      defParamCharset: "utf8",
    });
  } catch (error) {
    return { ok: false, status: 400, message: `The multipart body cannot be read: ${(error as Error).message}.` };
  }

  const fields = new Map<string, string>();
  let failure: MultipartFailure | null = null;
  let handled: Promise<T | MultipartFailure> | null = null;
  let fileSeen = false;
  let extraFiles = false;
  const fail = (status: 400 | 413, message: string) => {
    failure ??= { ok: false, status, message };
  };

  // `afterFile`: whether the part began after the file part (a text file part ends later than it begins).
  const takeField = (name: string, value: string, truncated: boolean, afterFile = fileSeen) => {
    if (name === spec.fileField)
      return fail(
        400,
        `The '${name}' part has no filename, so it is not a file; send the CSV as a file part (curl -F '${name}=@file.csv').`,
      );
    if (!spec.textFields.includes(name))
      return fail(400, `Unexpected part '${name}'; the parts are ${[...spec.textFields, spec.fileField].join(", ")}.`);
    if (afterFile) return fail(400, `Send the '${name}' part before the '${spec.fileField}' part.`);
    if (truncated) return fail(400, `The '${name}' part is longer than 1 MiB.`);
    if (fields.has(name)) return fail(400, `The '${name}' part is sent twice; send it once.`);
    fields.set(name, value);
  };
  // Text parts sent as files, read whole before the file part is handed on.
  const textFiles: Promise<void>[] = [];
  parser.on("field", (name, value, info) => takeField(name, value, info.valueTruncated));
  parser.on("file", (name, stream: Readable, info) => {
    // A body that breaks off fails the part too, maybe after its reader is gone; the parser reports it as well.
    stream.on("error", () => undefined);
    if (spec.textFields.includes(name) && !failure) {
      const afterFile = fileSeen;
      textFiles.push(readTextPart(stream).then(({ text, truncated }) => takeField(name, text, truncated, afterFile)));
      return;
    }
    if (fileSeen) extraFiles = true;
    if (name !== spec.fileField || failure || fileSeen) {
      stream.resume();
      if (!failure && !fileSeen)
        fail(400, `Unexpected file part '${name}'; send the CSV file as the '${spec.fileField}' part.`);
      return;
    }
    fileSeen = true;
    stream.once("limit", () => fail(413, `The file is larger than the upload limit of ${spec.maxFileBytes} bytes.`));
    handled = Promise.all(textFiles).then(() =>
      failure ? failure : onFile(fields, { filename: info.filename ?? "", stream: sizeChecked(stream, () => failure) }),
    );
    // If the handler gives up early, drain the rest so busboy can go on to find what follows.
    handled.finally(() => stream.resume()).catch(() => undefined);
  });
  parser.on("filesLimit", () => {
    extraFiles = true;
  });
  parser.on("fieldsLimit", () => fail(400, "Too many parts in the upload."));

  const finished = new Promise<void>((resolve, reject) => {
    parser.once("finish", resolve);
    parser.once("error", reject);
  });
  try {
    const reader = openBodyReader(body);
    for (;;) {
      const value = await reader.read();
      if (value === undefined) break;
      if (failure && (failure as MultipartFailure).status === 413) {
        await reader.cancel();
        break;
      }
      if (value.byteLength === 0) continue;
      if (!parser.write(value)) await Promise.race([once(parser, "drain"), finished]);
    }
    parser.end();
    await finished;
    await Promise.all(textFiles);
  } catch (error) {
    fail(400, `The multipart body is malformed: ${(error as Error).message}.`);
  }

  // A body that breaks off inside the file part also fails the handler's read of it; the body's failure is the answer.
  const result = handled
    ? await (handled as Promise<T | MultipartFailure>).catch((error: unknown) => {
        if (failure) return null;
        throw error;
      })
    : null;
  if (failure) return failure;
  if (extraFiles)
    return {
      ok: false,
      status: 400,
      message: `Multiple files received; send exactly one file, as the '${spec.fileField}' part.`,
    };
  if (!fileSeen || result === null)
    return {
      ok: false,
      status: 400,
      message: `No '${spec.fileField}' part: send the CSV file as a file part named '${spec.fileField}'.`,
    };
  if (isFailure(result)) return result;
  return { ok: true, value: result };
}

/** A text part's size limit, as a field or as a file. */
const TEXT_PART_BYTES = 1024 * 1024;

/** A text part sent as a file, as UTF-8 text, cut at TEXT_PART_BYTES (then `truncated`). */
async function readTextPart(stream: Readable): Promise<{ text: string; truncated: boolean }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of stream as AsyncIterable<Uint8Array>) {
    if (size + chunk.byteLength > TEXT_PART_BYTES) truncated = true;
    if (!truncated) chunks.push(chunk);
    size += chunk.byteLength;
  }
  return { text: new TextDecoder().decode(Buffer.concat(chunks)), truncated };
}

function isFailure(value: unknown): value is MultipartFailure {
  return typeof value === "object" && value !== null && (value as { ok?: unknown }).ok === false && "status" in value;
}

/**
 * Network bodies arrive in pieces of a few KiB, and every piece costs a trip through busboy's Node
 * streams and through each consumer of the file (hash, R2, parser). A byte stream (as a request body
 * is) is therefore read BYOB in pieces of at least `BODY_READ_MIN_BYTES`; any other stream is read as
 * it comes.
 */
export const BODY_READ_MIN_BYTES = 1024 * 1024;

interface BodyReader {
  /** The next piece of the body, or undefined at its end. */
  read(): Promise<Uint8Array | undefined>;
  cancel(): Promise<void>;
}

function openBodyReader(body: ReadableStream<Uint8Array>): BodyReader {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    const reader = body.getReader();
    return {
      read: async () => {
        const { value, done } = await reader.read();
        return done ? undefined : value;
      },
      cancel: () => reader.cancel(),
    };
  }
  return {
    read: async () => {
      // A fresh buffer each time (the one read into now belongs to the chunk handed on), filled whole
      // but at the body's end: a larger buffer than what is read would be zeroed for nothing.
      const { value, done } = await byob.readAtLeast(BODY_READ_MIN_BYTES, new Uint8Array(BODY_READ_MIN_BYTES));
      if (value && value.byteLength > 0) return value;
      return done ? undefined : new Uint8Array(0);
    },
    cancel: () => byob.cancel(),
  };
}

function once(emitter: busboy.Busboy, event: "drain"): Promise<void> {
  return new Promise((resolve) => emitter.once(event, () => resolve()));
}

/** The file's chunks as Uint8Array; stops with an error once the size limit was hit, so no truncated file is kept. */
async function* sizeChecked(stream: Readable, failed: () => MultipartFailure | null): AsyncIterable<Uint8Array> {
  // A handler that stops early must not destroy the part: busboy would wait for it forever. It is drained instead.
  for await (const chunk of stream.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    if (failed()) throw new Error(failed()!.message);
    yield new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  }
  if ((stream as Readable & { truncated?: boolean }).truncated) throw new Error("file too large");
}

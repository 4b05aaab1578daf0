import { Gunzip } from "fflate";
import { CRC32_START, crc32Value, updateCrc32 } from "./crc32";
import type { DeliveryType } from "./data-schema";

/**
 * The bytes of an uploaded file as CSV bytes: gunzipped when the file
 * starts with the gzip magic number (docs/api.md: by content, not name).
 *
 * Gunzip is fflate's, not the platform's DecompressionStream: workerd's
 * DecompressionStream has no backpressure (each write inflates all of its
 * input into an internal buffer however slowly the output is read), so a
 * small gzip bomb would fill the isolate's memory before any size check
 * could run. Here compressed input goes in slices of `GZIP_SLICE_BYTES`,
 * and the next slice is inflated only once the previous output was taken;
 * deflate expands at most about 1032:1, which bounds one step's output.
 * fflate does not check the gzip trailer, so this module does (CRC-32 and
 * length of the output) for single-member files: a file accepted here must
 * also decompress with zlib, which does check it, when it is read back.
 */

export type ByteChunk =
  | { kind: "bytes"; bytes: Uint8Array }
  | { kind: "end" }
  /** The file starts like gzip but does not decompress; `message` says how, for the user. */
  | { kind: "bad-gzip"; message: string };

/** An opened upload: read it to the end, or cancel it. */
export interface UploadBytes {
  readonly deliveryType: DeliveryType;
  /** The next chunk of CSV bytes; rejects only when the upload stream itself fails (for instance, the client went away). */
  read(): Promise<ByteChunk>;
  /** Stops reading and cancels the upload stream, so a `tee()` sibling is not left buffering for this side. */
  cancel(): Promise<void>;
}

// Inflated a slice at a time: 8 KiB of gzip inflates to at most about 8 MiB.
const GZIP_SLICE_BYTES = 8 * 1024;
const GZIP_MAGIC = [0x1f, 0x8b] as const;
const GZIP_TRAILER_BYTES = 8;
// fflate's error codes (its `ec` table) that this module words differently.
const FFLATE_UNEXPECTED_EOF = 0;
const FFLATE_INVALID_HEADER = 6;

/** Receives each raw chunk of the upload, as uploaded, before it is used; awaited, so it sets the pace. */
export type RawCopy = (chunk: Uint8Array) => Promise<void>;

/** Looks at the first bytes of `stream` to tell gzip from raw CSV, and opens it accordingly. */
export async function openUploadBytes(stream: ReadableStream<Uint8Array>, copy?: RawCopy): Promise<UploadBytes> {
  const source = new SourceReader(stream, copy);
  const head: Uint8Array[] = [];
  let headLength = 0;
  while (headLength < GZIP_MAGIC.length) {
    const next = await source.read();
    if (next === undefined) break;
    head.push(next);
    headLength += next.length;
  }
  source.unread(head);
  const first = head[0];
  const second = first && first.length > 1 ? first[1] : head[1]?.[0];
  return startsLikeGzip([first?.[0], second]) ? openGzip(source) : openRaw(source);
}

/** Whether a file's first two bytes are gzip's magic number (docs/api.md: by content, not name). */
export function startsLikeGzip(firstTwo: ArrayLike<number | undefined>): boolean {
  return firstTwo[0] === GZIP_MAGIC[0] && firstTwo[1] === GZIP_MAGIC[1];
}

/** The upload stream's reader, with the sniffed chunks put back in front and empty chunks skipped. */
class SourceReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly putBack: Uint8Array[] = [];
  private done = false;

  constructor(
    stream: ReadableStream<Uint8Array>,
    private readonly copy: RawCopy | undefined,
  ) {
    this.reader = stream.getReader();
  }

  /** The next non-empty chunk, or undefined at the end. */
  async read(): Promise<Uint8Array | undefined> {
    const buffered = this.putBack.shift();
    if (buffered) return buffered;
    while (!this.done) {
      const next = await this.reader.read();
      if (next.done) {
        this.done = true;
      } else if (next.value.length > 0) {
        if (this.copy) await this.copy(next.value);
        return next.value;
      }
    }
    return undefined;
  }

  unread(chunks: Uint8Array[]): void {
    this.putBack.unshift(...chunks);
  }

  cancel(): Promise<void> {
    return this.reader.cancel().catch(() => undefined);
  }
}

function openRaw(source: SourceReader): UploadBytes {
  return {
    deliveryType: "RAW",
    async read() {
      const bytes = await source.read();
      return bytes ? { kind: "bytes", bytes } : { kind: "end" };
    },
    cancel: () => source.cancel(),
  };
}

function openGzip(source: SourceReader): UploadBytes {
  const inflated: Uint8Array[] = [];
  let ended = false;
  let fed = 0;
  let crc = CRC32_START;
  let inflatedBytes = 0;
  let multiMember = false;
  const gunzip = new Gunzip((data, final) => {
    if (data.length > 0) inflated.push(data);
    if (final) ended = true;
  });
  gunzip.onmember = () => {
    multiMember = true;
  };
  const trailer = new LastBytes(GZIP_TRAILER_BYTES);
  let input: Uint8Array | undefined;
  let inputAt = 0;

  /** Inflates one more slice of input (or finishes); returns a failure message if the data is bad. */
  async function inflateMore(): Promise<string | undefined> {
    if (input === undefined || inputAt >= input.length) {
      input = await source.read();
      inputAt = 0;
    }
    const slice = input?.subarray(inputAt, inputAt + GZIP_SLICE_BYTES);
    try {
      if (slice === undefined) gunzip.push(new Uint8Array(0), true);
      else gunzip.push(slice, false);
    } catch (error) {
      return gzipFailureMessage(error, fed);
    }
    if (slice !== undefined) {
      inputAt += slice.length;
      fed += slice.length;
      trailer.add(slice);
    }
    return undefined;
  }

  // RFC 1952 §2.3.1: the member ends with CRC32 then ISIZE (length mod 2^32), both little-endian.
  function checkTrailer(): string | undefined {
    if (multiMember) return undefined;
    const view = new DataView(trailer.bytes.buffer);
    const crcMatches = view.getUint32(0, true) === crc32Value(crc);
    const sizeMatches = view.getUint32(4, true) === inflatedBytes % 2 ** 32;
    return crcMatches && sizeMatches
      ? undefined
      : "its checksum does not match the data (the file is damaged or truncated)";
  }

  return {
    deliveryType: "GZIP",
    async read() {
      for (;;) {
        const bytes = inflated.shift();
        if (bytes) {
          // Summed as read, not as inflated: a chunk the caller never reads (past its size limit) costs nothing more.
          crc = updateCrc32(crc, bytes);
          inflatedBytes += bytes.length;
          return { kind: "bytes", bytes };
        }
        if (ended) {
          const failure = checkTrailer();
          return failure ? { kind: "bad-gzip", message: failure } : { kind: "end" };
        }
        const failure = await inflateMore();
        if (failure) return { kind: "bad-gzip", message: failure };
      }
    },
    cancel: () => source.cancel(),
  };
}

/** Keeps the last `size` bytes of everything added. */
class LastBytes {
  readonly bytes: Uint8Array;
  private filled = 0;

  constructor(private readonly size: number) {
    this.bytes = new Uint8Array(size);
  }

  add(chunk: Uint8Array): void {
    if (chunk.length >= this.size) {
      this.bytes.set(chunk.subarray(chunk.length - this.size));
      this.filled = this.size;
      return;
    }
    const keep = Math.min(this.filled, this.size - chunk.length);
    this.bytes.copyWithin(this.size - chunk.length - keep, this.size - keep);
    this.bytes.set(chunk, this.size - chunk.length);
    this.filled = keep + chunk.length;
  }
}

function gzipFailureMessage(error: unknown, bytesAccepted: number): string {
  const code = error instanceof Error && "code" in error ? error.code : undefined;
  if (code === FFLATE_UNEXPECTED_EOF) return "the gzip data ends too early (the file is truncated)";
  // The first header was already checked by its magic bytes, so a bad header later is a second "member" that is not gzip.
  if (code === FFLATE_INVALID_HEADER && bytesAccepted > 0)
    return "there are extra bytes after the end of the gzip data";
  return "the gzip data is corrupt";
}

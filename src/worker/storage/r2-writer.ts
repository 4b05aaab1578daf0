import { retried } from "./busy-retry";

/**
 * R2 requires every part of a multipart upload but the last to have one size,
 * at least 5 MiB. The minimum keeps what an upload holds small (two parts,
 * 10 MiB) and the same for every file larger than one part.
 */
export const PART_SIZE = 5 * 1024 * 1024;

/** The first buffer's size; it doubles up to PART_SIZE as bytes come, so a small object never takes a whole part. */
const FIRST_BUFFER_SIZE = 64 * 1024;

/**
 * Writes an object of unknown length to R2 while it streams in: small
 * objects go up in one put, large ones as a multipart upload. One part is
 * stored while the next one fills, so the stream keeps flowing during R2's
 * round trips; at most two parts are held in memory, and the buffer of a
 * stored part is filled again, so no part leaves 5 MiB of garbage behind.
 * The first buffer starts small and grows, so a small object (most query
 * results) holds about its own size. Nothing is visible under the key until
 * `finish`.
 */
export class R2StreamWriter {
  private buffer = new Uint8Array(FIRST_BUFFER_SIZE);
  private filled = 0;
  private upload: R2MultipartUpload | null = null;
  private parts: R2UploadedPart[] = [];
  private inFlight: Promise<void> | null = null;
  private written = 0;
  /** The buffer of the last part stored, free to be filled again. */
  private spare: Uint8Array<ArrayBuffer> | null = null;

  /** `options` is asked for when the first byte goes to R2, so it may depend on what the stream began with. */
  constructor(
    private readonly bucket: R2Bucket,
    private readonly key: string,
    private readonly options: () => R2PutOptions = () => ({}),
  ) {}

  /** Bytes accepted so far. */
  get size(): number {
    return this.written;
  }

  /** Appends bytes; resolves once they are buffered (waiting while two parts are taken: backpressure for the caller). */
  async write(chunk: Uint8Array): Promise<void> {
    this.written += chunk.byteLength;
    let offset = 0;
    while (offset < chunk.byteLength) {
      const take = Math.min(PART_SIZE - this.filled, chunk.byteLength - offset);
      if (this.filled + take > this.buffer.byteLength) this.grow(this.filled + take);
      this.buffer.set(chunk.subarray(offset, offset + take), this.filled);
      this.filled += take;
      offset += take;
      if (this.filled === PART_SIZE) await this.sendPart(true);
    }
  }

  /** Makes the buffer hold at least `needed` bytes (at most PART_SIZE), keeping what it has. */
  private grow(needed: number): void {
    const grown = new Uint8Array(Math.min(PART_SIZE, Math.max(needed, 2 * this.buffer.byteLength)));
    grown.set(this.buffer.subarray(0, this.filled));
    this.buffer = grown;
  }

  /** Starts storing the buffer as the next part, after the previous part is stored; a fresh buffer takes what follows. */
  private async sendPart(more: boolean): Promise<void> {
    await this.inFlight;
    this.upload ??= await retried(() => this.bucket.createMultipartUpload(this.key, this.options()), anyError);
    const upload = this.upload;
    const full = this.filled === PART_SIZE ? this.buffer : this.buffer.subarray(0, this.filled);
    const number = this.parts.length + 1;
    // The previous part is stored (awaited above), so its buffer is free.
    this.buffer = more ? (this.spare ?? new Uint8Array(PART_SIZE)) : new Uint8Array(0);
    this.spare = null;
    this.filled = 0;
    this.inFlight = retried(() => upload.uploadPart(number, full), anyError).then((part) => {
      this.parts.push(part);
      if (full.byteLength === PART_SIZE) this.spare = full;
    });
  }

  /** Completes the object. */
  async finish(): Promise<void> {
    if (!this.upload) {
      const bytes = this.buffer.subarray(0, this.filled);
      await retried(() => this.bucket.put(this.key, bytes, this.options()), anyError);
    } else {
      if (this.filled > 0) await this.sendPart(false);
      await this.inFlight;
      await this.upload.complete(this.parts);
    }
    this.buffer = new Uint8Array(0);
    this.spare = null;
  }

  /** Gives up: aborts a multipart upload so no parts linger. */
  async abort(): Promise<void> {
    this.buffer = new Uint8Array(0);
    this.spare = null;
    await this.inFlight?.catch(() => undefined);
    if (this.upload) await this.upload.abort().catch(() => undefined);
  }
}

/**
 * Storing a buffer again is harmless (the same bytes under the same key or part number), so any failure is
 * tried again: local R2 hides "database is locked" as "Unspecified error", and R2 asks that its internal
 * errors be retried.
 */
function anyError(): boolean {
  return true;
}

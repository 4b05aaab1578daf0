/** R2 requires every part of a multipart upload but the last to have one size, at least 5 MiB. */
export const PART_SIZE = 8 * 1024 * 1024;

/**
 * Writes an object of unknown length to R2 while it streams in, holding at
 * most one part in memory: small objects go up in one put, large ones as a
 * multipart upload. Nothing is visible under the key until `finish`.
 */
export class R2StreamWriter {
  private buffer = new Uint8Array(PART_SIZE);
  private filled = 0;
  private upload: R2MultipartUpload | null = null;
  private parts: R2UploadedPart[] = [];
  private written = 0;

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

  /** Appends bytes; resolves once they are buffered or uploaded (backpressure for the caller). */
  async write(chunk: Uint8Array): Promise<void> {
    this.written += chunk.byteLength;
    let offset = 0;
    while (offset < chunk.byteLength) {
      const take = Math.min(PART_SIZE - this.filled, chunk.byteLength - offset);
      this.buffer.set(chunk.subarray(offset, offset + take), this.filled);
      this.filled += take;
      offset += take;
      if (this.filled === PART_SIZE) await this.flushPart();
    }
  }

  private async flushPart(): Promise<void> {
    this.upload ??= await this.bucket.createMultipartUpload(this.key, this.options());
    // A fresh buffer for what follows; the full one belongs to R2 until the part is stored.
    const full = this.filled === PART_SIZE ? this.buffer : this.buffer.subarray(0, this.filled);
    this.buffer = new Uint8Array(PART_SIZE);
    this.filled = 0;
    this.parts.push(await this.upload.uploadPart(this.parts.length + 1, full));
  }

  /** Completes the object. */
  async finish(): Promise<void> {
    if (!this.upload) {
      await this.bucket.put(this.key, this.buffer.subarray(0, this.filled), this.options());
    } else {
      if (this.filled > 0) await this.flushPart();
      await this.upload.complete(this.parts);
    }
    this.buffer = new Uint8Array(0);
  }

  /** Gives up: aborts a multipart upload so no parts linger. */
  async abort(): Promise<void> {
    this.buffer = new Uint8Array(0);
    if (this.upload) await this.upload.abort().catch(() => undefined);
  }
}

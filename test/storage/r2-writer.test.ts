import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PART_SIZE, R2StreamWriter } from "../../src/worker/storage/r2-writer";
import { uniqueName } from "../support/catalog";

/** The test bucket, counting the calls that show which way an object went up. */
function countingBucket(): { bucket: R2Bucket; calls: { put: number; multipart: number; parts: number } } {
  const calls = { put: 0, multipart: 0, parts: 0 };
  const real = env.BUCKET;
  const counting: Pick<R2Bucket, "put" | "createMultipartUpload"> = {
    put: ((key: string, value: Uint8Array, options?: R2PutOptions) => {
      calls.put++;
      return real.put(key, value, options);
    }) as R2Bucket["put"],
    async createMultipartUpload(key, options) {
      calls.multipart++;
      const upload = await real.createMultipartUpload(key, options);
      return {
        key: upload.key,
        uploadId: upload.uploadId,
        uploadPart: (partNumber: number, value: Uint8Array) => {
          calls.parts++;
          return upload.uploadPart(partNumber, value);
        },
        abort: () => upload.abort(),
        complete: (parts: R2UploadedPart[]) => upload.complete(parts),
      } as R2MultipartUpload;
    },
  };
  return { bucket: counting as R2Bucket, calls };
}

/** `size` bytes of a repeating pattern that no part boundary lines up with. */
function pattern(size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + (i >> 13)) & 0xff;
  return bytes;
}

async function writeInChunks(writer: R2StreamWriter, bytes: Uint8Array, chunkSize: number): Promise<void> {
  for (let at = 0; at < bytes.length; at += chunkSize) await writer.write(bytes.subarray(at, at + chunkSize));
}

async function stored(key: string): Promise<Uint8Array<ArrayBuffer> | null> {
  const object = await env.BUCKET.get(key);
  return object ? new Uint8Array(await object.arrayBuffer()) : null;
}

async function digest(bytes: Uint8Array<ArrayBuffer> | null): Promise<string> {
  if (!bytes) return "missing";
  return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))));
}

describe("R2StreamWriter", () => {
  it("should store a small object with one put, visible only once finished", async () => {
    const { bucket, calls } = countingBucket();
    const key = uniqueName("small");
    const writer = new R2StreamWriter(bucket, key);
    const bytes = pattern(3000);

    await writeInChunks(writer, bytes, 1000);
    const beforeFinish = await env.BUCKET.head(key);
    await writer.finish();

    expect(beforeFinish).toBeNull();
    expect(await stored(key)).toEqual(bytes);
    expect(writer.size).toBe(3000);
    expect(calls).toEqual({ put: 1, multipart: 0, parts: 0 });
  });

  it("should store a buffer again when R2 refuses it once, as local R2 does while its database is locked", async () => {
    const real = env.BUCKET;
    let refusals = 0;
    const refuseFirst = <T>(store: () => Promise<T>) =>
      refusals++ % 2 === 0 ? Promise.reject(new Error("put: Unspecified error (0)")) : store();
    const flaky = {
      put: ((key: string, value: Uint8Array, options?: R2PutOptions) =>
        refuseFirst(() => real.put(key, value, options))) as R2Bucket["put"],
      async createMultipartUpload(key: string, options?: R2MultipartOptions) {
        const upload = await real.createMultipartUpload(key, options);
        return {
          key: upload.key,
          uploadId: upload.uploadId,
          uploadPart: (partNumber: number, value: Uint8Array) =>
            refuseFirst(() => upload.uploadPart(partNumber, value)),
          abort: () => upload.abort(),
          complete: (parts: R2UploadedPart[]) => upload.complete(parts),
        } as R2MultipartUpload;
      },
    } as R2Bucket;
    const small = uniqueName("flaky-small");
    const large = uniqueName("flaky-large");
    const bytes = pattern(PART_SIZE + 3000);

    const smallWriter = new R2StreamWriter(flaky, small);
    await smallWriter.write(bytes.subarray(0, 3000));
    await smallWriter.finish();
    const largeWriter = new R2StreamWriter(flaky, large);
    await writeInChunks(largeWriter, bytes, 1 << 20);
    await largeWriter.finish();

    expect(await stored(small)).toEqual(bytes.subarray(0, 3000));
    expect(await digest(await stored(large))).toBe(await digest(bytes));
    // One refusal and one success for the put and for each of the two parts.
    expect(refusals).toBe(6);
  });

  it("should store an empty object", async () => {
    const key = uniqueName("empty");
    const writer = new R2StreamWriter(env.BUCKET, key);

    await writer.finish();

    expect(await stored(key)).toEqual(new Uint8Array(0));
  });

  it("should upload an object larger than one part as a multipart upload, byte for byte", async () => {
    const { bucket, calls } = countingBucket();
    const key = uniqueName("large");
    const writer = new R2StreamWriter(bucket, key);
    const bytes = pattern(2 * PART_SIZE + 12345);

    await writeInChunks(writer, bytes, 1024 * 1024 + 7);
    const beforeFinish = await env.BUCKET.head(key);
    await writer.finish();

    expect(beforeFinish).toBeNull();
    expect(calls).toEqual({ put: 0, multipart: 1, parts: 3 });
    const back = await stored(key);
    expect(back?.length).toBe(bytes.length);
    expect(await digest(back)).toBe(await digest(bytes));
  });

  it("should keep every byte while its first buffer grows, for a small object and past one part", async () => {
    for (const [size, chunk, expected] of [
      [200_000, 7777, { put: 1, multipart: 0, parts: 0 }],
      [PART_SIZE + 300_000, 65_537, { put: 0, multipart: 1, parts: 2 }],
    ] as const) {
      const { bucket, calls } = countingBucket();
      const key = uniqueName("growing");
      const writer = new R2StreamWriter(bucket, key);
      const bytes = pattern(size);

      await writeInChunks(writer, bytes, chunk);
      await writer.finish();

      expect(calls).toEqual(expected);
      expect(await digest(await stored(key))).toBe(await digest(bytes));
    }
  });

  it("should upload an object of exactly one part size as one part", async () => {
    const { bucket, calls } = countingBucket();
    const key = uniqueName("exact");
    const writer = new R2StreamWriter(bucket, key);
    const bytes = pattern(PART_SIZE);

    await writer.write(bytes);
    await writer.finish();

    expect(calls.parts).toBe(1);
    expect(await digest(await stored(key))).toBe(await digest(bytes));
  });

  it("should leave nothing behind when a multipart upload is aborted", async () => {
    const key = uniqueName("aborted");
    const writer = new R2StreamWriter(env.BUCKET, key);

    await writer.write(pattern(PART_SIZE + 10));
    await writer.abort();

    expect(await env.BUCKET.head(key)).toBeNull();
    expect((await env.BUCKET.list({ prefix: key })).objects).toEqual([]);
  });

  it("should leave nothing behind when a small upload is aborted", async () => {
    const key = uniqueName("aborted-small");
    const writer = new R2StreamWriter(env.BUCKET, key);

    await writer.write(pattern(100));
    await writer.abort();

    expect(await env.BUCKET.head(key)).toBeNull();
  });

  it("should ask for the put options only when the first bytes go to R2", async () => {
    const key = uniqueName("typed");
    let contentType = "not yet known";
    const writer = new R2StreamWriter(env.BUCKET, key, () => ({ httpMetadata: { contentType } }));

    await writer.write(pattern(10));
    contentType = "application/gzip";
    await writer.finish();

    expect((await env.BUCKET.head(key))?.httpMetadata?.contentType).toBe("application/gzip");
  });
});

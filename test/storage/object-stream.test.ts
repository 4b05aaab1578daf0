import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { openObjectStream } from "../../src/worker/storage/object-stream";
import { randomToken } from "../../src/worker/util/crypto";

async function collect(stream: ReadableStream<Uint8Array>): Promise<{ bytes: Uint8Array; chunks: number[] }> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  const bytes = new Uint8Array(chunks.reduce((sum, c) => sum + c.byteLength, 0));
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return { bytes, chunks: chunks.map((c) => c.byteLength) };
}

describe("openObjectStream", () => {
  it.each([0, 1, 999, 1000, 1001, 4567])("should give back all %i bytes, in ranges of at most 1000", async (size) => {
    const key = `object-stream/${randomToken(8)}`;
    const bytes = Uint8Array.from({ length: size }, (_, i) => (i * 31 + 7) % 251);
    await env.BUCKET.put(key, bytes);

    const read = await collect((await openObjectStream(env.BUCKET, key, 1000))!);

    expect(read.bytes).toEqual(bytes);
    expect(read.chunks.every((length) => length <= 1000)).toBe(true);
    expect(read.chunks.length).toBe(Math.ceil(size / 1000));
  });

  it("should be null for an object that does not exist", async () => {
    expect(await openObjectStream(env.BUCKET, `object-stream/missing-${randomToken(8)}`)).toBeNull();
  });

  it("should let a reader stop early", async () => {
    const key = `object-stream/${randomToken(8)}`;
    await env.BUCKET.put(key, new Uint8Array(5000));
    const reader = (await openObjectStream(env.BUCKET, key, 1000))!.getReader();

    expect((await reader.read()).value?.byteLength).toBe(1000);
    await reader.cancel();
  });
});

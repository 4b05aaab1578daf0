/** Bytes per ranged read: few enough round trips, little held (two at a time), short work for the reader each. */
const RANGE_BYTES = 1024 * 1024;
/** For a whole-object read where the isolate has room to spare (a table store's build): fewer, larger round trips. */
export const LARGE_RANGE_BYTES = 8 * 1024 * 1024;

/**
 * An R2 object's bytes as a stream of large chunks, read as ranges, the
 * next one fetched while the current one is consumed; null when the
 * object does not exist. A plain `get().body` can arrive in pieces of a few
 * KB, and the per-piece work of a reader then costs more than the parsing.
 * Each range is handed on in a task of its own: the prefetched read is
 * already there, and awaiting it alone would let a reader that parses and
 * stores as it goes hold the isolate (and, under `wrangler dev`, every
 * Worker of the session) until the whole object is done. `span` limits it
 * to the bytes [offset, end) of the object.
 */
export async function openObjectStream(
  bucket: R2Bucket,
  key: string,
  rangeBytes = RANGE_BYTES,
  span?: { offset: number; end: number },
): Promise<ReadableStream<Uint8Array> | null> {
  const head = await bucket.head(key);
  if (!head) return null;
  const size = Math.min(head.size, span?.end ?? head.size);
  const read = async (offset: number): Promise<Uint8Array> => {
    // The same version throughout: a key rewritten meanwhile fails the read rather than mixing two objects.
    const part = await bucket.get(key, {
      range: { offset, length: Math.min(rangeBytes, size - offset) },
      onlyIf: { etagMatches: head.etag },
    });
    if (!part || !("body" in part)) throw new Error(`${key} changed or disappeared while it was read`);
    return new Uint8Array(await part.arrayBuffer());
  };
  let offset = span?.offset ?? 0;
  let next: Promise<Uint8Array> | null = size > offset ? read(offset) : null;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (!next) return controller.close();
      const bytes = await next;
      await new Promise((resolve) => setTimeout(resolve, 0));
      offset += bytes.byteLength;
      next = offset < size && bytes.byteLength > 0 ? read(offset) : null;
      // Keep the prefetch from being reported as unhandled if the reader stops early.
      next?.catch(() => {});
      controller.enqueue(bytes);
    },
    cancel() {
      next = null;
    },
  });
}

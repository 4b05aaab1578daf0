/** Test helpers: byte streams with chosen chunking that record how far they were read. */

const encoder = new TextEncoder();

export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const joined = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let at = 0;
  for (const part of parts) {
    joined.set(part, at);
    at += part.length;
  }
  return joined;
}

export async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A stream plus what happened to it: chunks handed out and whether it was cancelled. */
export interface TrackedStream {
  stream: ReadableStream<Uint8Array>;
  readonly pulls: number;
  readonly bytesServed: number;
  readonly cancelled: boolean;
}

/** Serves `bytes` in pieces of `chunkSize` (or at the given cut points), one piece per pull. */
export function trackedStream(bytes: Uint8Array, chunking: number | readonly number[]): TrackedStream {
  const cuts = typeof chunking === "number" ? cutEvery(bytes.length, chunking) : [...chunking, bytes.length];
  let next = 0;
  let start = 0;
  const state = { pulls: 0, bytesServed: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (next >= cuts.length) return controller.close();
        const end = cuts[next++]!;
        state.pulls++;
        state.bytesServed += end - start;
        controller.enqueue(bytes.slice(start, end));
        start = end;
      },
      cancel() {
        state.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return {
    stream,
    get pulls() {
      return state.pulls;
    },
    get bytesServed() {
      return state.bytesServed;
    },
    get cancelled() {
      return state.cancelled;
    },
  };
}

function cutEvery(length: number, size: number): number[] {
  const cuts: number[] = [];
  for (let at = size; at < length; at += size) cuts.push(at);
  cuts.push(length);
  return cuts;
}

/** A stream that serves `bytes` and then fails, like a client that disconnects mid-upload. */
export function failingStream(bytes: Uint8Array, error: Error): ReadableStream<Uint8Array> {
  let served = false;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (served) return controller.error(error);
      served = true;
      controller.enqueue(bytes);
    },
  });
}

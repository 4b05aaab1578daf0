import { Buffer } from "node:buffer";

/** What the search reports: a match (and the data before it), or data that holds no match. */
export type SearchCallback = (
  isMatch: boolean,
  data: Buffer | undefined,
  start: number,
  end: number,
  isDataSafe: boolean,
) => void;

/**
 * Finds a needle (the multipart boundary) in a stream of chunks, with the
 * interface of the `streamsearch` package that busboy uses: for each chunk,
 * the callback receives every stretch of data that cannot be part of the
 * needle, and each match with the data before it. streamsearch scans in a
 * JavaScript loop, a large share of an upload's CPU; this one lets native
 * `Buffer#indexOf` scan, and keeps only a tail that could start the needle
 * for the next chunk. wrangler.toml aliases `streamsearch` to this module
 * (see streamsearch-alias.cjs). Every piece of data handed to the callback
 * stays valid (it is the caller's chunk or a fresh copy), so `isDataSafe`
 * is true.
 */
export class BoundarySearch {
  maxMatches = Infinity;
  matches = 0;
  private readonly needle: Buffer;
  /** The end of the previous chunk that may begin the needle (shorter than the needle). */
  private carry: Buffer | null = null;

  constructor(
    needle: string | Buffer,
    private readonly callback: SearchCallback,
  ) {
    if (typeof callback !== "function") throw new Error("Missing match callback");
    this.needle = typeof needle === "string" ? Buffer.from(needle) : needle;
    if (this.needle.length === 0) throw new Error("The needle must not be empty");
  }

  reset(): void {
    this.matches = 0;
    this.carry = null;
  }

  /** Searches `chunk` from `pos`; returns the chunk's length (everything is consumed). */
  push(chunk: Buffer | Uint8Array | string, pos = 0): number {
    const given =
      typeof chunk === "string"
        ? Buffer.from(chunk, "latin1")
        : Buffer.isBuffer(chunk)
          ? chunk
          : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let data = given;
    let start = pos;
    if (this.carry) {
      data = Buffer.concat([this.carry, given.subarray(pos)]);
      start = 0;
      this.carry = null;
    }
    const needle = this.needle;
    while (this.matches < this.maxMatches) {
      const at = data.indexOf(needle, start);
      if (at === -1) break;
      this.matches++;
      if (at > start) this.callback(true, data, start, at, true);
      else this.callback(true, undefined, 0, 0, true);
      start = at + needle.length;
    }
    // The earliest position from which the rest of the data could still begin the needle.
    const length = data.length;
    let tail = Math.max(start, length - needle.length + 1);
    const first = needle[0];
    while (tail < length && (data[tail] !== first || needle.compare(data, tail, length, 0, length - tail) !== 0))
      tail++;
    if (tail > start) this.callback(false, data, start, tail, true);
    if (tail < length) this.carry = Buffer.from(data.subarray(tail, length));
    return given.length;
  }

  /** The end of the stream: a kept tail is data after all. */
  destroy(): void {
    const carry = this.carry;
    if (carry) this.callback(false, carry, 0, carry.length, true);
    this.reset();
  }
}

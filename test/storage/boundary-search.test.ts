import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import { BoundarySearch, type SearchCallback } from "../../src/worker/storage/boundary-search";
// The original, by path: wrangler.toml aliases the package name (and its subpaths) to BoundarySearch.
// @ts-expect-error -- a CommonJS file without types
import OriginalSearch from "../../node_modules/streamsearch/lib/sbmh.js";
import { seededRandom } from "../support/engine";

type Searcher = { push(chunk: Buffer, pos?: number): number; destroy(): void };
type Make = (needle: string, callback: SearchCallback) => Searcher;

/** What a search saw: the data between matches, as text, with "|" for each match. */
function run(make: Make, needle: string, chunks: Buffer[]): string {
  let out = "";
  const search = make(needle, (isMatch, data, start, end) => {
    if (data && end > start) out += data.toString("latin1", start, end);
    if (isMatch) out += "|";
  });
  for (const chunk of chunks) search.push(chunk, 0);
  search.destroy();
  return out;
}

const ours: Make = (needle, callback) => new BoundarySearch(needle, callback);
const original: Make = (needle, callback) =>
  new (OriginalSearch as new (n: string, c: SearchCallback) => Searcher)(needle, callback);

/** Splits `text` into chunks at the given offsets. */
function split(text: string, cuts: number[]): Buffer[] {
  const bytes = Buffer.from(text, "latin1");
  const points = [0, ...cuts.filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b), bytes.length];
  return points.slice(1).map((end, i) => bytes.subarray(points[i], end));
}

describe("BoundarySearch", () => {
  const needle = "\r\n--XyZ";

  it("should report the data around each match, whole", () => {
    expect(run(ours, needle, split(`a\r\n--XyZb\r\n--XyZ\r\n--XyZc`, []))).toBe("a|b||c");
    expect(run(ours, needle, split(`\r\n--XyZ`, []))).toBe("|");
    expect(run(ours, needle, split(`no match\r\n--Xy`, []))).toBe("no match\r\n--Xy");
  });

  it("should find a needle split across chunks at every offset, and give back a false start", () => {
    const text = `head\r\n--Xy\r\n--XyZtail\r\n-`;
    for (let cut = 1; cut < text.length; cut++)
      for (let second = cut + 1; second <= text.length; second++)
        expect(run(ours, needle, split(text, [cut, second]))).toBe("head\r\n--Xy|tail\r\n-");
  });

  it("should agree with streamsearch on random data cut into random chunks", () => {
    const random = seededRandom(4242);
    const alphabet = ["a", "\r", "\n", "-", "X", "y", "Z", "\r\n--XyZ", "\r\n--Xy", "\r\n-"];
    for (let round = 0; round < 400; round++) {
      let text = "";
      const size = Math.floor(random() * 80);
      for (let i = 0; i < size; i++) text += alphabet[Math.floor(random() * alphabet.length)];
      const cuts = Array.from({ length: Math.floor(random() * 6) }, () => Math.floor(random() * (text.length + 1)));
      const chunks = split(text, cuts);
      expect(run(ours, needle, chunks), JSON.stringify({ text, cuts })).toBe(run(original, needle, chunks));
    }
  });

  it("should take a start position and plain Uint8Array chunks", () => {
    let out = "";
    const search = new BoundarySearch("--b", (isMatch, data, start, end) => {
      if (data) out += data.toString("latin1", start, end);
      if (isMatch) out += "|";
    });
    search.push(Buffer.from("skip:x--by"), 5);
    search.push(new Uint8Array(Buffer.from("z--")));
    search.destroy();
    expect(out).toBe("x|yz--");
  });
});

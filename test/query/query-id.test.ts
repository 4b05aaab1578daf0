import { afterEach, describe, expect, it, vi } from "vitest";
import { newQueryId } from "../../src/worker/query/queries";

afterEach(() => {
  vi.restoreAllMocks();
});

describe("newQueryId", () => {
  it("should be 22 base64url characters from 16 random bytes", () => {
    expect(newQueryId()).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(newQueryId()).not.toBe(newQueryId());
  });

  it("should never begin with '-', which `dqs status ID` would read as an option", () => {
    // 0xf8 makes the first base64url character '-' (62); the second draw is kept.
    const draws = [0xf8, 0x00];
    vi.spyOn(crypto, "getRandomValues").mockImplementation((array) => {
      new Uint8Array(array.buffer, array.byteOffset, array.byteLength).fill(draws.shift() ?? 0x41);
      return array;
    });

    const id = newQueryId();

    expect(id).toBe("AAAAAAAAAAAAAAAAAAAAAA");
    expect(draws).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import { CRC32_START, crc32Value, updateCrc32 } from "../../src/worker/ingest/crc32";
import { utf8 } from "./streams";

describe("crc32", () => {
  it("should give the standard check value for 123456789", () => {
    expect(crc32Value(updateCrc32(CRC32_START, utf8("123456789")))).toBe(0xcbf43926);
  });

  it("should give the same value however the bytes are split", () => {
    const bytes = utf8("The quick brown fox jumps over the lazy dog");
    const whole = crc32Value(updateCrc32(CRC32_START, bytes));
    expect(whole).toBe(0x414fa339);
    expect(crc32Value(updateCrc32(updateCrc32(CRC32_START, bytes.subarray(0, 10)), bytes.subarray(10)))).toBe(whole);
  });

  it("should be zero for no bytes", () => {
    expect(crc32Value(CRC32_START)).toBe(0);
  });
});

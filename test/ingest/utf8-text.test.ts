import { describe, expect, it } from "vitest";
import { Utf8Text, firstInvalidUtf8 } from "../../src/worker/ingest/utf8-text";
import { utf8 } from "./streams";

describe("firstInvalidUtf8", () => {
  it("should accept well-formed text of every length of character", () => {
    expect(firstInvalidUtf8(utf8("a ß € 😀 \u{10FFFF}"))).toBe(-1);
  });

  it.each([
    ["a lone continuation byte", [0x41, 0x80], 1],
    ["an overlong two-byte form", [0xc0, 0xaf], 0],
    ["an overlong three-byte form", [0xe0, 0x80, 0xaf], 0],
    ["a UTF-16 surrogate", [0x41, 0xed, 0xa0, 0x80], 1],
    ["a code point above U+10FFFF", [0xf4, 0x90, 0x80, 0x80], 0],
    ["a byte that never occurs", [0x41, 0x42, 0xff], 2],
    ["a character cut short by another", [0xe6, 0x9d, 0x41], 0],
  ])("should find %s", (_, bytes, offset) => {
    expect(firstInvalidUtf8(new Uint8Array(bytes))).toBe(offset);
  });
});

describe("Utf8Text", () => {
  it("should decode characters split across chunks and drop a leading byte order mark", () => {
    const decoder = new Utf8Text();
    const bytes = utf8("\uFEFFZoë 😀");
    const text = [...bytes].map((byte) => {
      const decoded = decoder.decode(new Uint8Array([byte]));
      return decoded.ok ? decoded.text : "!";
    });
    expect(text.join("") + (decoder.end().ok ? "" : "!")).toBe("Zoë 😀");
  });

  it("should give the text before a bad byte and its absolute offset", () => {
    const decoder = new Utf8Text();
    expect(decoder.decode(utf8("abc\u00e9"))).toEqual({ ok: true, text: "abcé" });
    expect(decoder.decode(new Uint8Array([0x78, 0xe2, 0x82]))).toEqual({ ok: true, text: "x" });
    expect(decoder.decode(new Uint8Array([0x41]))).toEqual({ ok: false, validText: "", offset: 6, byte: 0xe2 });
  });

  it("should report a file that ends inside a character", () => {
    const decoder = new Utf8Text();
    decoder.decode(new Uint8Array([0x61, 0xf0, 0x9f]));
    expect(decoder.end()).toEqual({ ok: false, validText: "", offset: 1, byte: undefined });
  });
});

/**
 * Streaming, strict UTF-8 decoding that can say where a file stops being
 * UTF-8. The platform's fatal TextDecoder does the work (and drops a
 * leading byte order mark); only when it throws do we look at the bytes
 * ourselves to find the offending offset.
 */

export type DecodedText =
  | { ok: true; text: string }
  /** `validText` is the text between the last good piece and the bad byte, so the caller can count rows up to it. */
  | { ok: false; validText: string; offset: number; byte: number | undefined };

/** Decodes byte chunks into text, keeping the absolute byte offset for error reports. */
export class Utf8Text {
  private readonly decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });
  private consumed = 0;
  // The last three bytes seen: an unfinished character the decoder holds back is among them.
  private readonly tail = new Uint8Array(3);
  private tailLength = 0;

  /** Decodes the next chunk of the file. */
  decode(bytes: Uint8Array): DecodedText {
    let text: string;
    try {
      text = this.decoder.decode(bytes, { stream: true });
    } catch {
      return this.locateError(bytes);
    }
    this.remember(bytes);
    return { ok: true, text };
  }

  /** Finishes decoding; fails when the file ends inside a character. */
  end(): DecodedText {
    try {
      return { ok: true, text: this.decoder.decode() };
    } catch {
      const held = heldBackLength(this.tail, this.tailLength);
      return { ok: false, validText: "", offset: this.consumed - held, byte: undefined };
    }
  }

  private remember(bytes: Uint8Array): void {
    this.consumed += bytes.length;
    if (bytes.length >= 3) {
      this.tail.set(bytes.subarray(bytes.length - 3));
      this.tailLength = 3;
      return;
    }
    const keep = Math.min(this.tailLength, 3 - bytes.length);
    this.tail.copyWithin(0, this.tailLength - keep, this.tailLength);
    this.tail.set(bytes, keep);
    this.tailLength = keep + bytes.length;
  }

  private locateError(bytes: Uint8Array): DecodedText {
    const held = heldBackLength(this.tail, this.tailLength);
    const joined = new Uint8Array(held + bytes.length);
    joined.set(this.tail.subarray(this.tailLength - held, this.tailLength));
    joined.set(bytes, held);
    const start = this.consumed - held;
    const bad = Math.max(0, firstInvalidUtf8(joined));
    // A byte order mark is only dropped at the very start of the file, as the streaming decoder does.
    const validText = new TextDecoder("utf-8", { fatal: false, ignoreBOM: start !== 0 }).decode(
      joined.subarray(0, bad),
    );
    return { ok: false, validText, offset: start + bad, byte: joined[bad] };
  }
}

/** How many bytes at the end of `tail` start a character that is not finished yet. */
function heldBackLength(tail: Uint8Array, length: number): number {
  for (let i = length - 1; i >= 0; i--) {
    const byte = tail[i]!;
    if ((byte & 0xc0) === 0x80) continue;
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    const available = length - i;
    return available < needed ? available : 0;
  }
  return 0;
}

/** Offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629), or -1. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    if (lead < 0x80) {
      i++;
      continue;
    }
    let needed: number;
    let low = 0x80;
    let high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) needed = 1;
    else if (lead === 0xe0) [needed, low] = [2, 0xa0];
    else if (lead === 0xed)
      [needed, high] = [2, 0x9f]; // excludes UTF-16 surrogates
    else if (lead >= 0xe1 && lead <= 0xef) needed = 2;
    else if (lead === 0xf0) [needed, low] = [3, 0x90];
    else if (lead === 0xf4)
      [needed, high] = [3, 0x8f]; // nothing above U+10FFFF
    else if (lead >= 0xf1 && lead <= 0xf3) needed = 3;
    else return i;
    for (let k = 1; k <= needed; k++) {
      const next = bytes[i + k];
      if (next === undefined || next < (k === 1 ? low : 0x80) || next > (k === 1 ? high : 0xbf)) return i;
    }
    i += needed + 1;
  }
  return -1;
}

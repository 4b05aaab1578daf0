// CRC-32 as gzip uses it (RFC 1952 §8): reflected polynomial 0xEDB88320, one table lookup per byte.
const TABLE = (() => {
  const table = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c;
  }
  return table;
})();

/** The CRC-32 state before any byte; finish with `crc32Value`. */
export const CRC32_START = -1;

/** Feeds `bytes` into a running CRC-32 state and returns the new state. */
export function updateCrc32(state: number, bytes: Uint8Array): number {
  let crc = state;
  for (let i = 0; i < bytes.length; i++) crc = TABLE[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return crc;
}

/** The CRC-32 of everything fed so far, as an unsigned 32-bit number. */
export function crc32Value(state: number): number {
  return ~state >>> 0;
}

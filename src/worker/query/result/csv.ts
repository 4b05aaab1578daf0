/** SQLite's storage classes, as sqlite3_column_type reports them. */
export const enum StorageClass {
  Integer = 1,
  Float = 2,
  Text = 3,
  Blob = 4,
  Null = 5,
}

const NEEDS_QUOTES = /[",\r\n]/;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** The two hex digits of each byte value, as character codes. */
const HEX = Uint16Array.from({ length: 256 }, (_, byte) => {
  const digits = byte.toString(16).padStart(2, "0");
  return digits.charCodeAt(0) | (digits.charCodeAt(1) << 8);
});

/** A blob as lowercase hex, through one byte array (a string per byte would cost gigabytes for a large blob). */
function hex(blob: Uint8Array): string {
  const out = new Uint8Array(blob.length * 2);
  const pairs = new Uint16Array(out.buffer);
  for (let i = 0; i < blob.length; i++) pairs[i] = HEX[blob[i]!]!;
  return decoder.decode(out);
}
const FLUSH_CHARS = 64 * 1024;

/** One CSV field (RFC 4180): quoted only when it must be; NULL is an empty field, the empty string `""` (as PostgreSQL writes them). */
export function csvField(value: unknown, storage: StorageClass): string {
  switch (storage) {
    case StorageClass.Null:
      return "";
    case StorageClass.Integer:
      return String(value);
    case StorageClass.Float: {
      const n = value as number;
      // A REAL that happens to be whole keeps a decimal point, so it still reads as a real number.
      return Number.isInteger(n) && Math.abs(n) < 1e21 ? `${n}.0` : String(n);
    }
    case StorageClass.Blob:
      return hex(value as Uint8Array);
    case StorageClass.Text: {
      const text = value as string;
      if (text === "") return '""';
      return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
    }
  }
}

/**
 * Turns rows into CSV bytes (header row, `\n` line ends) and hands them on in
 * blocks, never holding the whole result.
 */
export class CsvResultWriter {
  private pending = "";
  private bytes = 0;

  constructor(private readonly write: (bytes: Uint8Array) => Promise<void>) {}

  /** Bytes written so far. */
  get size(): number {
    return this.bytes + encoder.encode(this.pending).byteLength;
  }

  /** Bytes already handed on (cheap; excludes the block being built). */
  get flushedSize(): number {
    return this.bytes;
  }

  async header(names: string[]): Promise<void> {
    await this.line(names.map((name) => csvField(name, StorageClass.Text)).join(","));
  }

  /** Appends one line (without its line end). */
  async line(text: string): Promise<void> {
    this.pending += text + "\n";
    if (this.pending.length >= FLUSH_CHARS) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending === "") return;
    const chunk = encoder.encode(this.pending);
    this.pending = "";
    this.bytes += chunk.byteLength;
    await this.write(chunk);
  }
}

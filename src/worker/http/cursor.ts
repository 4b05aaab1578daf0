import type { z } from "@hono/zod-openapi";
import { decode, encode } from "jose/base64url";

/** A page cursor as callers see it: opaque, the position as JSON in unpadded base64url. */
export function encodeCursor(position: unknown): string {
  return encode(JSON.stringify(position));
}

/** The position a cursor of `encodeCursor` holds, or null for any other text. */
export function decodeCursor<T>(cursor: string, schema: z.ZodType<T>): T | null {
  try {
    return schema.parse(JSON.parse(new TextDecoder().decode(decode(cursor))));
  } catch {
    return null;
  }
}

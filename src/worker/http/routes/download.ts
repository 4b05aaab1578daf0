import { Hono } from "hono";
import { loadKeys } from "../../auth/keys";
import { attachmentDisposition } from "../../storage/download-location";
import { verifyDownloadUrl } from "../../storage/signed-url";
import { nowSeconds } from "../../util/time";
import type { AppEnv } from "../context";
import { ApiError } from "../errors";

export const downloadRoutes = new Hono<AppEnv>();

type ByteRange = { offset: number; length: number };

/** One `bytes=` range (RFC 9110 §14.1.2) resolved against the size; "unsatisfiable", or null to send it all. */
function parseRange(header: string | undefined, size: number): ByteRange | "unsatisfiable" | null {
  const match = header?.match(/^bytes=(\d*)-(\d*)$/);
  if (!match) return null;
  const [, first, last] = match;
  if (first === "" && last === "") return null;
  if (first === "") {
    const suffix = Math.min(Number(last), size);
    return suffix === 0 ? "unsatisfiable" : { offset: size - suffix, length: suffix };
  }
  const start = Number(first);
  const end = last === "" ? size - 1 : Math.min(Number(last), size - 1);
  if (start >= size || end < start) return "unsatisfiable";
  return { offset: start, length: end - start + 1 };
}

/** Serves an object named by a signed URL; no bearer token needed (docs/api.md). */
downloadRoutes.on(["GET", "HEAD"], "/download/*", async (c) => {
  const keys = await loadKeys(c.env, c.get("config"));
  const check = await verifyDownloadUrl(keys.urlSigningKeys, new URL(c.req.url), nowSeconds());
  if (!check.ok)
    throw new ApiError(
      403,
      check.reason === "expired"
        ? "This download link has expired; ask the API for a new one."
        : "This download link is not valid (it was changed or is incomplete).",
    );
  const head = await c.env.BUCKET.head(check.grant.key);
  if (!head) throw new ApiError(404, "The file behind this download link no longer exists.");
  const range = parseRange(c.req.header("range"), head.size);
  if (range === "unsatisfiable") {
    c.header("Content-Range", `bytes */${head.size}`);
    throw new ApiError(416, `The requested range is outside the file (${head.size} bytes).`);
  }
  const headers = new Headers({
    "Content-Type": head.httpMetadata?.contentType ?? "application/octet-stream",
    "Content-Disposition": attachmentDisposition(check.grant.filename),
    ETag: head.httpEtag,
    "Accept-Ranges": "bytes",
    "Cache-Control": "private, no-transform",
    // A data name may end in .html: the browser must take the type above as it is.
    "X-Content-Type-Options": "nosniff",
    "Content-Length": String(range ? range.length : head.size),
  });
  if (range) headers.set("Content-Range", `bytes ${range.offset}-${range.offset + range.length - 1}/${head.size}`);
  const status = range ? 206 : 200;
  if (c.req.method === "HEAD") return new Response(null, { status, headers });
  const object = await c.env.BUCKET.get(check.grant.key, range ? { range } : {});
  if (!object) throw new ApiError(404, "The file behind this download link no longer exists.");
  return new Response(object.body, { status, headers });
});

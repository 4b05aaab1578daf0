/**
 * The upload floor (bench/README.md, "Upload floor"): a bare Worker that
 * streams a request's body, as it comes, into local R2 — no parsing, no
 * checks, no catalog. `npm run bench` uploads the same multipart bytes here
 * as to dqs; dqs's upload is reported as a fraction of this rate.
 */
interface Env {
  BUCKET: {
    put(key: string, value: ReadableStream<Uint8Array>): Promise<{ size: number } | null>;
  };
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    if (request.method !== "POST" || !request.body) return new Response("POST a body\n", { status: 405 });
    // The body has a Content-Length, so R2 takes the stream as it is (a known length).
    const stored = await env.BUCKET.put(`floor/${new URL(request.url).pathname.slice(1) || "body"}`, request.body);
    return Response.json({ Message: "stored", Size: stored?.size ?? null });
  },
};

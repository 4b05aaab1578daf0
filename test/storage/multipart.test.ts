import { describe, expect, it } from "vitest";
import {
  BODY_READ_MIN_BYTES,
  readMultipart,
  type FilePart,
  type MultipartFailure,
  type MultipartSpec,
} from "../../src/worker/storage/multipart";
import { BOUNDARY, bytesOf, multipartBody, type RawPart } from "../support/catalog";

const SPEC: MultipartSpec = {
  fileField: "Data",
  textFields: ["Schema", "ForceGenerateTableDefinition"],
  maxFileBytes: 10_000,
};
const CONTENT_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

interface Received {
  fields: Record<string, string>;
  filename: string;
  text: string;
}

/** A body that arrives in chunks of `chunkSize` bytes, as a network delivers it. */
function chunked(bytes: Uint8Array, chunkSize = 64): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + chunkSize));
      at += chunkSize;
    },
  });
}

async function readAll(file: FilePart): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of file.stream) text += decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}

async function collect(fields: ReadonlyMap<string, string>, file: FilePart): Promise<Received> {
  return { fields: Object.fromEntries(fields), filename: file.filename, text: await readAll(file) };
}

function read(parts: RawPart[], spec: MultipartSpec = SPEC) {
  return readMultipart<Received>(chunked(multipartBody(parts)), CONTENT_TYPE, spec, collect);
}

const file = (text: string, name = "Data"): RawPart => ({ name, filename: "data.csv", bytes: bytesOf(text) });

describe("readMultipart", () => {
  it("should hand the text parts and the file to the handler", async () => {
    const result = await read([
      { name: "Schema", value: '{"SchemaVersion":"1.0"}' },
      { name: "ForceGenerateTableDefinition", value: "true" },
      file("a,b\n1,2\n"),
    ]);

    expect(result).toEqual({
      ok: true,
      value: {
        fields: { Schema: '{"SchemaVersion":"1.0"}', ForceGenerateTableDefinition: "true" },
        filename: "data.csv",
        text: "a,b\n1,2\n",
      },
    });
  });

  it("should read a body that FormData built", async () => {
    const form = new FormData();
    form.append("Schema", "{}");
    form.append("Data", new File([bytesOf("x\n1\n")], "from-form.csv"));
    const request = new Request("http://dqs.test/", { method: "POST", body: form });

    const result = await readMultipart(request.body, request.headers.get("content-type") ?? "", SPEC, collect);

    expect(result).toEqual({
      ok: true,
      value: { fields: { Schema: "{}" }, filename: "from-form.csv", text: "x\n1\n" },
    });
  });

  it("should give the handler the file while the body is still arriving", async () => {
    const body = multipartBody([file("n\n".repeat(20_000))]);
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const at = pulled * 1024;
        if (at >= body.length) return controller.close();
        controller.enqueue(body.slice(at, at + 1024));
        pulled++;
      },
    });
    let pulledAtFirstChunk = -1;

    await readMultipart(stream, CONTENT_TYPE, { ...SPEC, maxFileBytes: 100_000 }, async (_fields, part) => {
      for await (const _chunk of part.stream) if (pulledAtFirstChunk < 0) pulledAtFirstChunk = pulled;
      return null;
    });

    expect(pulledAtFirstChunk).toBeGreaterThan(0);
    expect(pulledAtFirstChunk).toBeLessThan(Math.ceil(body.length / 1024) / 2);
  });

  it("should read a byte stream (as a request body is) in pieces of BODY_READ_MIN_BYTES, not as it was enqueued", async () => {
    const text = "0123456789abcde\n".repeat(Math.ceil((2.5 * BODY_READ_MIN_BYTES) / 16));
    const body = multipartBody([file(text)]);
    let at = 0;
    const stream = new ReadableStream({
      type: "bytes",
      pull(controller) {
        if (at >= body.length) return controller.close();
        controller.enqueue(body.slice(at, at + 4096));
        at += 4096;
      },
    });
    const sizes: number[] = [];
    let received = "";
    const decoder = new TextDecoder();

    const result = await readMultipart(
      stream,
      CONTENT_TYPE,
      { ...SPEC, maxFileBytes: 4 * BODY_READ_MIN_BYTES },
      async (_f, part) => {
        for await (const chunk of part.stream) {
          sizes.push(chunk.length);
          received += decoder.decode(chunk, { stream: true });
        }
        return sizes.length;
      },
    );

    expect(result).toEqual({ ok: true, value: sizes.length });
    expect(received + decoder.decode()).toBe(text);
    // Three reads (the last one short); busboy may hold back a few bytes that could start the boundary.
    expect(sizes.length).toBeLessThanOrEqual(4);
    expect(sizes.length).toBeGreaterThanOrEqual(3);
    for (const size of sizes.slice(0, 2)) expect(size).toBeGreaterThanOrEqual(BODY_READ_MIN_BYTES - 1024);
  });

  it("should read the body to its end when the handler stops reading the file early", async () => {
    const body = multipartBody([file("n\n".repeat(50_000))]);

    const result = await readMultipart(
      chunked(body, 1024),
      CONTENT_TYPE,
      { ...SPEC, maxFileBytes: 200_000 },
      async (_f, part) => {
        for await (const chunk of part.stream) return chunk.length;
        return 0;
      },
    );

    expect(result).toEqual({ ok: true, value: expect.any(Number) });
  });

  it.each(["application/json", "text/csv", ""])("should answer 415 for the content type '%s'", async (contentType) => {
    const result = await readMultipart(chunked(bytesOf("x")), contentType, SPEC, collect);

    expect(result).toEqual({
      ok: false,
      status: 415,
      message: "Send the upload as multipart/form-data with a 'Data' file part.",
    });
  });

  it("should answer 400 for a multipart content type without a boundary", async () => {
    const result = await readMultipart(chunked(bytesOf("x")), "multipart/form-data", SPEC, collect);

    expect(result).toMatchObject({
      ok: false,
      status: 400,
      message: expect.stringMatching(/^The multipart body cannot be read: /),
    });
  });

  it("should answer 400 for a request without a body", async () => {
    expect(await readMultipart(null, CONTENT_TYPE, SPEC, collect)).toEqual({
      ok: false,
      status: 400,
      message: "The request has no body; send a 'Data' file part.",
    });
  });

  it("should answer 400 when there is no file part", async () => {
    expect(await read([{ name: "Schema", value: "{}" }])).toEqual({
      ok: false,
      status: 400,
      message: "No 'Data' part: send the CSV file as a file part named 'Data'.",
    });
  });

  it("should answer 400 'multiple files' for a second file, even after the handler accepted the first", async () => {
    let handled = 0;

    const result = await readMultipart(
      chunked(multipartBody([file("a\n1\n"), file("b\n2\n")])),
      CONTENT_TYPE,
      SPEC,
      async (fields, part) => {
        handled++;
        return collect(fields, part);
      },
    );

    expect(handled).toBe(1);
    expect(result).toEqual({
      ok: false,
      status: 400,
      message: "Multiple files received; send exactly one file, as the 'Data' part.",
    });
  });

  it("should answer 400 for a file part under another name", async () => {
    expect(await read([file("a\n", "Upload")])).toEqual({
      ok: false,
      status: 400,
      message: "Unexpected file part 'Upload'; send the CSV file as the 'Data' part.",
    });
  });

  it("should answer 400 for a text part after the file", async () => {
    expect(await read([file("a\n1\n"), { name: "ForceGenerateTableDefinition", value: "true" }])).toEqual({
      ok: false,
      status: 400,
      message: "Send the 'ForceGenerateTableDefinition' part before the 'Data' part.",
    });
  });

  it("should answer 400 for an unknown text part", async () => {
    expect(await read([{ name: "Comment", value: "hi" }, file("a\n")])).toEqual({
      ok: false,
      status: 400,
      message: "Unexpected part 'Comment'; the parts are Schema, ForceGenerateTableDefinition, Data.",
    });
  });

  it("should answer 413 for a file over the size limit, and stop the handler's read", async () => {
    let handlerFailed = false;

    const result = await readMultipart(
      chunked(multipartBody([file("x".repeat(20_000))])),
      CONTENT_TYPE,
      { ...SPEC, maxFileBytes: 1000 },
      async (fields, part) => {
        try {
          return await collect(fields, part);
        } catch (error) {
          handlerFailed = true;
          throw error;
        }
      },
    );

    expect(result).toEqual({
      ok: false,
      status: 413,
      message: "The file is larger than the upload limit of 1000 bytes.",
    });
    expect(handlerFailed).toBe(true);
  });

  it("should answer 400, not throw, when the body breaks off inside the file", async () => {
    const body = multipartBody([file("a\n".repeat(1000))]);

    const result = await readMultipart(chunked(body.slice(0, 1000)), CONTENT_TYPE, SPEC, collect);

    expect(result).toEqual({
      ok: false,
      status: 400,
      message: "The multipart body is malformed: Unexpected end of form.",
    });
  });

  it("should pass on a failure the handler returns", async () => {
    const refusal: MultipartFailure = { ok: false, status: 400, message: "row 1 is wrong" };

    const result = await readMultipart(chunked(multipartBody([file("a\n")])), CONTENT_TYPE, SPEC, async (_f, part) => {
      await readAll(part);
      return refusal;
    });

    expect(result).toEqual(refusal);
  });

  it("should let an error of the handler itself through", async () => {
    const attempt = readMultipart(chunked(multipartBody([file("a\n")])), CONTENT_TYPE, SPEC, async () => {
      throw new Error("storage is down");
    });

    await expect(attempt).rejects.toThrow("storage is down");
  });
});

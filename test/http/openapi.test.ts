import { beforeAll, describe, expect, it } from "vitest";
import { call, ORIGIN } from "../support/http";

interface Schema {
  $ref?: string;
  type?: string;
  format?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
}

interface Operation {
  tags?: string[];
  security?: Record<string, string[]>[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<
    string,
    { description: string; headers?: Record<string, unknown>; content?: Record<string, { schema: Schema }> }
  >;
}

interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  servers?: { url: string }[];
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; securitySchemes: Record<string, Record<string, string>> };
}

let doc: OpenApiDocument;

beforeAll(async () => {
  const response = await call("/v1/openapi.json");
  expect(response.status).toBe(200);
  doc = await response.json<OpenApiDocument>();
});

/** Follows a `$ref` into components.schemas. */
function resolve(schema: Schema | undefined): Schema {
  if (!schema) throw new Error("no schema");
  if (!schema.$ref) return schema;
  const name = schema.$ref.replace("#/components/schemas/", "");
  const target = doc.components.schemas[name];
  if (!target) throw new Error(`unresolved ${schema.$ref}`);
  return resolve(target);
}

function operation(path: string, method: string): Operation {
  const found = doc.paths[path]?.[method];
  if (!found) throw new Error(`${method.toUpperCase()} ${path} is not documented`);
  return found;
}

function jsonSchema(entry: { content?: Record<string, { schema: Schema }> } | undefined): Schema {
  return resolve(entry?.content?.["application/json"]?.schema);
}

function envelopeStatusOf(schema: Schema): Schema {
  return resolve(resolve(schema).properties?.Status);
}

describe("GET /v1/openapi.json", () => {
  it("should be an OpenAPI 3.1 document of version 0.0.0", () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info.version).toBe("0.0.0");
  });

  it("should point at this deployment's /v1", () => {
    expect(doc.servers?.map((server) => server.url)).toContain(`${ORIGIN}/v1`);
  });

  it("should declare the tags of the interface, experimental included", () => {
    expect(doc.tags?.map((tag) => tag.name).sort()).toEqual(
      ["account", "auth", "data", "dataset", "experimental", "query", "user"].sort(),
    );
    expect(doc.tags?.find((tag) => tag.name === "experimental")?.description).toMatch(/not for general use/);
  });

  it("should document GET /auth as a public redirect", () => {
    const auth = operation("/auth", "get");

    expect(auth.tags).toContain("auth");
    expect(Object.keys(auth.responses)).toContain("302");
    expect(auth.security ?? []).toEqual([]);
  });

  it("should document POST /auth/token with RefreshTokenRequest in and JwtResponse out", () => {
    const token = operation("/auth/token", "post");

    expect(token.tags).toContain("auth");
    expect(token.security ?? []).toEqual([]);
    const request = jsonSchema(token.requestBody);
    expect(request.required).toContain("RefreshToken");
    expect(request.properties?.RefreshToken?.type).toBe("string");

    const data = resolve(jsonSchema(token.responses["200"]).properties?.Data);
    expect(Object.keys(data.properties ?? {}).sort()).toEqual(
      ["AccessToken", "AccessTokenExpiresOn", "RefreshToken", "RefreshTokenExpiresOn", "TokenType"].sort(),
    );
    expect(data.properties?.AccessTokenExpiresOn?.format).toBe("date-time");
    expect(data.properties?.RefreshTokenExpiresOn?.format).toBe("date-time");
    expect(envelopeStatusOf(jsonSchema(token.responses["401"])).properties?.Code?.type).toBe("integer");
  });

  it("should document GET /me/datasets with bearer security and DatasetListResponse", () => {
    const me = operation("/me/datasets", "get");

    expect(me.tags).toContain("user");
    expect(me.security).toEqual([{ Bearer: [] }]);
    const data = resolve(jsonSchema(me.responses["200"]).properties?.Data);
    expect(data.properties?.DatasetCount?.type).toBe("integer");
    const item = resolve(resolve(data.properties?.DatasetList).items);
    expect(Object.keys(item.properties ?? {}).sort()).toEqual(["AccountName", "DatasetName"]);
    expect(Object.keys(me.responses)).toContain("401");
  });

  it("should document GET /data/.../metadata/storage as experimental, with bearer security and DataStorageResponse", () => {
    const storage = operation("/data/{AccountName}/{DatasetName}/{DataName}/metadata/storage", "get");

    expect(storage.tags).toEqual(expect.arrayContaining(["data", "experimental"]));
    expect(storage.security).toEqual([{ Bearer: [] }]);
    const data = resolve(jsonSchema(storage.responses["200"]).properties?.Data);
    expect(Object.keys(data.properties ?? {}).sort()).toEqual(
      [
        "ColumnImageBytes",
        "DeliveryType",
        "QueryReady",
        "RowCount",
        "Size",
        "TableStore",
        "UploadedAt",
        "UploadedBy",
        "Version",
      ].sort(),
    );
    expect(data.properties?.QueryReady?.type).toBe("boolean");
    expect(Object.keys(storage.responses)).toEqual(expect.arrayContaining(["200", "401", "404"]));
  });

  it("should define the bearer scheme as HTTP bearer with JWT", () => {
    expect(doc.components.securitySchemes.Bearer).toMatchObject({
      type: "http",
      scheme: "bearer",
      bearerFormat: "JWT",
    });
  });

  it("should describe the envelope's Status with Code and Message", () => {
    const status = resolve(doc.components.schemas.ApiResponseStatus);

    expect(status.properties?.Code?.type).toBe("integer");
    expect(status.properties?.Message?.type).toBe("string");
  });

  it("should tag the console's catalog calls experimental: the caller's catalog and a dataset's grants", () => {
    expect(operation("/me/catalog", "get").tags).toEqual(expect.arrayContaining(["user", "experimental"]));
    expect(operation("/dataset/{AccountName}/{DatasetName}/grants", "get").tags).toEqual(
      expect.arrayContaining(["dataset", "experimental"]),
    );
  });

  it("should tag logout experimental", () => {
    expect(operation("/auth/logout", "post").tags).toContain("experimental");
  });
});

/** Every operation of the document, as "GET /me" and its definition. */
function operations(): [string, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, found]): [string, Operation] => [`${method.toUpperCase()} ${path}`, found]),
  );
}

describe("the responses every operation shares", () => {
  it("should declare X-Request-Id on every response, Location on redirects and Retry-After on 429 and 503", () => {
    for (const [name, found] of operations())
      for (const [status, response] of Object.entries(found.responses)) {
        const headers = Object.keys(response.headers ?? {});
        expect(headers, `${name} ${status}`).toContain("X-Request-Id");
        if (["302", "303"].includes(status)) expect(headers, `${name} ${status}`).toContain("Location");
        if (["429", "503"].includes(status)) expect(headers, `${name} ${status}`).toContain("Retry-After");
        if (status === "401") expect(headers, `${name} ${status}`).toContain("WWW-Authenticate");
      }
  });

  it("should document 401, 429 and 503 on every bearer operation", () => {
    const bearer = operations().filter(([, found]) => (found.security ?? []).length > 0);

    expect(bearer.length).toBeGreaterThan(20);
    for (const [name, found] of bearer)
      expect(Object.keys(found.responses), name).toEqual(expect.arrayContaining(["401", "429", "503"]));
  });

  it("should document the client address limit's 429 on the login and refresh endpoints", () => {
    for (const [path, method] of [
      ["/auth", "get"],
      ["/auth/callback", "get"],
      ["/auth/terms", "get"],
      ["/auth/terms", "post"],
      ["/auth/token", "post"],
      ["/auth/code", "post"],
    ])
      expect(operation(path!, method!).responses["429"]?.description, `${method} ${path}`).toMatch(/client address/);
  });

  it("should document the ends of a login: a page or the envelope for 400, 303 into the console", () => {
    for (const [path, method] of [
      ["/auth/callback", "get"],
      ["/auth/terms", "post"],
    ]) {
      const found = operation(path!, method!);
      expect(Object.keys(found.responses["400"]?.content ?? {}).sort()).toEqual(["application/json", "text/html"]);
      expect(Object.keys(found.responses["303"]?.headers ?? {})).toContain("Location");
    }
  });

  it("should require the upload's Data part", () => {
    const upload = operation("/data/{AccountName}/{DatasetName}/{DataName}", "post");
    const form = resolve(upload.requestBody?.content["multipart/form-data"]?.schema);

    expect(form.required).toEqual(["Data"]);
  });
});

describe("GET /v1/docs", () => {
  it("should answer a page for people that loads the document", async () => {
    const response = await call("/v1/docs");

    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).toMatch(/swagger/i);
    const starter = /<script src="(\/assets\/docs\.js)"><\/script>/.exec(html)?.[1];
    expect(starter).toBeDefined();
    expect(await (await call(starter!)).text()).toContain("/v1/openapi.json");
  });
});

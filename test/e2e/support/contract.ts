import { getHttpOperationsFromSpec } from "@stoplight/prism-http";
// Prism's own request and response validators: the package exports them only from here.
import { validateInput, validateOutput } from "@stoplight/prism-http/dist/validator";

type Operation = Awaited<ReturnType<typeof getHttpOperationsFromSpec>>[number];

/**
 * Headers every response may carry that say nothing about the operation (transport, caching, the security
 * policy, CORS): any other header must be declared in the document's response.
 */
const GENERIC_HEADERS = [
  /^content-(type|length|encoding)$/,
  /^(date|connection|keep-alive|transfer-encoding|vary|cache-control|server)$/,
  /^access-control-/,
  /^(content-security-policy|cross-origin-.*|origin-agent-cluster|referrer-policy|strict-transport-security)$/,
  /^x-(content-type-options|dns-prefetch-control|download-options|frame-options|permitted-cross-domain-policies|xss-protection)$/,
];

/** What the request is, as far as the document can tell. */
export type RequestCheck = "valid" | "invalid" | "unchecked";

export interface ContractInit extends RequestInit {
  /**
   * "valid" (the default): the request must satisfy the document; "invalid": one the document says is wrong, sent
   * to see the service refuse it; "unchecked": one the document cannot judge (a name the service refuses).
   */
  request?: RequestCheck;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

/** The document's operation for a method and path, or the methods the path has when that method is not one. */
function match(operations: Operation[], method: string, path: string): Operation | string[] | null {
  const onPath = operations.filter((operation) => templateRegex(operation.path).test(path));
  const found = onPath.find((operation) => operation.method === method);
  if (found) return found;
  return onPath.length > 0 ? onPath.map((operation) => operation.method.toUpperCase()) : null;
}

function templateRegex(template: string): RegExp {
  const segments = template
    .split("/")
    .map((segment) => (/^\{[^}]+\}$/.test(segment) ? "[^/]+" : segment.replace(/[.*+?^$()|[\]\\]/g, "\\$&")));
  return new RegExp(`^${segments.join("/")}$`);
}

/** Response object schemas that list their properties refuse others: a field the document does not name fails. */
function closeObjects(schema: unknown): void {
  if (Array.isArray(schema)) return schema.forEach(closeObjects);
  if (schema === null || typeof schema !== "object") return;
  const node = schema as Record<string, unknown>;
  if (node.properties && node.additionalProperties === undefined) node.additionalProperties = false;
  for (const value of Object.values(node)) closeObjects(value);
}

function parseBody(text: string, contentType: string | null): unknown {
  if (text === "") return undefined;
  return /^application\/(.+\+)?json/i.test(contentType ?? "") ? (JSON.parse(text) as unknown) : text;
}

/** The request body as Prism reads it: JSON parsed, form and multipart bodies as text. */
function requestBody(body: string | Uint8Array | undefined, contentType: string | null): unknown {
  if (body === undefined) return undefined;
  const text = typeof body === "string" ? body : new TextDecoder().decode(body);
  return parseBody(text, contentType);
}

function problemsOf(result: ReturnType<typeof validateOutput> | ReturnType<typeof validateInput>): string[] {
  return result._tag === "Left" ? result.left.map((diagnostic) => diagnostic.message) : [];
}

/**
 * A client of the local service that checks every exchange against the
 * served OpenAPI document with Stoplight Prism's validators (the status is
 * documented, the body and headers match it, the request satisfies it), and
 * that no header the document leaves out is sent. Problems are collected,
 * not thrown, so that one run lists them all.
 */
export class ContractClient {
  readonly problems: string[] = [];
  /** Statuses seen for each operation, keyed "GET /me". */
  readonly seen = new Map<string, Set<number>>();

  private constructor(
    private readonly baseUrl: string,
    readonly operations: Operation[],
  ) {}

  /** Reads the document the service serves, as it serves it. */
  static async open(baseUrl: string): Promise<ContractClient> {
    const response = await fetch(`${baseUrl}/v1/openapi.json`);
    if (response.status !== 200) throw new Error(`GET /v1/openapi.json answered ${response.status}`);
    const document = (await response.json()) as Record<string, unknown>;
    closeObjects(document.components);
    closeObjects(document.paths);
    return new ContractClient(baseUrl, await getHttpOperationsFromSpec(document));
  }

  /** Sends a request under /v1 and checks the exchange; redirects are not followed. */
  async send(path: string, init: ContractInit = {}): Promise<Answer> {
    const { request: check = "valid", ...rest } = init;
    const method = (rest.method ?? "GET").toLowerCase();
    const url = new URL(`/v1${path}`, this.baseUrl);
    const response = await fetch(url, { ...rest, redirect: "manual" });
    const body = parseBody(await response.text(), response.headers.get("content-type"));
    const where = `${method.toUpperCase()} ${path} → ${response.status}`;
    const found = match(this.operations, method, url.pathname.slice("/v1".length));
    const report = (problems: string[]) => this.problems.push(...problems.map((problem) => `${where}: ${problem}`));

    if (found === null) report(["the document has no such path"]);
    else if (Array.isArray(found)) report(this.wrongMethod(found, response, body));
    else {
      const key = `${found.method.toUpperCase()} ${found.path}`;
      this.seen.set(key, (this.seen.get(key) ?? new Set()).add(response.status));
      const headers = Object.fromEntries(response.headers);
      report(problemsOf(validateOutput({ resource: found, element: { statusCode: response.status, headers, body } })));
      report(this.undeclaredHeaders(found, response));
      const documented = found.responses.find((entry) => entry.code === String(response.status));
      if (documented && !documented.contents?.length && body !== undefined)
        report(["a body the document does not declare"]);
      if (check !== "unchecked") report(this.requestProblems(found, url, rest, check));
    }
    return { status: response.status, headers: response.headers, body };
  }

  /** A method the path does not have: 405 in the envelope, its Allow naming the methods the document gives it. */
  private wrongMethod(documented: string[], response: Response, body: unknown): string[] {
    const allow = (response.headers.get("allow") ?? "").split(/,\s*/).sort().join(", ");
    // HEAD is implied by GET (RFC 9110 §9.3.2), and OpenAPI lists it only when it differs.
    const expected = [...documented, ...(documented.includes("GET") ? ["HEAD"] : [])].sort().join(", ");
    const problems: string[] = [];
    if (response.status !== 405) problems.push("a method the path does not document did not answer 405");
    if (allow !== expected) problems.push(`Allow is "${allow}", the document gives ${expected}`);
    if ((body as { Status?: { Code?: unknown } } | undefined)?.Status?.Code !== 405) problems.push("no 405 envelope");
    return problems;
  }

  private undeclaredHeaders(operation: Operation, response: Response): string[] {
    const declared = new Set(
      operation.responses
        .find((entry) => entry.code === String(response.status))
        ?.headers?.map((header) => header.name.toLowerCase()) ?? [],
    );
    return [...response.headers.keys()]
      .filter((name) => !declared.has(name) && !GENERIC_HEADERS.some((pattern) => pattern.test(name)))
      .map((name) => `header ${name} is not in the document`);
  }

  private requestProblems(operation: Operation, url: URL, init: RequestInit, check: RequestCheck): string[] {
    const headers = Object.fromEntries(new Headers(init.headers));
    const body = init.body as string | Uint8Array | undefined;
    // Prism checks the body's media type only when the length says there is one.
    if (body !== undefined) headers["content-length"] = String(new Blob([body]).size);
    const query: Record<string, string> = Object.fromEntries(url.searchParams);
    type Request = Parameters<typeof validateInput>[0]["element"];
    const element: Request = {
      method: operation.method as Request["method"],
      url: { path: url.pathname.slice("/v1".length), query },
      headers,
      body: requestBody(body, headers["content-type"] ?? null),
    };
    const problems = problemsOf(validateInput({ resource: operation, element }));
    if (check === "valid") return problems.map((problem) => `request: ${problem}`);
    return problems.length > 0 ? [] : ["a request sent as invalid satisfies the document"];
  }
}

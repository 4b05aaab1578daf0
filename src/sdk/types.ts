import type { components, paths } from "./openapi-types";

// Names for the wire shapes of the service's own OpenAPI document
// (src/sdk/openapi.json, generated into openapi-types.ts). Nothing here is
// written by hand but the names.

type Schemas = components["schemas"];

export type DatasetInfo = Schemas["DatasetInfo"];
export type DataInfo = Schemas["DataInfo"];
export type DataStorage = Schemas["DataStorageResponse"]["Data"];
export type QueryStatus = Schemas["QueryStatus"];
export type QueryState = QueryStatus["Status"];
export type QueryParameters = Schemas["QueryParameters"];
export type QueryValidation = Schemas["QueryValidationResponse"]["Data"];
/** The latest attempt to deliver a query's completion webhook, as its status shows it. */
export type WebhookDelivery = NonNullable<NonNullable<QueryStatus["Callback"]>["LastDelivery"]>;
export type DatasetSettings = Schemas["DatasetSettings"];
export type Permission = Schemas["GrantRequest"]["Permission"];
export type JwtData = Schemas["JwtResponse"]["Data"];
export type LoginCodeData = Schemas["LoginCodeResponse"]["Data"];
export type Me = Schemas["MeResponse"]["Data"];
export type ApiResponseStatus = Schemas["ApiResponseStatus"];
/** One page of a result's rows as the service sends it (experimental GET …/results/rows). */
export type ResultRowsPage = Schemas["ResultRows"];
/** The representations a result can be downloaded in. */
export type ResultFormat = NonNullable<
  NonNullable<paths["/query/{QueryId}/results/rawdata"]["get"]["parameters"]["query"]>["format"]
>;

/** The DataSchema structure the Schema string serialises (docs/api.md). */
export interface DataSchema {
  SchemaVersion?: string;
  TableDefinition?: {
    Columns: { Name: string; DataType: { DataType: string; DataTypeOptions?: Record<string, unknown> } }[];
  };
  DataSpecification?: {
    FormatType?: string;
    DeliveryType?: string;
    DataOptions?: Record<string, unknown>;
  };
}

/** HTTP methods the document uses. */
export type Method = "get" | "post" | "put" | "delete";

/** An operation of the document: a path and a method it defines. */
export type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

/** Path templates that define method M. */
export type PathsWith<M extends Method> = {
  [P in keyof paths]: paths[P][M] extends undefined | never ? never : P;
}[keyof paths];

type ResponsesOf<P extends keyof paths, M extends Method> = Operation<P, M> extends { responses: infer R } ? R : never;

/** The JSON body of an operation's success (200 or 201) response. */
export type SuccessJson<P extends keyof paths, M extends Method> = {
  [S in keyof ResponsesOf<P, M>]: S extends 200 | 201
    ? ResponsesOf<P, M>[S] extends { content: { "application/json": infer B } }
      ? B
      : never
    : never;
}[keyof ResponsesOf<P, M>];

/** The path parameters of an operation. */
export type PathParams<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { parameters: { path: infer T } } ? (T extends Record<string, string> ? T : never) : never;

/** The JSON request body of an operation, or never. */
export type JsonRequest<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;

/** The query parameters of an operation. */
export type QueryParams<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { parameters: { query?: infer Q } } ? Q : never;

// The dqs SDK: a typed, fetch-based client for Node ≥ 20, browsers and Workers.
export { DqsClient } from "./client";
export type {
  DqsClientOptions,
  LoopbackLogin,
  QueryOptions,
  QueryPage,
  QueryRows,
  QueryStream,
  ResultRows,
} from "./client";
export { DqsApiError, DqsNetworkError, DqsQueryError, NotLoggedInError } from "./errors";
export type { UploadData, UploadOptions } from "./multipart";
export { createPkce, randomBase64url, type Pkce } from "./pkce";
export {
  columnsOf,
  convert,
  parseResultCsv,
  readCsvHead,
  rowsOfPage,
  type ResultColumn,
  type Row,
  type Value,
} from "./rows";
export { MemoryTokenStore, tokenSetFromWire, type TokenSet, type TokenStore } from "./tokens";
export { filenameOf, type Download, type FetchLike } from "./transport";
export type * from "./types";
export type { components, paths } from "./openapi-types";

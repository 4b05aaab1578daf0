import { canonicalParameters, parameterProblem, type Parameters } from "./sql/parameters";

/** What a query runs: its SQL text and the values of its placeholders. */
export interface QueryText {
  sql: string;
  parameters: Parameters | null;
}

/**
 * Why `POST /v1/query` refuses a query with 400, or null: empty or over-long
 * SQL or Parameters, or Parameters that do not match its placeholders. Validation reports
 * the same message.
 */
export function queryTextProblem(query: QueryText, maxSqlLength: number): string | null {
  if (query.sql.trim() === "") return "Sql is empty; send one SELECT statement.";
  if (query.sql.length > maxSqlLength)
    return `Sql is ${query.sql.length} characters long; the limit is ${maxSqlLength}.`;
  // Parameters are stored with the query and shown in its status and the history, so they are held to Sql's limit too.
  const parametersLength = query.parameters ? canonicalParameters(query.parameters).length : 0;
  if (parametersLength > maxSqlLength)
    return `Parameters is ${parametersLength} characters long as JSON; the limit is ${maxSqlLength}, as for Sql.`;
  return parameterProblem(query.sql, query.parameters);
}

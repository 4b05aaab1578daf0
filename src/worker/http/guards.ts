import { canRead, canWrite, findDataset, type Access, type DatasetRecord } from "../catalog/access";
import { ACCOUNT_NAME_RULE, DATA_NAME_RULE, isAccountName, isDataName, isDatasetName } from "../catalog/names";
import type { AppContext } from "./context";
import { badRequest, notFound } from "./errors";

/** One message for "does not exist" and "may not see", so a 404 tells nothing about private datasets. */
export function datasetNotFound(account: string, dataset: string) {
  return notFound(`Dataset ${account}/${dataset} not found, or you may not access it.`);
}

/** Writes name the rule a name breaks (docs/api.md). */
export function validateNamesForWrite(names: { account: string; dataset: string; data?: string }): void {
  if (!isAccountName(names.account))
    throw badRequest(`AccountName '${names.account}' is invalid: use ${ACCOUNT_NAME_RULE}.`);
  if (!isDatasetName(names.dataset))
    throw badRequest(`DatasetName '${names.dataset}' is invalid: use ${ACCOUNT_NAME_RULE}.`);
  if (names.data !== undefined && !isDataName(names.data))
    throw badRequest(`DataName '${names.data}' is invalid: use ${DATA_NAME_RULE}.`);
}

/** The dataset if the caller's access allows `need`; null when it does not, or the dataset does not exist. */
export async function allowedDataset(
  c: AppContext,
  account: string,
  dataset: string,
  need: "read" | "write" | "owner",
): Promise<{ dataset: DatasetRecord; access: Access } | null> {
  const found = await findDataset(c.env.DB, c.get("principal"), account, dataset);
  const allowed =
    found !== null &&
    (need === "read" ? canRead(found.access) : need === "write" ? canWrite(found.access) : found.access === "owner");
  return allowed ? found : null;
}

/** The dataset if the caller's access allows `need`, else the same 404 as for a dataset that does not exist. */
export async function datasetFor(
  c: AppContext,
  account: string,
  dataset: string,
  need: "read" | "write" | "owner",
): Promise<{ dataset: DatasetRecord; access: Access }> {
  const found = await allowedDataset(c, account, dataset, need);
  if (!found) throw datasetNotFound(account, dataset);
  return found;
}

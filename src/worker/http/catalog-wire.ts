import type { DatasetRecord } from "../catalog/access";
import { envelope } from "./schemas";

/** DatasetListResponse body from catalog records. */
export function datasetList(datasets: DatasetRecord[]) {
  return {
    ...envelope(200, "OK"),
    Data: {
      DatasetCount: datasets.length,
      DatasetList: datasets.map((d) => ({ AccountName: d.accountName, DatasetName: d.name })),
    },
  };
}

import { useEffect, useState } from "preact/hooks";
import { api, dataPath, ok, type DataStorage } from "../api";
import { forgetColumns } from "../catalog-names";
import { openInEditor } from "../editor-store";
import { formatBytes, formatCount, formatTime } from "../format";
import { followQuery, submitQuery } from "../query-runner";
import { href, navigate } from "../route";
import { loadResult, type ResultData } from "../results";
import { sqlName } from "../sql-names";
import { storedColumns, type DeclaredColumn } from "../upload-file";
import { useSession } from "./App";
import { ResultView } from "./ResultView";
import { flash, messageOf, Notice, PageTitle, Spinner } from "./ui";
import { Upload } from "./Upload";

const PREVIEW_ROWS = 20;

export function ItemPage(props: { account: string; dataset: string; item: string }) {
  const { catalog, refreshCatalog } = useSession();
  const entry = catalog?.find((e) => e.AccountName === props.account && e.DatasetName === props.dataset);
  const canWrite = entry?.Access === "owner" || entry?.Access === "write";
  const [storage, setStorage] = useState<DataStorage | null>(null);
  const [columns, setColumns] = useState<DeclaredColumn[] | null>(null);
  const [storedAs, setStoredAs] = useState<Map<string, string>>(new Map());
  const [preview, setPreview] = useState<ResultData | null>(null);
  const [previewError, setPreviewError] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [replacing, setReplacing] = useState(false);
  const [replaced, setReplaced] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const path = { AccountName: props.account, DatasetName: props.dataset, DataName: props.item };
  const name = sqlName(props.account, props.dataset, props.item);

  useEffect(() => {
    const controller = new AbortController();
    setPreview(null);
    Promise.all([
      ok(api.GET("/data/{AccountName}/{DatasetName}/{DataName}/metadata/storage", { params: { path } })),
      ok(api.GET("/data/{AccountName}/{DatasetName}/{DataName}/metadata/schema", { params: { path } })),
    ]).then(
      ([stored, schema]) => {
        setStorage(stored.Data);
        setColumns(storedColumns(schema.Data.Schema));
        setStoredAs(storedForms(schema.Data.Schema));
      },
      (caught) => setError(messageOf(caught)),
    );
    // The preview is a query like any other: the first rows, as the engine reads them.
    (async () => {
      const first = await submitQuery(`SELECT * FROM ${name} LIMIT ${PREVIEW_ROWS}`);
      const last = await followQuery(first, () => {}, controller.signal);
      if (controller.signal.aborted) return;
      if (last.Status !== "succeeded") throw new Error(`The preview query ${last.Status}: ${last.Message}`);
      setPreview(await loadResult(last, controller.signal));
    })().catch((caught) => {
      if (!controller.signal.aborted) setPreviewError(messageOf(caught));
    });
    return () => controller.abort();
  }, [props.account, props.dataset, props.item, version]);

  async function remove() {
    if (!confirm(`Delete ${props.item}? Queries can no longer read it.`)) return;
    try {
      await ok(api.DELETE("/data/{AccountName}/{DatasetName}/{DataName}", { params: { path } }));
      forgetColumns();
      await refreshCatalog();
      flash(`${props.item} was deleted.`);
      navigate({ view: "dataset", account: props.account, dataset: props.dataset });
    } catch (caught) {
      setError(messageOf(caught));
    }
  }

  return (
    <>
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href({ view: "datasets" })}>Datasets</a> <span aria-hidden="true">/</span>{" "}
        <a href={href({ view: "dataset", account: props.account, dataset: props.dataset })}>
          {props.account}/{props.dataset}
        </a>
      </nav>
      <PageTitle
        actions={
          <>
            <button type="button" onClick={() => openInEditor(`SELECT *\nFROM ${name}\nLIMIT 100`)}>
              Query
            </button>
            <a
              class="button secondary"
              href={`/v1/data/${dataPath(props.account, props.dataset, props.item)}/rawdata`}
              download
            >
              Download
            </a>
            {canWrite && (
              <>
                <button
                  type="button"
                  class="secondary"
                  onClick={() => {
                    setReplacing(!replacing);
                    setReplaced(null);
                  }}
                  aria-expanded={replacing}
                >
                  Replace
                </button>
                <button type="button" class="danger" onClick={() => void remove()}>
                  Delete
                </button>
              </>
            )}
          </>
        }
      >
        {props.item}
      </PageTitle>
      {error && <Notice kind="error">{error}</Notice>}
      {replaced && !replacing && <Notice kind="success">{replaced}</Notice>}
      {replacing && (
        <Upload
          account={props.account}
          dataset={props.dataset}
          existing={[props.item]}
          replace={props.item}
          onUploaded={async () => {
            forgetColumns();
            setReplacing(false);
            setReplaced(`${props.item} was replaced; the figures and rows below are the new file's.`);
            setVersion(version + 1);
            await refreshCatalog();
          }}
        />
      )}
      <section class="card" aria-labelledby="about-title">
        <h2 id="about-title">About</h2>
        {storage ? (
          <dl class="facts">
            <dt>Rows</dt>
            <dd>{formatCount(storage.RowCount)}</dd>
            <dt>Size</dt>
            <dd>
              {formatBytes(storage.Size)} {storage.DeliveryType === "GZIP" ? "(gzip)" : ""}
            </dd>
            <dt>Uploaded</dt>
            <dd>
              {formatTime(storage.UploadedAt)}
              {storage.UploadedBy ? ` by ${storage.UploadedBy}` : ""}
            </dd>
            <dt>In SQL</dt>
            <dd>
              <code>{name}</code>
            </dd>
            <dt>Query-ready</dt>
            <dd>{storage.QueryReady ? "yes" : "being prepared (queries read the CSV meanwhile)"}</dd>
          </dl>
        ) : (
          !error && <Spinner label="Loading…" />
        )}
      </section>
      <section class="card" aria-labelledby="schema-title">
        <h2 id="schema-title">Schema</h2>
        {columns && (
          <div class="table-wrap">
            <table class="schema">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Column</th>
                  <th scope="col">Type</th>
                  <th scope="col">May be empty (NULL)</th>
                </tr>
              </thead>
              <tbody>
                {columns.map((column, index) => (
                  <tr key={column.name}>
                    <td>{index + 1}</td>
                    <th scope="row">{column.name}</th>
                    <td>
                      <span class="col-type">{column.type}</span>
                      {storedAs.has(column.name) && (
                        <small class="stored-as">
                          {" "}
                          stored as <code>{storedAs.get(column.name)}</code>
                          {column.type === "TIMESTAMP" ? " (UTC)" : ""}
                        </small>
                      )}
                    </td>
                    <td>{column.nullable ? "yes" : "no"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <section class="card" aria-labelledby="preview-title">
        <h2 id="preview-title">First {PREVIEW_ROWS} rows</h2>
        {previewError && <Notice kind="error">{previewError}</Notice>}
        {!preview && !previewError && <Spinner label="Reading the first rows…" />}
        {preview && <ResultView queryId={null} result={preview} compact />}
      </section>
    </>
  );
}

/** How the service stores each column's values where that differs from the file (DataTypeOptions.StoredAs), by name. */
function storedForms(schema: string): Map<string, string> {
  const parsed = JSON.parse(schema) as {
    TableDefinition?: { Columns: { Name: string; DataType: { DataTypeOptions?: { StoredAs?: string } } }[] };
  };
  const forms = new Map<string, string>();
  for (const column of parsed.TableDefinition?.Columns ?? []) {
    const form = column.DataType.DataTypeOptions?.StoredAs;
    if (form) forms.set(column.Name, form);
  }
  return forms;
}

import { useCallback, useEffect, useState } from "preact/hooks";
import { api, ok, type DataInfo } from "../api";
import { forgetColumns } from "../catalog-names";
import { openInEditor } from "../editor-store";
import { formatBytes, formatCount, formatTime } from "../format";
import { href, navigate } from "../route";
import { sqlName } from "../sql-names";
import { useSession } from "./App";
import { Sharing } from "./Sharing";
import { Upload } from "./Upload";
import { Empty, messageOf, Notice, PageTitle, Spinner, takeFlash } from "./ui";

export function DatasetPage(props: { account: string; dataset: string }) {
  const { catalog, refreshCatalog } = useSession();
  const entry = catalog?.find((e) => e.AccountName === props.account && e.DatasetName === props.dataset);
  const access = entry?.Access ?? "read";
  const [items, setItems] = useState<DataInfo[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [flashed] = useState(takeFlash);

  const loadItems = useCallback(async () => {
    try {
      const body = await ok(
        api.GET("/dataset/{AccountName}/{DatasetName}/data", {
          params: { path: { AccountName: props.account, DatasetName: props.dataset } },
        }),
      );
      setItems(body.Data.DataList);
      setError(null);
    } catch (caught) {
      setError(messageOf(caught));
    }
  }, [props.account, props.dataset]);
  useEffect(() => void loadItems(), [loadItems]);

  const uploaded = async () => {
    forgetColumns();
    await loadItems();
    await refreshCatalog();
  };

  return (
    <>
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href({ view: "datasets" })}>Datasets</a> <span aria-hidden="true">/</span> {props.account}
      </nav>
      <PageTitle actions={entry && <span class={`badge ${entry.Visibility}`}>{entry.Visibility}</span>}>
        {props.account}/{props.dataset}
      </PageTitle>
      {entry?.Description && <p class="lead">{entry.Description}</p>}
      {error && <Notice kind="error">{error}</Notice>}
      {flashed && <Notice kind="success">{flashed}</Notice>}
      <section class="card" aria-labelledby="items-title">
        <h2 id="items-title">Data items</h2>
        {items === null && !error && <Spinner label="Loading the data items…" />}
        {items?.length === 0 && (
          <Empty title="No data items yet.">
            {access === "read"
              ? "The owner has not uploaded any files to this dataset."
              : "Upload CSV files below: drag them onto the box, or pick them."}
          </Empty>
        )}
        {items && items.length > 0 && (
          <div class="table-wrap">
            <table class="items">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col" class="num">
                    Rows
                  </th>
                  <th scope="col" class="num">
                    Size
                  </th>
                  <th scope="col">Uploaded</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {items.map((item) => (
                  <tr key={item.DataName}>
                    <th scope="row">
                      <a
                        href={href({
                          view: "item",
                          account: props.account,
                          dataset: props.dataset,
                          item: item.DataName,
                        })}
                      >
                        {item.DataName}
                      </a>
                    </th>
                    <td class="num">{formatCount(item.RowCount)}</td>
                    <td class="num">{formatBytes(item.Size)}</td>
                    <td>{formatTime(item.UploadedAt)}</td>
                    <td class="actions">
                      <button
                        type="button"
                        class="small"
                        onClick={() =>
                          openInEditor(
                            `SELECT *\nFROM ${sqlName(props.account, props.dataset, item.DataName)}\nLIMIT 100`,
                          )
                        }
                        aria-label={`Query ${item.DataName}`}
                      >
                        Query
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {(access === "owner" || access === "write") && (
        <Upload
          account={props.account}
          dataset={props.dataset}
          existing={(items ?? []).map((item) => item.DataName)}
          onUploaded={uploaded}
        />
      )}
      {access === "owner" && entry && (
        <>
          <Sharing account={props.account} dataset={props.dataset} />
          <Settings account={props.account} dataset={props.dataset} visibility={entry.Visibility} />
        </>
      )}
    </>
  );
}

function Settings(props: { account: string; dataset: string; visibility: "private" | "public" }) {
  const { refreshCatalog } = useSession();
  const [message, setMessage] = useState<{ kind: "error" | "success"; text: string } | null>(null);
  const path = { params: { path: { AccountName: props.account, DatasetName: props.dataset } } };

  async function setVisibility(visibility: "private" | "public") {
    try {
      await ok(api.PUT("/dataset/{AccountName}/{DatasetName}", { ...path, body: { Visibility: visibility } }));
      await refreshCatalog();
      setMessage({ kind: "success", text: `The dataset is now ${visibility}.` });
    } catch (caught) {
      setMessage({ kind: "error", text: messageOf(caught) });
    }
  }

  async function remove() {
    if (!confirm(`Delete ${props.account}/${props.dataset} and every data item in it? This cannot be undone.`)) return;
    try {
      await ok(api.DELETE("/dataset/{AccountName}/{DatasetName}", path));
      await refreshCatalog();
      navigate({ view: "datasets" });
    } catch (caught) {
      setMessage({ kind: "error", text: messageOf(caught) });
    }
  }

  return (
    <section class="card" aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      <div class="inline-form">
        <label>
          Visibility
          <select
            value={props.visibility}
            onChange={(event) => void setVisibility(event.currentTarget.value as "private" | "public")}
          >
            <option value="private">Private: you and those you share it with</option>
            <option value="public">Public: everyone signed in may read it</option>
          </select>
        </label>
        <button type="button" class="danger" onClick={() => void remove()}>
          Delete dataset
        </button>
      </div>
      {message && <Notice kind={message.kind}>{message.text}</Notice>}
    </section>
  );
}

import { useEffect, useState } from "preact/hooks";
import { api, ok, type CatalogEntry } from "../api";
import { formatCount } from "../format";
import { href, navigate } from "../route";
import { useSession } from "./App";
import { Empty, messageOf, Notice, PageTitle, Spinner } from "./ui";

export function DatasetsPage() {
  const { account, catalog, catalogError, refreshCatalog } = useSession();
  // Others share and revoke while this page is closed: it reads the catalog afresh each time it opens.
  useEffect(() => void refreshCatalog(), []);
  const own = catalog?.filter((entry) => entry.Access === "owner") ?? [];
  const shared = catalog?.filter((entry) => entry.Shared) ?? [];
  const open = catalog?.filter((entry) => entry.Access !== "owner" && !entry.Shared) ?? [];
  return (
    <>
      <PageTitle>Datasets</PageTitle>
      {catalogError && <Notice kind="error">{catalogError}</Notice>}
      <CreateDataset account={account} />
      {catalog === null && !catalogError ? (
        <Spinner label="Loading your datasets…" />
      ) : (
        <>
          <DatasetList title="Your datasets" entries={own}>
            <Empty title="No datasets yet — create one above.">
              A dataset holds CSV files that you upload; then query them with SQL and share them.
            </Empty>
          </DatasetList>
          <DatasetList title="Shared with you" entries={shared}>
            <Empty title="Nothing is shared with you yet.">
              When another account grants you read or write access to a dataset, it shows up here.
            </Empty>
          </DatasetList>
          <DatasetList title="Public" entries={open}>
            <Empty title="No public datasets from other accounts.">
              Datasets that their owners make public show up here; anyone signed in may read them.
            </Empty>
          </DatasetList>
        </>
      )}
    </>
  );
}

function DatasetList(props: { title: string; entries: CatalogEntry[]; children: preact.ComponentChildren }) {
  const id = `list-${props.title.toLowerCase().replace(/\W+/g, "-")}`;
  return (
    <section class="card" aria-labelledby={id}>
      <h2 id={id}>
        {props.title} <span class="count">{props.entries.length}</span>
      </h2>
      {props.entries.length === 0 ? (
        props.children
      ) : (
        <ul class="datasets">
          {props.entries.map((entry) => (
            <li key={`${entry.AccountName}/${entry.DatasetName}`}>
              <a href={href({ view: "dataset", account: entry.AccountName, dataset: entry.DatasetName })}>
                <span class="name">
                  {entry.AccountName}/<strong>{entry.DatasetName}</strong>
                </span>
                <span class="meta">
                  {formatCount(entry.DataCount)} {entry.DataCount === 1 ? "item" : "items"} · {entry.Visibility}
                  {entry.Access !== "owner" && ` · you may ${entry.Access}`}
                </span>
                {entry.Description && <span class="description">{entry.Description}</span>}
              </a>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function CreateDataset(props: { account: string }) {
  const { catalog, refreshCatalog } = useSession();
  const [name, setName] = useState("");
  const [visibility, setVisibility] = useState<"private" | "public">("private");
  const [description, setDescription] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function create(event: Event) {
    event.preventDefault();
    // The service's PUT is idempotent: on an existing name it would change that dataset's settings instead.
    if (catalog?.some((entry) => entry.AccountName === props.account && entry.DatasetName === name)) {
      setError(`You already have a dataset named ${name}; pick another name, or open it from the list below.`);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await ok(
        api.PUT("/dataset/{AccountName}/{DatasetName}", {
          params: { path: { AccountName: props.account, DatasetName: name } },
          body: { Visibility: visibility, ...(description ? { Description: description } : {}) },
        }),
      );
      await refreshCatalog();
      navigate({ view: "dataset", account: props.account, dataset: name });
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  }

  return (
    <section class="card" aria-labelledby="create-title">
      <h2 id="create-title">Create a dataset</h2>
      <form class="inline-form" onSubmit={create}>
        <label>
          Name
          <input
            name="dataset-name"
            required
            maxLength={64}
            pattern="[A-Za-z0-9_\-]+"
            title="1-64 letters, digits, _ or -"
            value={name}
            onInput={(event) => setName(event.currentTarget.value)}
            placeholder="sales"
          />
        </label>
        <label>
          Visibility
          <select
            name="visibility"
            value={visibility}
            onChange={(event) => setVisibility(event.currentTarget.value as "private" | "public")}
          >
            <option value="private">Private: you and those you share it with</option>
            <option value="public">Public: everyone signed in may read it</option>
          </select>
        </label>
        <label class="grow">
          <span>
            Description <span class="muted">(optional)</span>
          </span>
          <input
            name="description"
            maxLength={2000}
            value={description}
            onInput={(event) => setDescription(event.currentTarget.value)}
          />
        </label>
        <button type="submit" disabled={busy}>
          {busy ? "Creating…" : "Create dataset"}
        </button>
      </form>
      {error && <Notice kind="error">{error}</Notice>}
    </section>
  );
}

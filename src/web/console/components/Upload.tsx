import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError, ok, uploadFile } from "../api";
import { formatBytes } from "../format";
import {
  DATA_TYPES,
  headerColumns,
  refusalProblems,
  schemaJson,
  storedColumns,
  type DataType,
  type DeclaredColumn,
} from "../upload-file";
import { messageOf, Notice } from "./ui";

type SchemaMode = "infer" | "declare";

type Outcome =
  { kind: "done"; message: string } | { kind: "refused"; message: string } | { kind: "error"; message: string } | null;

/**
 * Upload (or replace) a data item: drop or pick a CSV or gzip file, let the
 * service infer the columns or declare them, and watch the bytes go.
 */
export function Upload(props: {
  account: string;
  dataset: string;
  /** The names of the dataset's items: uploading under one of them replaces it. */
  existing: string[];
  /** Open with this item's name, to replace it. */
  replace?: string;
  onUploaded: () => Promise<void>;
}) {
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState(props.replace ?? "");
  const [mode, setMode] = useState<SchemaMode>("infer");
  const [columns, setColumns] = useState<DeclaredColumn[]>([]);
  const [dragging, setDragging] = useState(false);
  const [progress, setProgress] = useState<{ sent: number; total: number } | null>(null);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const abort = useRef<AbortController | null>(null);
  /** Whether the person chose how to give the columns: the stored schema, arriving later, must not undo it. */
  const modeChosen = useRef(false);
  const replacing = props.existing.includes(name);

  // A replacement keeps the current columns unless the person chooses otherwise.
  useEffect(() => {
    if (!replacing) return;
    let live = true;
    ok(
      api.GET("/data/{AccountName}/{DatasetName}/{DataName}/metadata/schema", {
        params: { path: { AccountName: props.account, DatasetName: props.dataset, DataName: name } },
      }),
    ).then(
      (body) => {
        if (!live || modeChosen.current) return;
        setColumns(storedColumns(body.Data.Schema));
        setMode("declare");
      },
      () => {},
    );
    return () => {
      live = false;
    };
  }, [replacing, name]);

  async function choose(chosen: File | undefined) {
    if (!chosen) return;
    setFile(chosen);
    setOutcome(null);
    setProgress(null);
    if (!name || !props.existing.includes(name)) setName(chosen.name.replace(/[^A-Za-z0-9_.-]/g, "_"));
    try {
      if (!replacing) setColumns(await headerColumns(chosen));
    } catch {
      setColumns([]);
    }
  }

  async function send(event: Event) {
    event.preventDefault();
    if (!file) return;
    if (replacing && !confirm(`Replace ${name}? Queries see the new file once it is uploaded.`)) return;
    abort.current = new AbortController();
    setOutcome(null);
    setProgress({ sent: 0, total: file.size });
    try {
      const message = await uploadFile(
        { account: props.account, dataset: props.dataset, item: name },
        file,
        mode === "declare" ? { kind: "declared", schema: schemaJson(columns) } : { kind: "infer" },
        (sent, total) => setProgress({ sent, total }),
        abort.current.signal,
      );
      setOutcome({ kind: "done", message });
      setFile(null);
      setProgress(null);
      await props.onUploaded();
    } catch (error) {
      if (error instanceof DOMException && error.name === "AbortError")
        setOutcome({ kind: "error", message: "Upload cancelled; nothing was stored." });
      else if (error instanceof ApiError && error.status === 400)
        setOutcome({ kind: "refused", message: error.message });
      else setOutcome({ kind: "error", message: messageOf(error) });
    } finally {
      abort.current = null;
      setProgress(null);
    }
  }

  const setColumn = (index: number, change: Partial<DeclaredColumn>) =>
    setColumns(columns.map((column, i) => (i === index ? { ...column, ...change } : column)));

  return (
    <section class="card" aria-labelledby="upload-title">
      <h2 id="upload-title">{props.replace ? `Replace ${props.replace}` : "Upload a file"}</h2>
      <form onSubmit={send}>
        <div
          class={`dropzone${dragging ? " dragging" : ""}`}
          // Both must be cancelled for the browser to allow a drop here.
          onDragEnter={(event) => {
            event.preventDefault();
            setDragging(true);
          }}
          onDragOver={(event) => {
            event.preventDefault();
            setDragging(true);
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={(event) => {
            event.preventDefault();
            setDragging(false);
            void choose(event.dataTransfer?.files[0]);
          }}
        >
          <p>
            {file ? (
              <>
                <strong>{file.name}</strong> · {formatBytes(file.size)}
              </>
            ) : (
              "Drop a CSV file (or a gzipped one) here, or"
            )}
          </p>
          <label class="button secondary file-pick">
            {file ? "Pick another file" : "Pick a file"}
            <input
              type="file"
              name="file"
              accept=".csv,.gz,.tsv,.txt,text/csv,application/gzip"
              onChange={(event) => void choose(event.currentTarget.files?.[0])}
            />
          </label>
        </div>
        {file && (
          <>
            {/* Replacing an item keeps its name: another name would be a new item, not a new version. */}
            {!props.replace && (
              <div class="inline-form">
                <label class="grow">
                  Item name
                  <input
                    name="item-name"
                    required
                    maxLength={128}
                    pattern="[A-Za-z0-9_\-][A-Za-z0-9_.\-]*"
                    title="1-128 letters, digits, _, - or ., not starting with ."
                    value={name}
                    onInput={(event) => setName(event.currentTarget.value)}
                  />
                </label>
              </div>
            )}
            {replacing && (
              <Notice kind="info">
                An item named {name} exists: uploading replaces it (queries already running finish on the old file).
              </Notice>
            )}
            <fieldset class="schema-mode">
              <legend>Columns and types</legend>
              <label>
                <input
                  type="radio"
                  name="schema-mode"
                  value="infer"
                  checked={mode === "infer"}
                  onChange={() => {
                    modeChosen.current = true;
                    setMode("infer");
                  }}
                />
                Let dqs infer them from the file (names from the header, the narrowest type every value fits)
              </label>
              <label>
                <input
                  type="radio"
                  name="schema-mode"
                  value="declare"
                  checked={mode === "declare"}
                  onChange={() => {
                    modeChosen.current = true;
                    setMode("declare");
                  }}
                />
                Declare them: dqs checks every value and refuses the file if one does not fit
              </label>
            </fieldset>
            {mode === "declare" && (
              <div class="table-wrap">
                <table class="declare">
                  <caption class="visually-hidden">Declared columns</caption>
                  <thead>
                    <tr>
                      <th scope="col">Column</th>
                      <th scope="col">Type</th>
                      <th scope="col">May be empty</th>
                    </tr>
                  </thead>
                  <tbody>
                    {columns.map((column, index) => (
                      <tr key={index}>
                        <td>
                          <input
                            aria-label={`Name of column ${index + 1}`}
                            value={column.name}
                            onInput={(event) => setColumn(index, { name: event.currentTarget.value })}
                          />
                        </td>
                        <td>
                          <select
                            aria-label={`Type of ${column.name}`}
                            name={`type-${column.name}`}
                            value={column.type}
                            onChange={(event) => setColumn(index, { type: event.currentTarget.value as DataType })}
                          >
                            {DATA_TYPES.map((type) => (
                              <option key={type}>{type}</option>
                            ))}
                          </select>
                        </td>
                        <td>
                          <input
                            type="checkbox"
                            aria-label={`${column.name} may be empty (NULL)`}
                            checked={column.nullable}
                            onChange={(event) => setColumn(index, { nullable: event.currentTarget.checked })}
                          />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <div class="row">
              <button type="submit" disabled={progress !== null}>
                {replacing ? "Upload and replace" : "Upload"}
              </button>
              {progress && (
                <button type="button" class="secondary" onClick={() => abort.current?.abort()}>
                  Cancel
                </button>
              )}
            </div>
          </>
        )}
      </form>
      {progress && (
        <div class="progress">
          <progress max={progress.total || 1} value={progress.sent} aria-label="Upload progress" />
          <span>
            {formatBytes(progress.sent)} of {formatBytes(progress.total)} (
            {Math.floor((100 * progress.sent) / (progress.total || 1))}%)
          </span>
        </div>
      )}
      {outcome?.kind === "done" && <Notice kind="success">{outcome.message}</Notice>}
      {outcome?.kind === "error" && <Notice kind="error">{outcome.message}</Notice>}
      {outcome?.kind === "refused" && <Refusal message={outcome.message} />}
    </section>
  );
}

/** The service's refusal, its problems as a table: which row, which column, what is wrong, and what to do. */
function Refusal(props: { message: string }) {
  const { intro, problems } = refusalProblems(props.message);
  return (
    <div class="notice error refusal" role="alert">
      <p>
        <strong>The file was not stored.</strong> {intro}
        {problems.length === 0 ? "" : ":"}
      </p>
      {problems.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Row</th>
              <th scope="col">Column</th>
              <th scope="col">Problem</th>
            </tr>
          </thead>
          <tbody>
            {problems.map((problem, index) => (
              <tr key={index}>
                <td>{problem.row ?? "—"}</td>
                <td>{problem.column ?? "—"}</td>
                <td>{problem.problem}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p>
        Rows count data rows from 1 (the header is not counted). Fix the file and upload it again, or change the
        declared types, or let dqs infer them.
      </p>
    </div>
  );
}

import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError, ok, uploadFile } from "../api";
import { formatBytes } from "../format";
import {
  DATA_TYPES,
  headerColumns,
  itemNameOf,
  refusalProblems,
  sameColumnNames,
  schemaJson,
  storedColumns,
  type DataType,
  type DeclaredColumn,
} from "../upload-file";
import { messageOf, Notice } from "./ui";

type SchemaMode = "infer" | "declare";

type Outcome =
  { kind: "done"; message: string } | { kind: "refused"; message: string } | { kind: "error"; message: string } | null;

/** Where a file in the box stands, as the box needs it for "Upload all" and to clear finished files. */
interface FileState {
  /** Waiting to be uploaded: not sending, not stored. */
  ready: boolean;
  /** Stored, refused or failed: a new pick takes its place. */
  finished: boolean;
  /** The existing item it would replace, if any. */
  replaces: string | null;
}

type Send = (confirmed: boolean) => Promise<void>;

let nextId = 0;

/**
 * Upload (or replace) data items: drop or pick one CSV or gzip file or
 * several, each becoming an item of its own with its own name, columns,
 * progress and result; the service infers the columns or checks declared ones.
 */
export function Upload(props: {
  account: string;
  dataset: string;
  /** The names of the dataset's items: uploading under one of them replaces it. */
  existing: string[];
  /** Replace this item: one file, under this name. */
  replace?: string;
  onUploaded: () => Promise<void>;
}) {
  const [files, setFiles] = useState<{ id: number; file: File }[]>([]);
  const [dragging, setDragging] = useState(false);
  const [sendingAll, setSendingAll] = useState(false);
  const [states, setStates] = useState<ReadonlyMap<number, FileState>>(new Map());
  const senders = useRef(new Map<number, Send>());

  /** New files join those still waiting or uploading; the finished ones give them their place. */
  function add(chosen: FileList | null | undefined) {
    const picked = Array.from(chosen ?? []).slice(0, props.replace ? 1 : undefined);
    if (picked.length === 0) return;
    const added = picked.map((file) => ({ id: nextId++, file }));
    setFiles((before) =>
      props.replace ? added : [...before.filter(({ id }) => !(states.get(id)?.finished ?? false)), ...added],
    );
  }

  const report = (id: number, state: FileState | null) =>
    setStates((before) => {
      const next = new Map(before);
      if (state) next.set(id, state);
      else next.delete(id);
      return next;
    });

  const ready = files.filter(({ id }) => states.get(id)?.ready ?? false);

  async function sendAll() {
    const replaced = ready.flatMap(({ id }) => states.get(id)?.replaces ?? []);
    if (replaced.length > 0 && !confirm(replaceQuestion(replaced))) return;
    setSendingAll(true);
    try {
      // One at a time: each file has the connection to itself, and its bar moves as its bytes go.
      for (const { id } of ready) await senders.current.get(id)?.(true);
    } finally {
      setSendingAll(false);
    }
  }
  const several = !props.replace;
  return (
    <section class="card" aria-labelledby="upload-title">
      <h2 id="upload-title">{props.replace ? `Replace ${props.replace}` : "Upload files"}</h2>
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
          add(event.dataTransfer?.files);
        }}
      >
        <p>
          {several
            ? "Drop one or more CSV files (or gzipped ones) here, or"
            : `Drop the new version of ${props.replace} (CSV or gzip) here, or`}
        </p>
        <label class="button secondary file-pick">
          {several ? "Pick files" : files.length > 0 ? "Pick another file" : "Pick a file"}
          <input
            type="file"
            name="file"
            multiple={several}
            accept=".csv,.gz,.tsv,.txt,text/csv,application/gzip"
            onChange={(event) => {
              add(event.currentTarget.files);
              // The same file picked again is a new choice too.
              event.currentTarget.value = "";
            }}
          />
        </label>
      </div>
      {files.map(({ id, file }) => (
        <UploadFile
          key={id}
          id={id}
          file={file}
          account={props.account}
          dataset={props.dataset}
          existing={props.existing}
          replace={props.replace}
          senders={senders.current}
          report={report}
          onUploaded={props.onUploaded}
          onRemove={() => setFiles((before) => before.filter((entry) => entry.id !== id))}
        />
      ))}
      {ready.length > 1 && (
        <div class="row">
          <button type="button" onClick={() => void sendAll()} disabled={sendingAll}>
            Upload all ({ready.length} waiting)
          </button>
        </div>
      )}
    </section>
  );
}

function replaceQuestion(names: string[]): string {
  return `Replace ${names.join(", ")}? Queries see the new ${names.length === 1 ? "file" : "files"} once uploaded.`;
}

/** One file in the box: its item name, its columns, its upload and what came of it. */
function UploadFile(props: {
  id: number;
  file: File;
  account: string;
  dataset: string;
  existing: string[];
  replace?: string;
  senders: Map<number, Send>;
  report: (id: number, state: FileState | null) => void;
  onUploaded: () => Promise<void>;
  onRemove: () => void;
}) {
  const { file } = props;
  // Each file proposes its own name: nothing is carried over from the file before it.
  const [name, setName] = useState(props.replace ?? itemNameOf(file.name));
  const [mode, setMode] = useState<SchemaMode>("infer");
  const [header, setHeader] = useState<DeclaredColumn[] | null>(null);
  const [columns, setColumns] = useState<DeclaredColumn[]>([]);
  /** The item whose stored columns this file keeps, or whose columns it does not have. */
  const [kept, setKept] = useState<{ item: string; same: boolean } | null>(null);
  const [progress, setProgress] = useState<{ sent: number; total: number } | null>(null);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const abort = useRef<AbortController | null>(null);
  const form = useRef<HTMLFormElement>(null);
  /** Whether the person chose how to give the columns: the stored schema, arriving later, must not undo it. */
  const modeChosen = useRef(false);
  const done = outcome?.kind === "done";
  const replacing = !done && props.existing.includes(name);

  useEffect(() => {
    headerColumns(file).then(
      (found) => {
        setHeader(found);
        setColumns(found);
      },
      () => setHeader([]),
    );
  }, [file]);

  // A replacement keeps the item's declared types when this file has the same columns; other columns are the file's own.
  useEffect(() => {
    if (header === null) return;
    setKept(null);
    if (!modeChosen.current) {
      setColumns(header);
      setMode("infer");
    }
    if (!replacing) return;
    let live = true;
    ok(
      api.GET("/data/{AccountName}/{DatasetName}/{DataName}/metadata/schema", {
        params: { path: { AccountName: props.account, DatasetName: props.dataset, DataName: name } },
      }),
    ).then(
      (body) => {
        if (!live) return;
        const stored = storedColumns(body.Data.Schema);
        const same = sameColumnNames(stored, header);
        setKept({ item: name, same });
        if (modeChosen.current || !same) return;
        setColumns(stored);
        setMode("declare");
      },
      () => {},
    );
    return () => {
      live = false;
    };
  }, [replacing, name, header]);

  async function send(confirmed: boolean) {
    if (progress !== null || done) return;
    // "Upload all" skips the form's own submit, so its checks (the item name's pattern) are made here.
    if (!form.current?.reportValidity()) return;
    if (replacing && !confirmed && !confirm(replaceQuestion([name]))) return;
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

  props.senders.set(props.id, send);
  const ready = progress === null && !done;
  const finished = progress === null && outcome !== null;
  const replaces = replacing ? name : null;
  useEffect(() => props.report(props.id, { ready, finished, replaces }), [ready, finished, replaces]);
  useEffect(
    () => () => {
      props.senders.delete(props.id);
      props.report(props.id, null);
    },
    [],
  );

  const setColumn = (index: number, change: Partial<DeclaredColumn>) => {
    // Edited columns are the person's: a later change of the name must not put others in their place.
    modeChosen.current = true;
    setColumns(columns.map((column, i) => (i === index ? { ...column, ...change } : column)));
  };
  const chooseMode = (chosen: SchemaMode) => {
    modeChosen.current = true;
    setMode(chosen);
  };
  const label = `${file.name}, ${formatBytes(file.size)}`;

  return (
    <form
      class="upload-file"
      ref={form}
      aria-label={label}
      onSubmit={(event) => {
        event.preventDefault();
        void send(false);
      }}
    >
      <div class="upload-file-head">
        <p>
          <strong>{file.name}</strong> · {formatBytes(file.size)}
        </p>
        {progress === null && (
          <button
            type="button"
            class="small secondary"
            onClick={props.onRemove}
            aria-label={done ? `Dismiss ${file.name}` : `Remove ${file.name}`}
          >
            {done ? "Dismiss" : "Remove"}
          </button>
        )}
      </div>
      {!done && (
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
                  disabled={progress !== null}
                  onInput={(event) => setName(event.currentTarget.value)}
                />
              </label>
            </div>
          )}
          {replacing && !props.replace && (
            <Notice kind="info">
              An item named {name} exists: uploading replaces it (queries already running finish on the old file). To
              keep it, give this file another name.
            </Notice>
          )}
          {kept && (
            <p class="muted">
              {kept.same
                ? `This file has ${kept.item}'s columns: they come declared with the types ${kept.item} has.`
                : `This file's columns differ from ${kept.item}'s: dqs infers them unless you declare them.`}
            </p>
          )}
          <fieldset class="schema-mode" disabled={progress !== null}>
            <legend>Columns and types</legend>
            <label>
              <input
                type="radio"
                name={`schema-mode-${props.id}`}
                value="infer"
                checked={mode === "infer"}
                onChange={() => chooseMode("infer")}
              />
              Let dqs infer them from the file (names from the header, the narrowest type every value fits)
            </label>
            <label>
              <input
                type="radio"
                name={`schema-mode-${props.id}`}
                value="declare"
                checked={mode === "declare"}
                onChange={() => chooseMode("declare")}
              />
              Declare them: dqs checks every value and refuses the file if one does not fit
            </label>
          </fieldset>
          {mode === "declare" && (
            <div class="table-wrap">
              <table class="declare">
                <caption class="visually-hidden">Declared columns of {file.name}</caption>
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
      {progress && (
        <div class="progress">
          <progress max={progress.total || 1} value={progress.sent} aria-label={`Upload progress of ${file.name}`} />
          <span>
            {formatBytes(progress.sent)} of {formatBytes(progress.total)} (
            {Math.floor((100 * progress.sent) / (progress.total || 1))}%)
          </span>
        </div>
      )}
      {outcome?.kind === "done" && <Notice kind="success">{outcome.message}</Notice>}
      {outcome?.kind === "error" && <Notice kind="error">{outcome.message}</Notice>}
      {outcome?.kind === "refused" && <Refusal message={outcome.message} />}
    </form>
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

import { sql, SQLite, type SQLNamespace } from "@codemirror/lang-sql";
import { Compartment, Prec } from "@codemirror/state";
import { keymap } from "@codemirror/view";
import { basicSetup, EditorView } from "codemirror";
import { useEffect, useRef } from "preact/hooks";

/**
 * The SQL editor: CodeMirror 6 with SQLite's dialect, completion of
 * `account.dataset.item` names and their columns from `schema`, and
 * Ctrl/Cmd+Enter to run.
 */
export function SqlEditor(props: {
  initial: string;
  schema: SQLNamespace;
  onChange: (text: string) => void;
  onRun: () => void;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const language = useRef(new Compartment());
  // The latest callbacks, for the editor made once.
  const callbacks = useRef(props);
  callbacks.current = props;

  useEffect(() => {
    const editor = new EditorView({
      parent: host.current!,
      doc: props.initial,
      extensions: [
        Prec.highest(
          keymap.of([
            {
              key: "Mod-Enter",
              run: () => {
                callbacks.current.onRun();
                return true;
              },
            },
          ]),
        ),
        basicSetup,
        language.current.of(sql({ dialect: SQLite, schema: props.schema, upperCaseKeywords: true })),
        EditorView.lineWrapping,
        EditorView.contentAttributes.of({ "aria-label": "SQL query (Ctrl+Enter or Cmd+Enter runs it)" }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) callbacks.current.onChange(update.state.doc.toString());
        }),
      ],
    });
    view.current = editor;
    editor.focus();
    return () => editor.destroy();
  }, []);

  // The catalog arrives after the editor: completion learns the names as they come.
  useEffect(() => {
    view.current?.dispatch({
      effects: language.current.reconfigure(sql({ dialect: SQLite, schema: props.schema, upperCaseKeywords: true })),
    });
  }, [props.schema]);

  return <div class="editor" ref={host} />;
}

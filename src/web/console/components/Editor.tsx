import { closeCompletion } from "@codemirror/autocomplete";
import { sql, SQLite, type SQLNamespace } from "@codemirror/lang-sql";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { Compartment, Prec } from "@codemirror/state";
import { keymap, placeholder } from "@codemirror/view";
import { basicSetup, EditorView } from "codemirror";
import { tags } from "@lezer/highlight";
import { useEffect, useRef } from "preact/hooks";

/** What console.css cannot reach inside the editor's shadow root. */
const EDITOR_THEME = EditorView.theme({
  "&": { minHeight: "9rem", maxHeight: "24rem", fontSize: "14px", backgroundColor: "#fff" },
  "&.cm-focused": { outline: "none" },
  ".cm-scroller": { fontFamily: 'ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace', minHeight: "9rem" },
  ".cm-gutters": { backgroundColor: "#f6f8fa", color: "#57606a", borderRight: "1px solid #d8dee4" },
  "&.cm-focused .cm-matchingBracket": { backgroundColor: "#cfe3ff", color: "#1b1f24" },
  // The default keyword icon is an emoji, which machines without an emoji font show as a box.
  ".cm-completionIcon-keyword:after": { content: "'K'", fontSize: "80%" },
});

/** Token colours that keep 4.5:1 contrast on white (WCAG AA), unlike some of the default ones. */
const HIGHLIGHT = HighlightStyle.define([
  { tag: tags.keyword, color: "#6f2da8", fontWeight: "600" },
  { tag: [tags.string, tags.special(tags.string)], color: "#0a3069" },
  { tag: [tags.number, tags.bool, tags.null], color: "#0550ae" },
  { tag: tags.comment, color: "#57606a", fontStyle: "italic" },
  { tag: [tags.typeName, tags.standard(tags.name)], color: "#953800" },
  { tag: tags.special(tags.name), color: "#116329" },
  { tag: tags.operator, color: "#1b1f24" },
]);

/**
 * The SQL editor: CodeMirror 6 with SQLite's dialect, completion of
 * `account.dataset.item` names and their columns from `schema`, and
 * Ctrl/Cmd+Enter to run.
 */
export function SqlEditor(props: {
  initial: string;
  /** Shown, greyed, while the editor is empty. */
  hint: string;
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
    // In a shadow root CodeMirror's styles go into a constructed stylesheet; in the document they would need an
    // inline <style> element, which the console's Content-Security-Policy (style-src 'self') refuses.
    const shadow = host.current!.shadowRoot ?? host.current!.attachShadow({ mode: "open" });
    const editor = new EditorView({
      root: shadow,
      parent: shadow,
      doc: props.initial,
      extensions: [
        EDITOR_THEME,
        Prec.highest(
          keymap.of([
            {
              key: "Mod-Enter",
              run: (target) => {
                // The query runs as written: an open completion list would only cover the result.
                closeCompletion(target);
                callbacks.current.onRun();
                return true;
              },
            },
          ]),
        ),
        basicSetup,
        syntaxHighlighting(HIGHLIGHT),
        language.current.of(sql({ dialect: SQLite, schema: props.schema, upperCaseKeywords: true })),
        EditorView.lineWrapping,
        placeholder(props.hint),
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

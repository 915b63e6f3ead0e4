import { useEffect, useLayoutEffect, useRef } from 'preact/hooks';
import { EditorState, Compartment, type Extension } from '@codemirror/state';
import { EditorView, keymap, lineNumbers, highlightActiveLine, drawSelection, placeholder as cmPlaceholder } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { syntaxHighlighting, defaultHighlightStyle, bracketMatching, StreamLanguage } from '@codemirror/language';
import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap, type CompletionSource } from '@codemirror/autocomplete';
import { linter, lintGutter, setDiagnostics, type Diagnostic } from '@codemirror/lint';
import { json, jsonParseLinter } from '@codemirror/lang-json';
import { csharp } from '@codemirror/legacy-modes/mode/clike';
import { javascript } from '@codemirror/legacy-modes/mode/javascript';
import { rqlLanguage } from '../rql';

export type EditorLanguage = 'json' | 'rql' | 'csharp' | 'javascript';

/** A problem to show at a place in the text: 1-based line and column (a server compile error). */
export interface Marker { line: number; column: number; message: string }

interface Props {
  value: string;
  onChange?: (value: string) => void;
  language: EditorLanguage;
  label: string;
  onRun?: () => void;
  completion?: CompletionSource;
  markers?: Marker[];
  readOnly?: boolean;
  minHeight?: string;
  placeholder?: string;
  id?: string;
}

function languageOf(language: EditorLanguage): Extension {
  switch (language) {
    case 'json': return [json(), linter(jsonParseLinter(), { delay: 300 })];
    case 'rql': return rqlLanguage;
    case 'csharp': return StreamLanguage.define(csharp);
    case 'javascript': return StreamLanguage.define(javascript);
  }
}

/** CodeMirror 6 with the Studio's defaults: line numbers, history, brackets, completion, lint gutter, Ctrl+Enter to run. */
export function Editor(props: Props) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const latest = useRef(props);
  latest.current = props;
  const editable = useRef(new Compartment());

  useEffect(() => {
    const run = () => { latest.current.onRun?.(); return latest.current.onRun !== undefined; };
    const state = EditorState.create({
      doc: props.value,
      extensions: [
        lineNumbers(),
        history(),
        drawSelection(),
        highlightActiveLine(),
        bracketMatching(),
        closeBrackets(),
        lintGutter(),
        syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        languageOf(props.language),
        autocompletion(props.completion ? { override: [props.completion] } : {}),
        keymap.of([{ key: 'Mod-Enter', run, preventDefault: true }, ...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap, indentWithTab]),
        editable.current.of([EditorState.readOnly.of(!!props.readOnly), EditorView.editable.of(!props.readOnly)]),
        props.placeholder ? cmPlaceholder(props.placeholder) : [],
        EditorView.contentAttributes.of({ 'aria-label': props.label, ...(props.id ? { id: props.id } : {}) }),
        EditorView.theme({ '&': { minHeight: props.minHeight ?? '120px', fontSize: '13px' }, '.cm-scroller': { fontFamily: 'var(--mono)' }, '.cm-content': { minHeight: props.minHeight ?? '120px' } }),
        EditorView.updateListener.of((u) => { if (u.docChanged) latest.current.onChange?.(u.state.doc.toString()); }),
      ],
    });
    view.current = new EditorView({ state, parent: host.current! });
    return () => view.current?.destroy();
    // The editor is created once per language; value changes from outside are applied below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [props.language]);

  // A value set from outside is applied as the render commits (a layout effect), before any later keystroke: a
  // deferred effect could overwrite what was typed in between with the older value.
  useLayoutEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== props.value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: props.value } });
  }, [props.value]);

  useEffect(() => {
    view.current?.dispatch({ effects: editable.current.reconfigure([EditorState.readOnly.of(!!props.readOnly), EditorView.editable.of(!props.readOnly)]) });
  }, [props.readOnly]);

  useEffect(() => {
    const v = view.current;
    if (!v) return;
    const doc = v.state.doc;
    const diagnostics: Diagnostic[] = (props.markers ?? []).map((m) => {
      const line = doc.line(Math.min(Math.max(1, m.line), doc.lines));
      const from = Math.min(line.from + Math.max(0, m.column - 1), line.to);
      return { from, to: Math.max(from, Math.min(line.to, from + 1)), severity: 'error', message: m.message };
    });
    v.dispatch(setDiagnostics(v.state, diagnostics));
  }, [props.markers, props.value]);

  return <div class="editor" ref={host} data-language={props.language} />;
}

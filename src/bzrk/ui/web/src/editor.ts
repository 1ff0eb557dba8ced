// The KQL editor: Monaco with @kusto/monaco-kusto (AMD build, served under /monaco/vs), given the
// selected database's schema so completion and diagnostics know its tables and columns.
import type { ErrorLocation } from './api';
import { blockAt, type Block } from './blocks';
import { functionCompletions, pathCompletions, type DiscoveredField } from './completion';
import { BERSERK_FUNCTIONS, berserkAccepts } from './diagnostics';

declare global {
  interface Window {
    require: any;
    monaco: any;
  }
}

const MONACO_BASE = '/monaco/vs';
let loading: Promise<any> | null = null;

/** Removes monaco-kusto's markers that Berserk's dialect accepts (see diagnostics.ts) each time
 * it sets them; the server's own error marker (owner `bzrk-server`) is left alone. */
function dropBerserkFalseAlarms(monaco: any): void {
  monaco.editor.onDidChangeMarkers((uris: any[]) => {
    for (const uri of uris) {
      const model = monaco.editor.getModel(uri);
      if (!model) continue;
      const byOwner = new Map<string, any[]>();
      for (const marker of monaco.editor.getModelMarkers({ resource: uri })) {
        if (marker.owner === 'bzrk-server') continue;
        byOwner.set(marker.owner, [...(byOwner.get(marker.owner) ?? []), marker]);
      }
      for (const [owner, markers] of byOwner) {
        const kept = markers.filter((m) => !berserkAccepts(m.message));
        // Setting fires this event again; with nothing left to drop it stops there.
        if (kept.length < markers.length) monaco.editor.setModelMarkers(model, owner, kept);
      }
    }
  });
}

function loadMonaco(): Promise<any> {
  if (loading) return loading;
  loading = new Promise((resolve, reject) => {
    const script = document.createElement('script');
    script.src = `${MONACO_BASE}/loader.js`;
    script.onerror = () => reject(new Error('could not load the editor (is the UI built?)'));
    script.onload = () => {
      const amdRequire = window.require;
      amdRequire.config({ paths: { vs: MONACO_BASE } });
      amdRequire(['vs/editor/editor.main'], () => {
        amdRequire(
          ['vs/language/kusto/monaco.contribution'],
          () => {
            const kusto = window.monaco.languages.kusto;
            // Monarch token colours paint at once; semantic colouring waits for the worker.
            kusto.kustoDefaults.setLanguageSettings({
              ...kusto.kustoDefaults.languageSettings,
              useTokenColorization: true,
              useSemanticColorization: false,
              enableHover: true,
              enableQueryWarnings: false,
            });
            dropBerserkFalseAlarms(window.monaco);
            resolve(window.monaco);
          },
          reject,
        );
      }, reject);
    };
    document.head.appendChild(script);
  });
  return loading;
}

export interface SchemaColumn {
  name: string;
  type: string;
}
export interface SchemaTable {
  name: string;
  columns: SchemaColumn[];
}

// KQL type -> the CLR type name `.show schema as json` reports next to it.
const CLR_TYPES: Record<string, string> = {
  string: 'System.String',
  datetime: 'System.DateTime',
  timespan: 'System.TimeSpan',
  long: 'System.Int64',
  int: 'System.Int32',
  real: 'System.Double',
  double: 'System.Double',
  bool: 'System.Boolean',
  boolean: 'System.Boolean',
  guid: 'System.Guid',
  dynamic: 'System.Object',
  decimal: 'System.Data.SqlTypes.SqlDecimal',
};

/** The `.show databases schema as json` shape monaco-kusto's setSchemaFromShowSchema reads. */
export function showSchema(database: string, tables: SchemaTable[]): unknown {
  const asTables: Record<string, unknown> = {};
  for (const table of tables) {
    asTables[table.name] = {
      Name: table.name,
      EntityType: 'Table',
      DocString: '',
      OrderedColumns: table.columns.map((c) => ({
        Name: c.name,
        Type: CLR_TYPES[c.type] ?? 'System.Object',
        CslType: CLR_TYPES[c.type] ? c.type : 'dynamic',
      })),
    };
  }
  return {
    Plugins: [],
    Databases: {
      [database]: {
        Name: database,
        Tables: asTables,
        ExternalTables: {},
        MaterializedViews: {},
        EntityGroups: {},
        Functions: {},
        MajorVersion: 1,
        MinorVersion: 0,
        DatabaseAccessMode: 'ReadWrite',
      },
    },
  };
}

// One completion provider for every editor: it reads the fields of the editor that asks.
const fieldsByModel = new Map<string, DiscoveredField[]>();
let providerRegistered = false;

function registerPathCompletion(monaco: any): void {
  if (providerRegistered) return;
  providerRegistered = true;
  monaco.languages.registerCompletionItemProvider('kusto', {
    triggerCharacters: ['.'],
    provideCompletionItems(model: any, position: any) {
      const fields = fieldsByModel.get(model.uri.toString()) ?? [];
      const prefix = model.getLineContent(position.lineNumber).slice(0, position.column - 1);
      const found = pathCompletions(prefix, fields);
      const word = /[A-Za-z_][\w.-]*$/.exec(prefix.split('.').pop() ?? '')?.[0] ?? '';
      const range = new monaco.Range(position.lineNumber, position.column - word.length, position.lineNumber, position.column);
      const paths = found.map((c, i) => ({
        label: { label: c.label, description: `${c.field.type} · ${(c.field.frequency * 100).toFixed(0)}%` },
        kind: monaco.languages.CompletionItemKind.Field,
        insertText: c.label,
        detail: `discovered path ${c.field.path}`,
        sortText: String(i).padStart(5, '0'),
        range,
      }));
      const functions = functionCompletions(prefix, BERSERK_FUNCTIONS).map((name) => ({
        label: { label: name, description: 'Berserk' },
        kind: monaco.languages.CompletionItemKind.Function,
        insertText: name,
        detail: 'Berserk function',
        range,
      }));
      return { suggestions: [...paths, ...functions] };
    },
  });
}

export class KqlEditor {
  private editor: any = null;
  private monaco: any = null;
  private errorDecorations: any = null;
  private blockDecorations: any = null;
  ready: Promise<void>;

  constructor(
    host: HTMLElement,
    initial: string,
    private onRun: () => void,
    theme: string,
  ) {
    this.ready = loadMonaco().then((monaco) => {
      this.monaco = monaco;
      this.editor = monaco.editor.create(host, {
        value: initial,
        language: 'kusto',
        theme: theme === 'light' ? 'kusto-light' : 'kusto-dark',
        automaticLayout: true,
        minimap: { enabled: false },
        fontSize: 13,
        scrollBeyondLastLine: false,
        wordWrap: 'on',
        fixedOverflowWidgets: true,
        suggestOnTriggerCharacters: true,
        'semanticHighlighting.enabled': true,
      });
      // Ctrl/Cmd+Enter and Shift+Enter run the block under the cursor, as in ADX.
      this.editor.addAction({
        id: 'bzrk.run',
        label: 'Run the query under the cursor',
        keybindings: [monaco.KeyMod.CtrlCmd | monaco.KeyCode.Enter, monaco.KeyMod.Shift | monaco.KeyCode.Enter],
        run: () => this.onRun(),
      });
      this.editor.onDidChangeModelContent(() => this.clearError());
      this.editor.onDidChangeCursorPosition(() => this.markBlock());
      registerPathCompletion(monaco);
      this.markBlock();
    });
  }

  /** Paths offered after `attributes.` and the like (field discovery of the current table). */
  setFields(fields: DiscoveredField[]): void {
    void this.ready.then(() => fieldsByModel.set(this.editor.getModel().uri.toString(), fields));
  }

  /** The selection when there is one, else the blank-line-separated block under the cursor. */
  currentBlock(): Block {
    if (!this.editor) return { text: '', startLine: 1, endLine: 1 };
    const selection = this.editor.getSelection();
    const model = this.editor.getModel();
    if (selection && !selection.isEmpty()) {
      return { text: model.getValueInRange(selection), startLine: selection.startLineNumber, endLine: selection.endLineNumber };
    }
    return blockAt(this.editor.getValue(), this.editor.getPosition()?.lineNumber ?? 1);
  }

  /** A faint bar beside the block that Run would run (only when the editor holds several). */
  private markBlock(): void {
    if (!this.editor) return;
    const block = this.currentBlock();
    const several = block.text.trim() !== this.editor.getValue().trim();
    this.blockDecorations?.clear();
    if (!several || !block.text.trim()) return;
    this.blockDecorations = this.editor.createDecorationsCollection([
      { range: new this.monaco.Range(block.startLine, 1, block.endLine, 1), options: { isWholeLine: true, linesDecorationsClassName: 'kql-current-block' } },
    ]);
  }

  /** Moves the cursor to a line (tests, and a history entry opening its block). */
  setCursor(line: number, column = 1): void {
    this.editor?.setPosition({ lineNumber: line, column });
    this.editor?.focus();
  }

  get value(): string {
    return this.editor ? this.editor.getValue() : '';
  }

  set value(text: string) {
    this.editor?.setValue(text);
  }

  focus(): void {
    this.editor?.focus();
  }

  insert(text: string): void {
    if (!this.editor) return;
    const selection = this.editor.getSelection();
    this.editor.executeEdits('bzrk', [{ range: selection, text, forceMoveMarkers: true }]);
    this.editor.focus();
  }

  setTheme(theme: string): void {
    this.monaco?.editor.setTheme(theme === 'light' ? 'kusto-light' : 'kusto-dark');
  }

  async setSchema(database: string, tables: SchemaTable[]): Promise<void> {
    await this.ready;
    const getWorker = await this.monaco.languages.kusto.getKustoWorker();
    const worker = await getWorker(this.editor.getModel().uri);
    await worker.setSchemaFromShowSchema(showSchema(database, tables), 'https://bzrk.local', database);
  }

  /** Marks the failing span of an error and moves the cursor there. */
  showError(location: ErrorLocation, message: string, lineOffset = 0): void {
    if (!this.editor) return;
    const monaco = this.monaco;
    const model = this.editor.getModel();
    const startLine = Math.max(1, location.start_line + lineOffset);
    const endLine = Math.max(startLine, (location.end_line || location.start_line) + lineOffset);
    let endColumn = location.end_column || location.start_column + 1;
    if (endLine === startLine && endColumn <= location.start_column) endColumn = location.start_column + 1;
    const range = new monaco.Range(startLine, Math.max(1, location.start_column), endLine, endColumn);
    monaco.editor.setModelMarkers(model, 'bzrk-server', [
      { ...range, startLineNumber: range.startLineNumber, message, severity: monaco.MarkerSeverity.Error },
    ]);
    this.errorDecorations?.clear();
    this.errorDecorations = this.editor.createDecorationsCollection([
      { range, options: { inlineClassName: 'kql-error-span', className: 'kql-error-line', hoverMessage: { value: message } } },
    ]);
    this.editor.revealRangeInCenter(range);
    this.editor.setSelection(new monaco.Range(range.startLineNumber, range.startColumn, range.startLineNumber, range.startColumn));
  }

  clearError(): void {
    if (!this.editor) return;
    this.errorDecorations?.clear();
    this.monaco.editor.setModelMarkers(this.editor.getModel(), 'bzrk-server', []);
  }
}

// The KQL editor: Monaco with @kusto/monaco-kusto (AMD build, served under /monaco/vs), given the
// selected database's schema so completion and diagnostics know its tables and columns.
import type { ErrorLocation } from './api';

declare global {
  interface Window {
    require: any;
    monaco: any;
  }
}

const MONACO_BASE = '/monaco/vs';
let loading: Promise<any> | null = null;

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

export class KqlEditor {
  private editor: any = null;
  private monaco: any = null;
  private errorDecorations: any = null;
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
      this.editor.addAction({
        id: 'bzrk.run',
        label: 'Run query',
        keybindings: [monaco.KeyMod.CtrlCmd | monaco.KeyCode.Enter],
        run: () => this.onRun(),
      });
      this.editor.onDidChangeModelContent(() => this.clearError());
    });
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
  showError(location: ErrorLocation, message: string): void {
    if (!this.editor) return;
    const monaco = this.monaco;
    const model = this.editor.getModel();
    const startLine = Math.max(1, location.start_line);
    const endLine = Math.max(startLine, location.end_line || startLine);
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

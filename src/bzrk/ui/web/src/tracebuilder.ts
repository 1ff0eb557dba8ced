// The Tracing tab's relation-based query builder: span-sets of predicates joined by relations,
// `within` and `summarize`, and a live preview of the trace-find KQL it emits (tracefind.ts).
import { clear, h } from './dom';
import {
  BuilderError,
  FIELDS,
  NUMBER_OPS,
  RELATIONS,
  TEXT_OPS,
  emptyQuery,
  toKql,
  type Field,
  type Op,
  type Predicate,
  type Relation,
  type SpanSet,
  type TraceQuery,
} from './tracefind';

const PLACEHOLDERS: Partial<Record<Field, string>> = {
  service: 'payment',
  span_name: 'POST /checkout',
  status: 'ERROR',
  kind: 'SERVER',
  duration: '250ms',
  body: 'timeout',
  severity: 'ERROR',
  search: 'Deadlock',
};

function opsFor(field: Field): Op[] {
  if (field === 'duration') return NUMBER_OPS;
  if (field === 'attribute' || field === 'resource') return [...TEXT_OPS, '>', '>=', '<', '<='];
  if (field === 'search') return ['has'];
  return TEXT_OPS;
}

export class TraceBuilder {
  readonly element: HTMLElement;
  private stepsHost = h('div.tb-steps');
  private preview = h('pre.tb-preview', { 'data-testid': 'tracefind-preview', 'aria-label': 'KQL preview' });
  private problem = h('p.error-text', { role: 'status' });
  private within: HTMLInputElement;
  private summarize: HTMLInputElement;
  private runButton: HTMLButtonElement;
  query: TraceQuery;

  constructor(
    table: string,
    private onRun: (kql: string) => void,
  ) {
    this.query = emptyQuery(table);
    this.within = h('input', { 'aria-label': 'within', placeholder: '5m', size: 6, oninput: () => this.changed() });
    this.summarize = h('input.tb-summarize', {
      'aria-label': 'summarize',
      placeholder: 'count() by service = tostring(resource.service.name)',
      oninput: () => this.changed(),
    });
    this.runButton = h('button.primary', { type: 'button', 'data-testid': 'tracefind-run', onclick: () => this.run() }, 'Find traces');
    this.element = h(
      'section.trace-builder',
      { 'aria-label': 'trace-find builder' },
      h('div.tb-title', {}, h('strong', {}, 'Find traces by structure'), h('span.muted', {}, ' — span-sets joined by relations, emitted as trace-find')),
      this.stepsHost,
      h(
        'div.tb-options',
        {},
        h('button', { type: 'button', 'data-testid': 'tb-add-step', onclick: () => this.addStep() }, '+ Add step'),
        h('label.field', {}, 'within ', this.within),
        h('label.field.grow', {}, 'summarize ', this.summarize),
        this.runButton,
      ),
      this.preview,
      this.problem,
    );
    this.render();
  }

  setTable(table: string): void {
    this.query.table = table;
    this.changed();
  }

  /** Replaces the whole model (tests and saved views use it). */
  load(query: TraceQuery): void {
    this.query = structuredClone(query);
    this.within.value = query.within;
    this.summarize.value = query.summarize;
    this.render();
  }

  private addStep(): void {
    this.query.steps.push({ relation: '>>', set: { predicates: [{ field: 'status', op: '==', value: 'ERROR' }] } });
    this.render();
  }

  private changed(): void {
    this.query.within = this.within.value;
    this.query.summarize = this.summarize.value;
    this.updatePreview();
  }

  kql(): string | null {
    try {
      return toKql(this.query);
    } catch (e) {
      if (e instanceof BuilderError) return null;
      throw e;
    }
  }

  private updatePreview(): void {
    try {
      this.preview.textContent = toKql(this.query);
      this.problem.textContent = '';
      this.runButton.disabled = false;
    } catch (e) {
      if (!(e instanceof BuilderError)) throw e;
      this.problem.textContent = e.message;
      this.runButton.disabled = true;
    }
  }

  private run(): void {
    const kql = this.kql();
    if (kql) this.onRun(kql);
  }

  private render(): void {
    clear(this.stepsHost);
    this.stepsHost.appendChild(this.spanSetView(this.query.first, 0, null));
    this.query.steps.forEach((step, i) => {
      const relation = h(
        'select.tb-relation',
        {
          'aria-label': `relation ${i + 1}`,
          onchange: (e: Event) => {
            step.relation = (e.target as HTMLSelectElement).value as Relation;
            this.updatePreview();
          },
        },
        ...RELATIONS.map(([value, label]) => h('option', { value, selected: value === step.relation }, `${label} (${value})`)),
      );
      this.stepsHost.appendChild(h('div.tb-relation-row', {}, relation));
      this.stepsHost.appendChild(
        this.spanSetView(step.set, i + 1, () => {
          this.query.steps.splice(i, 1);
          this.render();
        }),
      );
    });
    this.updatePreview();
  }

  private spanSetView(set: SpanSet, index: number, remove: (() => void) | null): HTMLElement {
    const rows = set.predicates.map((p, i) => this.predicateView(set, p, i));
    return h(
      'div.tb-spanset',
      { 'data-step': String(index) },
      h('span.tb-brace', {}, '{'),
      h('div.tb-predicates', {}, rows.length ? rows : h('span.muted', {}, 'any span')),
      h(
        'div.tb-set-actions',
        {},
        h(
          'button.link',
          {
            type: 'button',
            'data-testid': `tb-add-condition-${index}`,
            onclick: () => {
              set.predicates.push({ field: 'service', op: '==', value: '' });
              this.render();
            },
          },
          '+ condition',
        ),
        remove ? h('button.link', { type: 'button', 'aria-label': `Remove step ${index + 1}`, onclick: remove }, '✕ step') : null,
      ),
      h('span.tb-brace', {}, '}'),
    );
  }

  private predicateView(set: SpanSet, p: Predicate, i: number): HTMLElement {
    const field = h(
      'select',
      {
        'aria-label': 'field',
        onchange: (e: Event) => {
          p.field = (e.target as HTMLSelectElement).value as Field;
          if (!opsFor(p.field).includes(p.op)) p.op = opsFor(p.field)[0];
          this.render();
        },
      },
      ...FIELDS.map(([value, label]) => h('option', { value, selected: value === p.field }, label)),
    );
    const path =
      p.field === 'attribute' || p.field === 'resource'
        ? h('input.tb-path', {
            'aria-label': 'attribute path',
            placeholder: p.field === 'attribute' ? 'http.route' : 'service.version',
            value: p.path ?? '',
            oninput: (e: Event) => {
              p.path = (e.target as HTMLInputElement).value;
              this.updatePreview();
            },
          })
        : null;
    const op =
      p.field === 'search'
        ? null
        : h(
            'select',
            {
              'aria-label': 'operator',
              onchange: (e: Event) => {
                p.op = (e.target as HTMLSelectElement).value as Op;
                this.updatePreview();
              },
            },
            ...opsFor(p.field).map((value) => h('option', { value, selected: value === p.op }, value)),
          );
    const value = h('input.tb-value', {
      'aria-label': 'value',
      placeholder: PLACEHOLDERS[p.field] ?? 'value',
      value: p.value,
      oninput: (e: Event) => {
        p.value = (e.target as HTMLInputElement).value;
        this.updatePreview();
      },
    });
    return h(
      'div.tb-predicate',
      {},
      i ? h('span.muted', {}, 'and') : null,
      field,
      path,
      op,
      value,
      h(
        'button.link',
        {
          type: 'button',
          'aria-label': 'Remove condition',
          onclick: () => {
            set.predicates.splice(i, 1);
            this.render();
          },
        },
        '✕',
      ),
    );
  }
}

// The time-range field every page shares: type `2h`, `now-1d`, `now-2h..now-1h` or two instants,
// or pick a preset; and the UTC/local toggle beside it.
import { h } from './dom';
import { currentZone, onZoneChange, setZone, zoneLabel } from './format';
import { PRESETS, parseRange, rangeLabel, rangeText, type TimeRange } from './timerange';

let pickers = 0;

export class TimePicker {
  readonly element: HTMLElement;
  readonly input: HTMLInputElement;
  private zoneButton: HTMLButtonElement;
  private value: TimeRange;

  constructor(
    initial: TimeRange,
    private onChange: (range: TimeRange) => void,
    id = 'time-range',
  ) {
    this.value = initial;
    const listId = `time-presets-${++pickers}`;
    this.input = h('input.time-input', {
      id,
      'aria-label': 'Time range',
      list: listId,
      spellcheck: false,
      autocomplete: 'off',
      title: 'Type 2h, now-1d, now-2h..now-1h or "2026-12-01 10:00 .. 2026-12-01 12:00"; Enter applies',
      onkeydown: (e: KeyboardEvent) => {
        if (e.key === 'Enter') {
          e.preventDefault();
          this.apply();
        } else if (e.key === 'Escape') {
          this.show();
          this.input.blur();
        }
      },
      onchange: () => this.apply(),
    });
    const list = h('datalist', { id: listId }, ...PRESETS.map((p) => h('option', { value: p }, rangeLabel({ from: p, to: 'now' }))));
    this.zoneButton = h('button.zone', {
      type: 'button',
      'data-testid': 'zone-toggle',
      title: 'Show times in UTC or in local time',
      onclick: () => setZone(currentZone() === 'utc' ? 'local' : 'utc'),
    });
    this.element = h('span.time-picker', {}, this.input, list, this.zoneButton);
    onZoneChange(() => this.show());
    this.show();
  }

  get range(): TimeRange {
    return this.value;
  }

  set range(next: TimeRange) {
    this.value = next;
    this.show();
  }

  private show(): void {
    this.input.value = rangeText(this.value);
    // Absolute ranges are long: the field grows to show both ends.
    this.input.style.width = `${Math.max(14, this.input.value.length + 3)}ch`;
    this.input.removeAttribute('aria-invalid');
    this.input.title = `${rangeLabel(this.value)} (${zoneLabel()})`;
    this.zoneButton.textContent = zoneLabel();
  }

  private apply(): void {
    const parsed = parseRange(this.input.value);
    if (!parsed) {
      this.input.setAttribute('aria-invalid', 'true');
      this.input.title = `Cannot read "${this.input.value}": try 2h, now-1d, now-2h..now-1h or two instants joined by ..`;
      return;
    }
    const changed = parsed.from !== this.value.from || parsed.to !== this.value.to;
    this.value = parsed;
    this.show();
    if (changed) this.onChange(parsed);
  }
}

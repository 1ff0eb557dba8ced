// The Alerts page (list, one alert's definition and history, mute/test/delete) and the
// "Alert on this" form the explorer opens with its current query. Everything goes through the
// gateway's /api/v1/alerts and /api/v1/connections (docs/alerts.md).
import { api } from './api';
import { clear, h, toast } from './dom';
import './alerts.css';

export interface Alert {
  id: string;
  name: string;
  query: string;
  database: string;
  since: string;
  every: string;
  condition: string;
  for: string;
  repeat: string | null;
  severity: string;
  connections: string[];
  enabled: boolean;
  state: string;
  state_since: string;
  muted: boolean;
  muted_until: string | null;
  last_evaluation: { time: string; value: unknown; run_id: string | null; error: { code: string; message: string } | null } | null;
  owner_name: string;
}

export interface Evaluation {
  time: string;
  status: string;
  value: unknown;
  run_id: string | null;
  run_status: string | null;
  notified: boolean;
  notification: string;
  error: { code: string; message: string } | null;
  test: boolean;
}

interface Connection {
  id: string;
  name: string;
  type: string;
}

function navigate(path: string): void {
  history.pushState(null, '', path);
  window.dispatchEvent(new PopStateEvent('popstate'));
}

function stateBadge(alert: Pick<Alert, 'state' | 'muted' | 'enabled'>): HTMLElement {
  const label = alert.state + (alert.muted ? ' · muted' : '') + (alert.enabled ? '' : ' · paused');
  return h('span.alert-state', { 'data-state': alert.state }, label);
}

function value(v: unknown): string {
  return v === null || v === undefined ? '–' : typeof v === 'object' ? JSON.stringify(v) : String(v);
}

export class AlertsPage {
  element: HTMLElement;
  private body = h('div.alerts-body');

  constructor(alertId: string | null = null) {
    this.element = h('div.alerts-page', {}, this.body);
    void (alertId ? this.showAlert(alertId) : this.showList());
  }

  private async showList(): Promise<void> {
    clear(this.body);
    const heading = h('div.alerts-head', {}, h('h2', {}, 'Alerts'), h('span.spacer'), h('button', { type: 'button', onclick: () => openAlertDialog({}, (a) => navigate(`/alerts/${a.id}`)) }, 'New alert…'));
    this.body.append(heading);
    try {
      const { alerts } = await api<{ alerts: Alert[] }>('GET', '/api/v1/alerts');
      if (!alerts.length) {
        this.body.append(h('p.muted', {}, 'No alerts yet. In Explore, run a query and choose “Alert on this”.'));
        return;
      }
      const rows = alerts.map((a) =>
        h(
          'tr',
          { 'data-alert': a.name },
          h('td', {}, h('a', { href: `/alerts/${a.id}`, onclick: (e: Event) => (e.preventDefault(), navigate(`/alerts/${a.id}`)) }, a.name)),
          h('td', {}, stateBadge(a)),
          h('td', {}, h('code', {}, a.condition)),
          h('td', {}, `every ${a.every}, since ${a.since}`),
          h('td', {}, a.database),
          h('td', {}, value(a.last_evaluation?.value)),
          h('td.muted', {}, a.last_evaluation?.time ?? 'not evaluated yet'),
        ),
      );
      this.body.append(
        h('table.alerts-table', {}, h('thead', {}, h('tr', {}, ...['Name', 'State', 'Condition', 'Schedule', 'Database', 'Last value', 'Last evaluated'].map((t) => h('th', {}, t)))), h('tbody', {}, rows)),
      );
    } catch (e) {
      this.body.append(h('p.error-text', { role: 'alert' }, (e as Error).message));
    }
  }

  private async showAlert(id: string): Promise<void> {
    clear(this.body);
    const back = h('a', { href: '/alerts', onclick: (e: Event) => (e.preventDefault(), navigate('/alerts')) }, '← Alerts');
    this.body.append(back);
    let alert: Alert;
    try {
      alert = (await api<{ alert: Alert }>('GET', `/api/v1/alerts/${encodeURIComponent(id)}`)).alert;
    } catch (e) {
      this.body.append(h('p.error-text', { role: 'alert' }, (e as Error).message));
      return;
    }
    const path = `/api/v1/alerts/${encodeURIComponent(alert.id)}`;
    const act = async (method: string, suffix: string, body: unknown, done: string) => {
      try {
        await api(method, path + suffix, body);
        toast(done);
        await this.showAlert(alert.id);
      } catch (e) {
        toast((e as Error).message, 'error');
      }
    };
    const details: [string, string | HTMLElement][] = [
      ['State', h('span', {}, stateBadge(alert), ` since ${alert.state_since}`)],
      ['Query', h('pre.alert-query', {}, alert.query)],
      ['Database', alert.database],
      ['Window', `since ${alert.since}`],
      ['Schedule', `every ${alert.every}, for ${alert.for}${alert.repeat ? `, repeat ${alert.repeat}` : ''}`],
      ['Condition', h('code', {}, alert.condition)],
      ['Severity', alert.severity],
      ['Connections', alert.connections.join(', ') || 'none'],
      ['Muted until', alert.muted_until ?? '–'],
      ['Owner', alert.owner_name || '–'],
    ];
    this.body.append(
      h('div.alerts-head', {}, h('h2', {}, alert.name), h('span.spacer'),
        alert.muted
          ? h('button', { type: 'button', onclick: () => act('DELETE', '/mute', undefined, 'Unmuted') }, 'Unmute')
          : h('button', { type: 'button', onclick: () => act('POST', '/mute', { for: '1h' }, 'Muted for an hour') }, 'Mute 1 h'),
        h('button', { type: 'button', onclick: () => act('POST', '/test', undefined, 'Evaluated; test notifications sent') }, 'Test'),
        h('button', { type: 'button', onclick: () => act('PATCH', '', { enabled: !alert.enabled }, alert.enabled ? 'Paused' : 'Resumed') }, alert.enabled ? 'Pause' : 'Resume'),
        h('button.danger', { type: 'button', onclick: async () => {
          if (!confirm(`Delete alert "${alert.name}" and its history?`)) return;
          try { await api('DELETE', path); navigate('/alerts'); } catch (e) { toast((e as Error).message, 'error'); }
        } }, 'Delete')),
      h('dl.alert-details', {}, details.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
      h('h3', {}, 'History'),
    );
    try {
      const { evaluations } = await api<{ evaluations: Evaluation[] }>('GET', `${path}/history?limit=200`);
      const rows = evaluations.map((e) =>
        h('tr', { 'data-status': e.status },
          h('td', {}, e.time),
          h('td', {}, h('span.alert-state', { 'data-state': e.status }, e.status + (e.test ? ' (test)' : ''))),
          h('td', {}, value(e.value)),
          h('td', {}, e.run_id ? h('code', { title: e.run_status ?? '' }, e.run_id) : '–'),
          h('td', {}, e.notification),
          h('td.muted', {}, e.error ? `${e.error.code}: ${e.error.message}` : ''),
        ),
      );
      this.body.append(
        evaluations.length
          ? h('table.alerts-table.history', {}, h('thead', {}, h('tr', {}, ...['Time', 'Status', 'Value', 'Run', 'Notification', 'Error'].map((t) => h('th', {}, t)))), h('tbody', {}, rows))
          : h('p.muted', {}, 'Not evaluated yet.'),
      );
    } catch (e) {
      this.body.append(h('p.error-text', { role: 'alert' }, (e as Error).message));
    }
  }
}

/** The "Alert on this" form: prefilled from the explorer; calls saved() with the new alert. */
export function openAlertDialog(defaults: { query?: string; database?: string; since?: string }, saved: (alert: Alert) => void): void {
  const field = (label: string, input: HTMLElement) => h('label.alert-field', {}, h('span', {}, label), input);
  const name = h('input', { name: 'name', required: true, placeholder: 'checkout errors' });
  const query = h('textarea', { name: 'query', rows: 4, required: true });
  query.value = defaults.query ?? '';
  const database = h('input', { name: 'database', required: true, value: defaults.database ?? 'default' });
  const since = h('input', { name: 'since', value: defaults.since && /ago$/.test(defaults.since) ? defaults.since : '5m ago' });
  const every = h('input', { name: 'every', value: '1m' });
  const condition = h('input', { name: 'condition', required: true, placeholder: 'n >= 50  or  rows >= 1' });
  const forInput = h('input', { name: 'for', value: '0s' });
  const severity = h('select', { name: 'severity' }, ...['info', 'warning', 'critical'].map((s) => h('option', { value: s, selected: s === 'warning' }, s)));
  const connections = h('div.alert-connections');
  const message = h('p.error-text', { role: 'alert' });
  const dialog = h('dialog.alert-dialog', {});
  const form = h('form', {
    method: 'dialog',
    onsubmit: async (e: Event) => {
      e.preventDefault();
      message.textContent = '';
      const chosen = [...connections.querySelectorAll<HTMLInputElement>('input:checked')].map((i) => i.value);
      try {
        const { alert } = await api<{ alert: Alert }>('POST', '/api/v1/alerts', {
          name: name.value, query: query.value, database: database.value, since: since.value,
          every: every.value, condition: condition.value, for: forInput.value, severity: severity.value, connections: chosen,
        });
        dialog.close();
        dialog.remove();
        toast(`Alert "${alert.name}" saved`);
        saved(alert);
      } catch (err) {
        message.textContent = (err as Error).message;
      }
    },
  },
    h('h2', {}, 'Alert on this query'),
    field('Name', name), field('Query', query), field('Database', database),
    field('Window', since), field('Every', every),
    field('Condition (stop language)', condition), field('For (hold before firing)', forInput),
    field('Severity', severity), h('div.alert-field', {}, h('span', {}, 'Notify'), connections),
    message,
    h('div.alert-actions', {}, h('button', { type: 'button', onclick: () => (dialog.close(), dialog.remove()) }, 'Cancel'), h('button.primary', { type: 'submit' }, 'Save alert')),
  );
  dialog.append(form);
  document.body.append(dialog);
  dialog.showModal();
  name.focus();
  void api<{ connections: Connection[] }>('GET', '/api/v1/connections').then(
    ({ connections: found }) => {
      if (!found.length) connections.append(h('span.muted', {}, 'no connections yet (POST /api/v1/connections)'));
      for (const c of found) connections.append(h('label', {}, h('input', { type: 'checkbox', value: c.id }), ` ${c.name} (${c.type})`));
    },
    () => connections.append(h('span.muted', {}, 'connections could not be listed')),
  );
}

// Settings (admins): service principals and their tokens, ingest tokens, users, access (the
// permission tuples: who may see which database) and the audit log — all through the gateway's
// admin API. Secrets (tokens, generated passwords) are shown once, with a copy button.
import { api } from './api';
import { clear, copyText, h, toast } from './dom';

interface ServicePrincipal {
  id: string;
  name: string;
  role: string;
  display_name?: string;
  created_at?: string;
}
interface SpToken {
  id: string;
  name: string;
  prefix: string;
  created_at?: string;
  expires_at?: string | null;
  revoked_at?: string | null;
}
interface IngestToken {
  id: string;
  name: string;
  database: string;
  table: string;
  prefix: string;
  created_at?: string;
  revoked_at?: string | null;
}
interface User {
  id: string;
  username: string;
  role: string;
  display_name?: string;
  disabled?: boolean;
}

interface Grant {
  id: string | null;
  principal: string; // user:<id> | sp:<id>
  principal_name: string;
  relation: string;
  object: string; // database:<name> | cluster
  database: string | null;
}
interface AuditEvent {
  id: number;
  at: string;
  event: string;
  outcome: string;
  reason: string;
  actor: string;
  actor_name: string;
  target: string;
  surface: string;
  address: string;
}

const ROLES = ['member', 'admin'];
const RELATIONS = ['viewer', 'editor', 'admin'];
const AUDIT_PAGE = 50;

function secretBox(label: string, secret: string): HTMLElement {
  return h(
    'div.secret',
    { role: 'alert', 'data-testid': 'secret' },
    h('div', {}, h('strong', {}, label), ' — copy it now: it will not be shown again.'),
    h('code.secret-value', {}, secret),
    h('button', { type: 'button', onclick: () => void copyText(secret).then(() => toast('Copied')) }, 'Copy'),
  );
}

function roleSelect(value = 'member'): HTMLSelectElement {
  const select = h('select', { 'aria-label': 'Role' });
  for (const role of ROLES) select.appendChild(h('option', { value }, role));
  for (const [i, role] of ROLES.entries()) (select.options[i] as HTMLOptionElement).value = role;
  select.value = value;
  return select;
}

async function run(action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (e) {
    toast((e as Error).message, 'error');
  }
}

export class SettingsPage {
  readonly element: HTMLElement;
  private spSection = h('section.card', { 'aria-labelledby': 'sp-title' });
  private ingestSection = h('section.card', { 'aria-labelledby': 'ingest-title' });
  private userSection = h('section.card', { 'aria-labelledby': 'users-title' });
  private accessSection = h('section.card', { 'aria-labelledby': 'access-title' });
  private auditSection = h('section.card', { 'aria-labelledby': 'audit-title' });

  constructor() {
    this.element = h(
      'div.settings',
      {},
      h('h1', {}, 'Settings'),
      this.spSection,
      this.ingestSection,
      this.userSection,
      this.accessSection,
      this.auditSection,
    );
    void this.renderServicePrincipals();
    void this.renderIngestTokens();
    void this.renderUsers();
    void this.renderAccess();
    void this.renderAudit();
  }

  // -- service principals ---------------------------------------------------------------------
  private async renderServicePrincipals(secret?: HTMLElement): Promise<void> {
    const section = this.spSection;
    const name = h('input', { placeholder: 'name, e.g. grafana', 'aria-label': 'Service principal name', required: true });
    const role = roleSelect();
    const form = h(
      'form.inline-form',
      {
        onsubmit: (e: Event) => {
          e.preventDefault();
          void run(async () => {
            const created = await api<{ service_principal: ServicePrincipal }>('POST', '/api/v1/admin/service-principals', { name: name.value.trim(), role: role.value });
            const token = await api<{ token: string }>('POST', `/api/v1/admin/service-principals/${created.service_principal.id}/tokens`, { name: 'default' });
            await this.renderServicePrincipals(secretBox(`Token for ${created.service_principal.name}`, token.token));
          });
        },
      },
      name,
      role,
      h('button.primary', { type: 'submit' }, 'Create service principal'),
    );
    const { service_principals: sps } = await api<{ service_principals: ServicePrincipal[] }>('GET', '/api/v1/admin/service-principals');
    const table = h('table.list', { 'aria-label': 'Service principals' }, h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Role'), h('th', {}, 'Tokens'), h('th', {}, ''))));
    const body = h('tbody');
    for (const sp of sps) {
      const tokens = h('td.tokens', {}, '…');
      body.appendChild(
        h(
          'tr',
          { 'data-sp': sp.name },
          h('td', {}, sp.name),
          h('td', {}, sp.role),
          tokens,
          h(
            'td.actions',
            {},
            h(
              'button',
              {
                type: 'button',
                onclick: () =>
                  void run(async () => {
                    const token = await api<{ token: string }>('POST', `/api/v1/admin/service-principals/${sp.id}/tokens`, { name: 'token' });
                    await this.renderServicePrincipals(secretBox(`New token for ${sp.name}`, token.token));
                  }),
              },
              'New token',
            ),
            h(
              'button.danger',
              {
                type: 'button',
                'aria-label': `Delete service principal ${sp.name}`,
                onclick: () =>
                  void run(async () => {
                    if (!confirm(`Delete service principal "${sp.name}" and revoke all its tokens?`)) return;
                    await api('DELETE', `/api/v1/admin/service-principals/${sp.id}`);
                    toast(`Deleted ${sp.name}`);
                    await this.renderServicePrincipals();
                  }),
              },
              'Delete',
            ),
          ),
        ),
      );
      void this.fillTokens(sp, tokens);
    }
    table.appendChild(body);
    clear(section);
    section.append(h('h2#sp-title', {}, 'Service principals'), h('p.muted', {}, 'Non-human identities for Grafana, Kusto SDKs, CI and agents. Tokens are bzrk_sp_… bearer tokens.'), ...(secret ? [secret] : []), form, table);
  }

  private async fillTokens(sp: ServicePrincipal, cell: HTMLElement): Promise<void> {
    try {
      const { tokens } = await api<{ tokens: SpToken[] }>('GET', `/api/v1/admin/service-principals/${sp.id}/tokens`);
      clear(cell);
      const live = tokens.filter((t) => !t.revoked_at);
      if (!live.length) cell.append(h('span.muted', {}, 'none'));
      for (const token of live) {
        cell.append(
          h(
            'span.token-chip',
            { 'data-token': token.prefix },
            h('code', {}, `${token.prefix}…`),
            h(
              'button.link',
              {
                type: 'button',
                'aria-label': `Revoke token ${token.prefix}`,
                onclick: () =>
                  void run(async () => {
                    await api('DELETE', `/api/v1/admin/service-principals/${sp.id}/tokens/${token.id}`);
                    toast(`Revoked ${token.prefix}…`);
                    await this.fillTokens(sp, cell);
                  }),
              },
              'revoke',
            ),
          ),
        );
      }
    } catch (e) {
      cell.textContent = (e as Error).message;
    }
  }

  // -- ingest tokens ------------------------------------------------------------------------
  private async renderIngestTokens(secret?: HTMLElement): Promise<void> {
    const section = this.ingestSection;
    const name = h('input', { placeholder: 'name, e.g. otel-collector', 'aria-label': 'Ingest token name', required: true });
    const target = h('select', { 'aria-label': 'Table' });
    try {
      const { tables } = await api<{ tables: { database: string; name: string }[] }>('GET', '/api/v1/admin/tables');
      for (const t of tables) target.appendChild(h('option', { value: `${t.database}/${t.name}` }, `${t.database}.${t.name}`));
    } catch {
      target.appendChild(h('option', { value: 'default/default' }, 'default.default'));
    }
    const form = h(
      'form.inline-form',
      {
        onsubmit: (e: Event) => {
          e.preventDefault();
          void run(async () => {
            const [database, table] = target.value.split('/');
            const created = await api<{ token: string; name: string }>('POST', '/api/v1/admin/ingest-tokens', { name: name.value.trim(), database, table });
            await this.renderIngestTokens(secretBox(`Ingest token ${created.name}`, created.token));
          });
        },
      },
      name,
      target,
      h('button.primary', { type: 'submit' }, 'Create ingest token'),
    );
    const table = h('table.list', { 'aria-label': 'Ingest tokens' }, h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Table'), h('th', {}, 'Prefix'), h('th', {}, ''))));
    const body = h('tbody');
    try {
      const { ingest_tokens: tokens } = await api<{ ingest_tokens: IngestToken[] }>('GET', '/api/v1/admin/ingest-tokens');
      for (const t of tokens.filter((t) => !t.revoked_at)) {
        body.appendChild(
          h(
            'tr',
            {},
            h('td', {}, t.name),
            h('td', {}, `${t.database}.${t.table}`),
            h('td', {}, h('code', {}, `${t.prefix}…`)),
            h(
              'td.actions',
              {},
              h(
                'button.danger',
                {
                  type: 'button',
                  onclick: () =>
                    void run(async () => {
                      if (!confirm(`Revoke ingest token "${t.name}"? Senders using it will be refused.`)) return;
                      await api('DELETE', `/api/v1/admin/ingest-tokens/${t.id}`);
                      await this.renderIngestTokens();
                    }),
                },
                'Revoke',
              ),
            ),
          ),
        );
      }
    } catch (e) {
      body.appendChild(h('tr', {}, h('td', { colspan: 4 }, (e as Error).message)));
    }
    table.appendChild(body);
    clear(section);
    section.append(h('h2#ingest-title', {}, 'Ingest tokens'), h('p.muted', {}, 'ing_… tokens for OTLP and Loki senders, each bound to one table.'), ...(secret ? [secret] : []), form, table);
  }

  // -- users ----------------------------------------------------------------------------------
  private async renderUsers(secret?: HTMLElement): Promise<void> {
    const section = this.userSection;
    const username = h('input', { placeholder: 'username', 'aria-label': 'Username', required: true });
    const password = h('input', { type: 'password', placeholder: 'password (empty: generate)', 'aria-label': 'Password', autocomplete: 'new-password' });
    const role = roleSelect();
    const form = h(
      'form.inline-form',
      {
        onsubmit: (e: Event) => {
          e.preventDefault();
          void run(async () => {
            const created = await api<{ user: User; password?: string }>('POST', '/api/v1/admin/users', {
              username: username.value.trim(),
              role: role.value,
              ...(password.value ? { password: password.value } : {}),
            });
            await this.renderUsers(created.password ? secretBox(`Password for ${created.user.username}`, created.password) : undefined);
            toast(`Created ${created.user.username}`);
          });
        },
      },
      username,
      password,
      role,
      h('button.primary', { type: 'submit' }, 'Create user'),
    );
    const table = h('table.list', { 'aria-label': 'Users' }, h('thead', {}, h('tr', {}, h('th', {}, 'User'), h('th', {}, 'Role'), h('th', {}, 'Status'), h('th', {}, ''))));
    const body = h('tbody');
    try {
      const { users } = await api<{ users: User[] }>('GET', '/api/v1/admin/users');
      for (const user of users) {
        const select = roleSelect(user.role);
        select.addEventListener('change', () =>
          void run(async () => {
            await api('PATCH', `/api/v1/admin/users/${user.id}`, { role: select.value });
            toast(`${user.username} is now ${select.value}`);
          }),
        );
        body.appendChild(
          h(
            'tr',
            {},
            h('td', {}, user.username),
            h('td', {}, select),
            h('td', {}, user.disabled ? 'disabled' : 'active'),
            h(
              'td.actions',
              {},
              h(
                'button',
                {
                  type: 'button',
                  onclick: () =>
                    void run(async () => {
                      await api('PATCH', `/api/v1/admin/users/${user.id}`, { disabled: !user.disabled });
                      await this.renderUsers();
                    }),
                },
                user.disabled ? 'Enable' : 'Disable',
              ),
            ),
          ),
        );
      }
    } catch (e) {
      body.appendChild(h('tr', {}, h('td', { colspan: 4 }, (e as Error).message)));
    }
    table.appendChild(body);
    clear(section);
    section.append(h('h2#users-title', {}, 'Users'), h('p.muted', {}, 'Local accounts that sign in to this UI and the CLI.'), ...(secret ? [secret] : []), form, table);
  }

  // -- access: permission tuples (principal, relation, database) ------------------------------
  private async renderAccess(): Promise<void> {
    const section = this.accessSection;
    const principal = h('select', { 'aria-label': 'Principal', required: true });
    const relation = h('select', { 'aria-label': 'Relation' });
    for (const r of RELATIONS) relation.appendChild(h('option', { value: r }, r));
    const database = h('select', { 'aria-label': 'Database', required: true });
    const form = h(
      'form.inline-form',
      {
        onsubmit: (e: Event) => {
          e.preventDefault();
          void run(async () => {
            await api('POST', '/api/v1/admin/grants', { principal: principal.value, relation: relation.value, database: database.value });
            toast(`Granted ${relation.value} on ${database.value}`);
            await this.renderAccess();
          });
        },
      },
      principal,
      relation,
      database,
      h('button.primary', { type: 'submit' }, 'Grant'),
    );
    const table = h('table.list', { 'aria-label': 'Grants' }, h('thead', {}, h('tr', {}, h('th', {}, 'Principal'), h('th', {}, 'Relation'), h('th', {}, 'Object'), h('th', {}, ''))));
    const body = h('tbody');
    try {
      const [{ users }, { service_principals: sps }, { databases }, { grants }] = await Promise.all([
        api<{ users: User[] }>('GET', '/api/v1/admin/users'),
        api<{ service_principals: ServicePrincipal[] }>('GET', '/api/v1/admin/service-principals'),
        api<{ databases: { name: string }[] }>('GET', '/api/v1/databases'),
        api<{ grants: Grant[] }>('GET', '/api/v1/admin/grants'),
      ]);
      // Keys name principals: a user and a service principal may share a name.
      for (const u of users) principal.appendChild(h('option', { value: `user:${u.id}` }, `${u.username} (user)`));
      for (const sp of sps) principal.appendChild(h('option', { value: `sp:${sp.id}` }, `${sp.name} (service principal)`));
      for (const db of databases) database.appendChild(h('option', { value: db.name }, db.name));
      database.appendChild(h('option', { value: 'cluster' }, 'cluster (admin role)'));
      for (const grant of grants) {
        const target = grant.database ?? 'cluster';
        body.appendChild(
          h(
            'tr',
            { 'data-principal': grant.principal },
            h('td', {}, grant.principal_name || grant.principal, h('div.muted', {}, grant.principal)),
            h('td', {}, grant.relation),
            h('td', {}, grant.object),
            h(
              'td.actions',
              {},
              h(
                'button.danger',
                {
                  type: 'button',
                  'aria-label': `Revoke ${grant.relation} on ${target} from ${grant.principal_name || grant.principal}`,
                  onclick: () =>
                    void run(async () => {
                      const params = new URLSearchParams({ principal: grant.principal, relation: grant.relation, database: target });
                      await api('DELETE', `/api/v1/admin/grants?${params}`);
                      toast(`Revoked ${grant.relation} on ${target}`);
                      await this.renderAccess();
                    }),
                },
                'Revoke',
              ),
            ),
          ),
        );
      }
    } catch (e) {
      body.appendChild(h('tr', {}, h('td', { colspan: 4 }, (e as Error).message)));
    }
    table.appendChild(body);
    clear(section);
    section.append(
      h('h2#access-title', {}, 'Access'),
      h('p.muted', {}, 'Who may see which database: viewer (query), editor (also tables and ingest tokens), admin (also grants). A new member starts with viewer on default. Changes apply to the next request.'),
      form,
      table,
    );
  }

  // -- the audit log --------------------------------------------------------------------------
  private async renderAudit(before?: number, rows?: HTMLElement): Promise<void> {
    const section = this.auditSection;
    let body = rows;
    if (!body) {
      body = h('tbody');
      const table = h(
        'table.list',
        { 'aria-label': 'Audit log' },
        h('thead', {}, h('tr', {}, h('th', {}, 'When'), h('th', {}, 'Event'), h('th', {}, 'Outcome'), h('th', {}, 'Who'), h('th', {}, 'Target'), h('th', {}, 'Where'))),
        body,
      );
      clear(section);
      section.append(h('h2#audit-title', {}, 'Audit log'), h('p.muted', {}, 'Sign-ins, token mint and revoke, grant changes and refused requests, newest first.'), table);
    }
    section.querySelector('button.more')?.remove();
    try {
      const params = new URLSearchParams({ limit: String(AUDIT_PAGE), ...(before ? { before: String(before) } : {}) });
      const { events } = await api<{ events: AuditEvent[] }>('GET', `/api/v1/admin/audit?${params}`);
      for (const ev of events) {
        const outcome = ev.reason ? `${ev.outcome}: ${ev.reason}` : ev.outcome;
        body.appendChild(
          h(
            'tr',
            { 'data-event': ev.event, 'data-outcome': ev.outcome },
            h('td', {}, new Date(ev.at).toLocaleString()),
            h('td', {}, ev.event),
            h('td', {}, outcome),
            h('td', { title: ev.actor }, ev.actor_name || ev.actor || '—'),
            h('td', {}, ev.target),
            h('td', {}, [ev.surface, ev.address].filter(Boolean).join(' ')),
          ),
        );
      }
      if (events.length === AUDIT_PAGE) {
        const last = events[events.length - 1]!.id;
        section.append(h('button.more', { type: 'button', onclick: () => void this.renderAudit(last, body) }, 'Older events'));
      }
    } catch (e) {
      body.appendChild(h('tr', {}, h('td', { colspan: 6 }, (e as Error).message)));
    }
  }
}

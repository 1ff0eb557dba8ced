// The app shell: sign-in, the top bar (navigation, theme, sign-out) and client-side routing.
import { AlertsPage } from './alerts';
import { login, logout, me, type Me } from './api';
import { DashboardListPage, DashboardPage } from './dashboards';
import { clear, h } from './dom';
import { ExplorePage } from './explore';
import { SettingsPage } from './settings';
import './style.css';
import { TracingPage } from './tracing';

const root = document.getElementById('app')!;
let current: Me | null = null;
let explore: ExplorePage | null = null;

function isDark(): boolean {
  return document.documentElement.dataset.theme !== 'light';
}

function toggleTheme(): void {
  const next = isDark() ? 'light' : 'dark';
  document.documentElement.dataset.theme = next;
  localStorage.setItem('bzrk.theme', next);
  explore?.setTheme(next === 'dark');
}

function navigate(path: string): void {
  if (`${location.pathname}${location.search}` !== path) history.pushState(null, '', path);
  void route();
}

function loginPage(error = ''): HTMLElement {
  const username = h('input#username', { name: 'username', autocomplete: 'username', required: true, autofocus: true });
  const password = h('input#password', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const message = h('p.error-text', { role: 'alert' }, error);
  const button = h('button.primary', { type: 'submit' }, 'Sign in');
  const form = h(
    'form.login',
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        button.disabled = true;
        message.textContent = '';
        try {
          await login(username.value, password.value);
          const target = new URLSearchParams(location.search).get('next');
          navigate(target && target.startsWith('/') && !target.startsWith('//') ? target : '/explore');
        } catch (err) {
          message.textContent = (err as Error).message;
          button.disabled = false;
        }
      },
    },
    h('h1', {}, h('span.logo', {}, 'bzrk'), ' sign in'),
    h('label', { for: 'username' }, 'Username'),
    username,
    h('label', { for: 'password' }, 'Password'),
    password,
    message,
    button,
  );
  return h('div.login-page', {}, form);
}

function topBar(who: Me, active: string): HTMLElement {
  const isAdmin = who.roles.includes('admin');
  const link = (path: string, label: string) =>
    h('a', { href: path, 'aria-current': active === path ? 'page' : undefined, onclick: (e: Event) => (e.preventDefault(), navigate(path)) }, label);
  return h(
    'header.topbar',
    {},
    h('span.logo', {}, 'bzrk'),
    h('nav', {}, link('/explore', 'Explore'), link('/tracing', 'Tracing'), link('/dashboards', 'Dashboards'), link('/alerts', 'Alerts'), isAdmin ? link('/settings', 'Settings') : null),
    h('span.spacer'),
    h('button.icon', { type: 'button', title: 'Toggle dark/light theme', 'aria-label': 'Toggle theme', onclick: toggleTheme }, '◐'),
    h('span.who', { 'data-testid': 'who' }, who.user?.username ?? who.subject),
    h(
      'button#logout',
      {
        type: 'button',
        onclick: async () => {
          await logout().catch(() => undefined);
          current = null;
          explore = null;
          navigate('/login');
        },
      },
      'Sign out',
    ),
  );
}

async function route(): Promise<void> {
  const path = location.pathname;
  if (!current) current = await me().catch(() => null);
  if (!current) {
    explore = null;
    clear(root);
    root.appendChild(loginPage());
    const here = `${path}${location.search}`;
    if (path !== '/login') history.replaceState(null, '', `/login${path !== '/' ? `?next=${encodeURIComponent(here)}` : ''}`);
    return;
  }
  if (path === '/login' || path === '/') {
    const next = new URLSearchParams(location.search).get('next');
    history.replaceState(null, '', next && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/login') ? next : '/explore');
    return route();
  }
  clear(root);
  if (path.startsWith('/settings') && current.roles.includes('admin')) {
    root.append(topBar(current, '/settings'), new SettingsPage().element);
  } else if (path === '/tracing') {
    root.append(topBar(current, '/tracing'), new TracingPage(isDark).element);
  } else if (path === '/dashboards') {
    root.append(topBar(current, '/dashboards'), new DashboardListPage().element);
  } else if (path.startsWith('/dashboards/')) {
    const id = decodeURIComponent(path.slice('/dashboards/'.length));
    root.append(topBar(current, '/dashboards'), new DashboardPage(id, isDark).element);
  } else if (path === '/alerts' || path.startsWith('/alerts/')) {
    root.append(topBar(current, '/alerts'), new AlertsPage(decodeURIComponent(path.slice('/alerts/'.length)) || null).element);
  } else {
    if (path !== '/explore') history.replaceState(null, '', '/explore');
    // The explorer keeps its state between visits; a link with a query builds it anew.
    if (!explore || new URLSearchParams(location.search).has('q')) explore = new ExplorePage(isDark);
    root.append(topBar(current, '/explore'), explore.element);
  }
}

window.addEventListener('popstate', () => void route());
window.addEventListener('bzrk:navigate', (e) => navigate((e as CustomEvent<string>).detail));
window.addEventListener('bzrk:signed-out', () => {
  if (!current) return;
  current = null;
  explore = null;
  void route();
});
void route();

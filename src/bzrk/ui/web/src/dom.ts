// A tiny element builder: h('div.class', {attrs}, children) — enough for this app, no framework.
type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, unknown>;

export function h<K extends keyof HTMLElementTagNameMap>(
  spec: K | `${K}.${string}` | `${K}#${string}`,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  // 'tag', 'tag.a.b', 'tag#id', 'tag#id.a', 'tag.a#id' — in any order after the tag.
  const tag = spec.match(/^[a-z0-9]+/i)![0];
  const id = spec.match(/#([\w-]+)/)?.[1];
  const classes = [...spec.matchAll(/\.([\w-]+)/g)].map((m) => m[1]);
  const el = document.createElement(tag as K);
  if (id) el.id = id;
  if (classes.length) el.className = classes.join(' ');
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2).toLowerCase(), value as EventListener);
    } else if (key === 'style' && typeof value === 'object') {
      Object.assign(el.style, value);
    } else if (key in el && typeof value !== 'string') {
      (el as unknown as Record<string, unknown>)[key] = value;
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

export async function copyText(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // Clipboard API needs a secure context or permission; fall back to a hidden textarea.
    const area = h('textarea', { style: { position: 'fixed', opacity: '0' } });
    area.value = text;
    document.body.appendChild(area);
    area.select();
    document.execCommand('copy');
    area.remove();
  }
}

export function toast(message: string, kind: 'info' | 'error' = 'info'): void {
  // One stack for all toasts, newest at the bottom: several never cover each other.
  let stack = document.querySelector<HTMLElement>('.toasts');
  if (!stack) {
    stack = h('div.toasts', { 'aria-live': 'polite' });
    document.body.appendChild(stack);
  }
  const el = h('div.toast', { role: 'status', 'data-kind': kind }, message);
  stack.appendChild(el);
  setTimeout(() => el.remove(), 3500);
}

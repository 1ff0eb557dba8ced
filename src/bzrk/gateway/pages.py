"""Server-rendered HTML of the gateway's own pages: login, OAuth consent, device approval.

Every value is escaped; forms carry a CSRF token; pages forbid framing (clickjacking).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from urllib.parse import urlsplit

from starlette.responses import HTMLResponse

# The web UI's look (ui/web/src/style.css: colours, the sign-in card, buttons), inline because
# these pages allow no external style sheet. Dark first, as the app; light when the browser
# asks for it (the app's own toggle lives in its local storage, which these pages cannot read).
_STYLE = (
    ":root{--bg:#0d1117;--panel:#161b22;--panel-2:#1c2128;--border:#30363d;--text:#c9d1d9;"
    "--muted:#8b949e;--accent:#2f81f7;--danger:#f85149;--warn:#d29922;color-scheme:dark}"
    "@media (prefers-color-scheme:light){:root{--bg:#fff;--panel:#f6f8fa;--panel-2:#eef1f4;"
    "--border:#d0d7de;--text:#1f2328;--muted:#59636e;--accent:#0969da;--danger:#cf222e;"
    "--warn:#9a6700;color-scheme:light}}"
    "*{box-sizing:border-box}html,body{margin:0;min-height:100%;background:var(--bg);"
    "color:var(--text);font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif}"
    "body{display:flex;align-items:center;justify-content:center;min-height:100vh;padding:1rem}"
    "main{width:min(380px,100%);padding:28px;background:var(--panel);"
    "border:1px solid var(--border);border-radius:10px}"
    "h1{font-size:20px;margin:0 0 14px}.logo{font-weight:700;color:var(--accent);"
    "letter-spacing:.5px;margin-right:6px}"
    "label{display:block;color:var(--muted);margin-top:8px}"
    "input{display:block;width:100%;margin:4px 0 6px;padding:7px 9px;font:inherit;"
    "color:inherit;background:var(--bg);border:1px solid var(--border);border-radius:6px}"
    "input:focus,button:focus-visible{outline:2px solid var(--accent);outline-offset:1px}"
    "button{flex:1;width:100%;margin-top:10px;padding:8px;font:inherit;cursor:pointer;"
    "color:#fff;background:var(--accent);border:1px solid var(--accent);border-radius:6px}"
    "button[value=deny]{color:var(--text);background:var(--panel-2);border-color:var(--border)}"
    "code{font-family:ui-monospace,Menlo,Consolas,monospace;background:var(--panel-2);"
    "padding:1px 5px;border-radius:4px;word-break:break-all}"
    ".row{display:flex;gap:.5rem}.err{color:var(--danger);margin:0 0 8px}"
    ".warn{color:var(--warn);font-weight:600}.client{color:var(--muted)}"
)

SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}


def page(title: str, body: str, status: int = 200) -> HTMLResponse:
    html = (
        f"<!doctype html><html><head><meta charset=utf-8><title>{escape(title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{_STYLE}</style></head><body><main>"
        f'<h1><span class="logo">bzrk</span>{escape(title)}</h1>{body}</main></body></html>'
    )
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def hidden(fields: Mapping[str, str]) -> str:
    return "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in fields.items()
    )


def login_form(action: str, fields: Mapping[str, str], error: str = "") -> str:
    err = f'<p class="err">{escape(error)}</p>' if error else ""
    return (
        f'{err}<form method="post" action="{escape(action)}">{hidden(fields)}'
        '<label>Username<input name="username" autocomplete="username" required></label>'
        '<label>Password<input name="password" type="password" '
        'autocomplete="current-password" required></label>'
        "<button>Sign in</button></form>"
    )


@dataclass(frozen=True, slots=True)
class ConsentView:
    """What the consent page must tell the user: who asks, how it is known, where codes go."""

    client_name: str
    client_id: str
    verified_by: str | None  # the metadata document URL of a CIMD client; None: self-registered
    redirect_uri: str
    redirect_host: str
    known_hosts: tuple[str, ...]  # redirect hosts this user allowed this client before
    scope: str
    username: str


def consent_form(action: str, view: ConsentView, fields: Mapping[str, str]) -> str:
    name = escape(view.client_name or "An application")
    if view.verified_by is None:
        badge = '<span class="warn">unverified</span>'
        how = (
            f"Client ID <code>{escape(view.client_id)}</code>. This client registered itself "
            "with this server: its name was chosen by whoever registered it, so it proves "
            "nothing. Allow it only if you started this sign-in yourself."
        )
    else:
        badge = ""
        how = (
            "Identified by its metadata document "
            f"<code>{escape(view.verified_by)}</code> (served by "
            f"<b>{escape(urlsplit(view.verified_by).netloc)}</b>)."
        )
    where = escape(view.redirect_host or view.redirect_uri)
    if view.known_hosts:
        seen = ", ".join(escape(h) for h in view.known_hosts)
        note = (
            f'<p class="warn">This client has not sent you to <b>{where}</b> before (you allowed '
            f"{seen}). Continue only if you expect it.</p>"
        )
    else:
        note = ""
    return (
        f"<p><b>{name}</b> {badge} asks to use bzrk as <b>{escape(view.username)}</b> with "
        f"scope <code>{escape(view.scope)}</code>.</p>"
        f'<p class="client">{how}</p>'
        f"<p>If you allow, the authorization code goes to <b>{where}</b>: "
        f"<code>{escape(view.redirect_uri)}</code></p>{note}"
        f'<form method="post" action="{escape(action)}">{hidden(fields)}<div class="row">'
        '<button name="decision" value="approve">Allow</button>'
        '<button name="decision" value="deny">Deny</button></div></form>'
    )


def device_form(user_code: str, fields: Mapping[str, str], message: str = "") -> str:
    note = f"<p>{escape(message)}</p>" if message else ""
    return (
        f"{note}<p>Enter the code shown by <code>bzrk login</code>.</p>"
        f'<form method="post" action="/device">{hidden(fields)}'
        f'<label>Code<input name="user_code" value="{escape(user_code)}" required '
        'autocomplete="off"></label><div class="row">'
        '<button name="decision" value="approve">Approve</button>'
        '<button name="decision" value="deny">Deny</button></div></form>'
    )

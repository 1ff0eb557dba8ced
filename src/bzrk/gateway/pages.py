"""Server-rendered HTML of the gateway's own pages: login, OAuth consent, device approval.

Every value is escaped; forms carry a CSRF token; pages forbid framing (clickjacking).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from starlette.responses import HTMLResponse

_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}"
    "input,button{font-size:1rem;padding:.4rem;margin:.2rem 0;width:100%;box-sizing:border-box}"
    ".row{display:flex;gap:.5rem}.err{color:#b00}"
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
        f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>{body}</body></html>"
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


def consent_form(
    action: str, client_name: str, scope: str, username: str, fields: Mapping[str, str]
) -> str:
    return (
        f"<p><b>{escape(client_name or 'An application')}</b> asks to use bzrk as "
        f"<b>{escape(username)}</b> with scope <code>{escape(scope)}</code>.</p>"
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

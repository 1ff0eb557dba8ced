"""The KQL tokenizer: query text to a flat list of `Token`s with character spans.

One compiled master pattern does the scanning (fast, and the whole lexical grammar is in
one place). Trivia (whitespace, `//` comments) is skipped; spans are half-open character
offsets into the text (see `diagnostics.SourceText` for bytes/lines).
"""

from __future__ import annotations

import re
from typing import NamedTuple

from bzrk.kql.diagnostics import Span, bad_token, unterminated_string
from bzrk.kql.facts import HYPHENATED_KEYWORDS, TIMESPAN_UNITS


class Kind:
    """Token kinds; plain strings so tokens compare cheaply and print readably."""

    IDENT = "ident"  # names and (contextual) keywords, incl. `$left`, `project-away`
    INT = "int"
    REAL = "real"
    TIMESPAN = "timespan"  # `1d`, `1.5h`, `10ms`, `100tick`
    STRING = "string"  # value already unescaped; adjacent literals stay separate tokens
    TYPED = "typed"  # `datetime(...)`, `timespan(...)`, `guid(...)`: raw text kept
    BANG_WORD = "bangword"  # `!contains`, `!has_cs`, `!in`, `!between`
    OP = "op"  # punctuation and operators; the text is the operator
    EOF = "eof"


class Token(NamedTuple):
    kind: str
    text: str  # operator text / identifier / unescaped string value / raw literal text
    start: int
    end: int

    @property
    def span(self) -> Span:
        return Span(self.start, self.end)


_UNITS = "|".join(sorted(TIMESPAN_UNITS, key=len, reverse=True))
_HYPH = "|".join(sorted((re.escape(k) for k in HYPHENATED_KEYWORDS), key=len, reverse=True))

_MASTER = re.compile(
    r"""
    (?P<ws>(?:\s+|//[^\n]*)+)
  | (?P<typed>(?:datetime|date|timespan|time|guid)[ \t]*\((?P<inner>[^()"']*)\))
  | (?P<hyph>(?:"""
    + _HYPH
    + r""")(?![\w-]))
  | (?P<hex>0[xX][0-9a-fA-F]+(?!\w))
  | (?P<num>(?:(?:\d+(?:\.(?!\.)\d*)?|\.\d+)(?:[eE][+-]?\d+)?)(?:(?P<unit>"""
    + _UNITS
    + r"""))?(?!\w))
  | (?P<dident>\d+[^\W\d]\w*)
  | (?P<hstr>[hH](?=@?["']))
  | (?P<vstr>@"(?:[^"]|"")*"|@'(?:[^']|'')*')
  | (?P<mstr>```.*?```|~~~.*?~~~)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<bang>!(?:contains_cs|contains|has_cs|hasprefix_cs|hasprefix|hassuffix_cs|hassuffix|has|
        startswith_cs|startswith|endswith_cs|endswith|in~|in|between|matches)(?![\w~]))
  | (?P<ident>[^\W\d]\w*|\$\w+)
  | (?P<op>\.\.|==|!=|<>|<=|>=|=~|!~|=>|>>|<<|::|[-+*/%<>=!(){}\[\],;:.|@?~&^])
    """,
    re.VERBOSE | re.DOTALL,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}
_ESC_RE = re.compile(r"\\(u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)", re.DOTALL)


def _unescape_match(m: re.Match[str]) -> str:
    e = m.group(1)
    if e[0] in "ux" and len(e) > 1:
        return chr(int(e[1:], 16))
    return _ESCAPES.get(e, e)


def _string_value(raw: str) -> str:
    if raw[0] == "@":
        q = raw[1]
        return raw[2:-1].replace(q + q, q)
    if raw.startswith(("```", "~~~")):
        return raw[3:-3]
    body = raw[1:-1]
    return _ESC_RE.sub(_unescape_match, body) if "\\" in body else body


def tokenize(text: str) -> list[Token]:
    """Split query text into tokens, ending with one EOF token.

    Raises:
        KqlError: on a character that starts no token or an unterminated string.

    >>> [t.text for t in tokenize("T | where x > 1d")]
    ['T', '|', 'where', 'x', '>', '1d', '']
    """
    tokens: list[Token] = []
    append = tokens.append
    pos = 0
    n = len(text)
    match = _MASTER.match
    while pos < n:
        m = match(text, pos)
        if m is None:
            ch = text[pos]
            if ch in "\"'`":
                raise unterminated_string().at(Span(pos, n))
            raise bad_token(ch).at(Span(pos, pos + 1))
        end = m.end()
        group = m.lastgroup
        if group == "ws":
            pass
        elif group == "ident" or group == "hyph" or group == "dident":
            append(Token(Kind.IDENT, m.group(), pos, end))
        elif group == "hex":
            append(Token(Kind.INT, m.group(), pos, end))
        elif group == "num":
            raw = m.group()
            if m.group("unit"):
                append(Token(Kind.TIMESPAN, raw, pos, end))
            elif not any(c in raw for c in ".eE"):
                append(Token(Kind.INT, raw, pos, end))
            else:
                append(Token(Kind.REAL, raw, pos, end))
        elif group == "str" or group == "vstr" or group == "mstr":
            append(Token(Kind.STRING, _string_value(m.group()), pos, end))
        elif group == "hstr":
            pass  # obfuscated-string marker: the string that follows is an ordinary literal
        elif group == "typed":
            append(Token(Kind.TYPED, m.group(), pos, end))
        elif group == "bang":
            append(Token(Kind.BANG_WORD, m.group(), pos, end))
        else:
            append(Token(Kind.OP, m.group(), pos, end))
        pos = end
    append(Token(Kind.EOF, "", n, n))
    return tokens

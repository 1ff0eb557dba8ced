"""The KQL parser: tokens → `syntax.Query`, by recursive descent with a Pratt loop for operators.

Pipe operators dispatch through `PIPE_OPERATORS` (operator keyword → parse method) and binary
operators through `BINARY_PRECEDENCE`; a new operator is one table entry plus one method.
Nesting is bounded (`MAX_DEPTH`) so hostile input yields a `KqlError`, never a RecursionError.
The parser stops at the first error (no recovery yet) and raises it, located.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from bzrk.kql import syntax as s
from bzrk.kql.diagnostics import (
    MAX_ERRORS,
    KqlError,
    SourceText,
    Span,
    bad_literal,
    collected,
    missing_expression,
    no_query_expression,
    too_deep,
    too_long,
    unexpected,
)
from bzrk.kql.facts import (
    DECIMAL_MAX,
    DYNAMIC_ELEMENT_TYPES,
    OPERATOR_PARAMS,
    STRING_OPERATORS,
    TIMESPAN_UNITS,
    TYPE_ALIASES,
)
from bzrk.kql.literals import parse_int, typed_literal
from bzrk.kql.tokens import Kind, Token, tokenize

MAX_DEPTH = 120
MAX_TOKENS = 200_000

# Pratt binding powers; higher binds tighter. Keys are canonical operator texts.
BINARY_PRECEDENCE: dict[str, int] = {
    "or": 1,
    "and": 2,
    **{op: 3 for op in ("==", "!=", "<>", "=~", "!~", "between", "!between", "matches regex")},
    **{
        op: 3
        for op in ("in", "!in", "in~", "!in~", "has_any", "has_all", "has_any_cs", "has_all_cs")
    },
    **{op: 3 for op in STRING_OPERATORS},
    **{"!" + op: 3 for op in STRING_OPERATORS},
    **{op: 4 for op in ("<", "<=", ">", ">=")},
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "%": 6,
    ":": 3,
}
LIST_OPS = frozenset({"in", "!in", "in~", "!in~", "has_any", "has_all", "has_any_cs", "has_all_cs"})
_WORD_OPS = (
    frozenset({"or", "and", "in", "has_any", "has_all", "between", "matches"}) | STRING_OPERATORS
)


def parse(text: str) -> s.Query:
    """Parse KQL text into a syntax tree.

    Raises:
        KqlError: the first syntax error, located; `.errors` lists every statement's
            first error (the parser resumes after the next `;`).

    >>> q = parse("T | where x > 1")
    >>> type(q.statements[0].expr.operators[0]).__name__
    'Where'
    """
    source = SourceText(text)
    try:
        return Parser(text).parse_query()
    except KqlError as err:
        raise err.locate(source) from None
    except RecursionError:  # a safety net: MAX_DEPTH normally stops first
        raise too_deep().at(Span(0, len(text))).locate(source) from None


class Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[Token] = tokenize(text)
        if len(self.tokens) > MAX_TOKENS:
            raise too_long(len(self.tokens), MAX_TOKENS).at(Span(0, len(text)))
        self.pos = 0
        self.depth = 0
        self.in_search = False
        self.errors: list[KqlError] = []

    # --- token helpers -------------------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.tokens[self.pos]

    def peek(self, k: int = 1) -> Token:
        i = self.pos + k
        return self.tokens[i] if i < len(self.tokens) else self.tokens[-1]

    def advance(self) -> Token:
        t = self.tokens[self.pos]
        if t.kind != Kind.EOF:
            self.pos += 1
        return t

    def at_op(self, text: str) -> bool:
        t = self.tokens[self.pos]
        return t.kind == Kind.OP and t.text == text

    def at_word(self, *words: str) -> bool:
        t = self.tokens[self.pos]
        return t.kind == Kind.IDENT and t.text in words

    def accept_op(self, text: str) -> Token | None:
        if self.at_op(text):
            return self.advance()
        return None

    def accept_word(self, *words: str) -> Token | None:
        if self.at_word(*words):
            return self.advance()
        return None

    def expect_op(self, text: str) -> Token:
        if self.at_op(text):
            return self.advance()
        raise unexpected(self.tok.text, f"'{text}'").at(self.tok.span)

    def expect_word(self, *words: str) -> Token:
        if self.at_word(*words):
            return self.advance()
        raise unexpected(self.tok.text, " or ".join(f"'{w}'" for w in words)).at(self.tok.span)

    def expect_ident(self, what: str = "a name") -> Token:
        if self.tok.kind == Kind.IDENT:
            return self.advance()
        raise unexpected(self.tok.text, what).at(self.tok.span)

    def span_from(self, start: int) -> Span:
        prev = self.tokens[self.pos - 1] if self.pos > 0 else self.tokens[0]
        return Span(start, max(start, prev.end))

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise too_deep().at(self.tok.span)

    def leave(self) -> None:
        self.depth -= 1

    def at_end_of_operator(self) -> bool:
        t = self.tok
        return t.kind == Kind.EOF or (t.kind == Kind.OP and t.text in ("|", ";", ")", "}"))

    # --- statements ----------------------------------------------------------------------

    def parse_query(self) -> s.Query:
        start = self.tok.start
        statements = self.parse_statements(top=True)
        if self.tok.kind != Kind.EOF and len(self.errors) < MAX_ERRORS:
            self.errors.append(unexpected(self.tok.text, "';' or end of query").at(self.tok.span))
        if self.errors:
            raise collected(self.errors)
        if not any(isinstance(st, s.ExprStatement) for st in statements):
            raise no_query_expression().at(Span(len(self.text), len(self.text)))
        return s.Query(self.span_from(start), tuple(statements))

    def parse_statements(self, top: bool) -> list[s.Statement]:
        statements: list[s.Statement] = []
        while True:
            while self.accept_op(";"):
                pass
            if self.tok.kind == Kind.EOF or (not top and self.at_op("}")):
                break
            if not top:
                statements.append(self.parse_statement())
            else:
                # recover at the statement level: note the error, skip to the next `;`
                try:
                    statements.append(self.parse_statement())
                except KqlError as err:
                    self.errors.append(err)
                    if len(self.errors) >= MAX_ERRORS or err.code == "QueryTooComplex":
                        break
                    self.depth = 0
                    self.skip_to_statement_end()
            if not self.accept_op(";"):
                break
        return statements

    def skip_to_statement_end(self) -> None:
        depth = 0
        while self.tok.kind != Kind.EOF:
            t = self.tok
            if t.kind == Kind.OP:
                if t.text in ("(", "[", "{"):
                    depth += 1
                elif t.text in (")", "]", "}"):
                    depth = max(0, depth - 1)
                elif t.text == ";" and depth == 0:
                    return
            self.advance()

    def parse_statement(self) -> s.Statement:
        start = self.tok.start
        if (self.at_word("let") and self.peek().kind == Kind.IDENT) or (
            self.at_word("let") and self.peek().kind == Kind.OP and self.peek().text == "["
        ):
            self.advance()
            name_start = self.tok.start
            name = self.parse_name()
            name_span = self.span_from(name_start)
            self.expect_op("=")
            value = self.parse_let_value()
            return s.LetStatement(self.span_from(start), name, name_span, value)
        if self.at_word("declare") and self.peek().text == "query_parameters":
            self.advance()
            self.advance()
            self.expect_op("(")
            params = self.parse_params_decl(")")
            self.expect_op(")")
            return s.DeclareParameters(self.span_from(start), tuple(params))
        if self.at_word("restrict") and self.peek().text == "access":
            self.skip_balanced()  # `restrict access to (...)`: parsed, has no effect here
            return s.SetOption(self.span_from(start), "$restrict", None)
        if self.at_word("declare") and self.peek().text == "pattern":
            return self.parse_declare_pattern(start)
        if (
            self.at_word("set")
            and self.peek().kind == Kind.IDENT
            and self.peek(2).text in ("=", ";", "")
        ):
            self.advance()
            name = self.advance().text
            option: s.Expr | None = self.parse_expr() if self.accept_op("=") else None
            return s.SetOption(self.span_from(start), name, option)
        expr = self.parse_pipe_expr()
        return s.ExprStatement(self.span_from(start), expr)

    def parse_declare_pattern(self, start: int) -> s.DeclarePattern:
        self.advance()
        self.advance()
        name = self.parse_name()
        params: list[s.Param] = []
        path_params: list[s.Param] = []
        if self.accept_op("="):
            self.expect_op("(")
            params = self.parse_params_decl(")")
            self.expect_op(")")
            if self.accept_op("["):
                path_params = self.parse_params_decl("]")
                self.expect_op("]")
        cases: list[s.PatternCase] = []
        if self.accept_op("{"):
            while not self.at_op("}"):
                cstart = self.tok.start
                self.expect_op("(")
                args: list[s.Expr] = []
                while not self.at_op(")"):
                    args.append(self.parse_expr())
                    if not self.accept_op(","):
                        break
                self.expect_op(")")
                path = None
                if self.accept_op("."):
                    self.expect_op("[")
                    path = self.parse_expr()
                    self.expect_op("]")
                self.expect_op("=")
                body = self.parse_sub_pipeline_block()
                cases.append(s.PatternCase(self.span_from(cstart), tuple(args), path, body))
                if not self.accept_op(";"):
                    break
            self.expect_op("}")
        return s.DeclarePattern(
            self.span_from(start), name, tuple(params), tuple(path_params), tuple(cases)
        )

    def parse_sub_pipeline_block(self) -> s.Expr:
        """`{ query }` → its expression (or a Lambda holding several statements)."""
        start = self.tok.start
        self.expect_op("{")
        self.enter()
        statements = self.parse_statements(top=False)
        self.leave()
        self.expect_op("}")
        if len(statements) == 1 and isinstance(statements[0], s.ExprStatement):
            return statements[0].expr
        return s.Lambda(self.span_from(start), (), tuple(statements))

    def parse_let_value(self) -> s.Expr:
        start = self.tok.start
        if self.at_word("view") and self.peek().text == "(":
            self.advance()
            return self.parse_lambda(start, is_view=True)
        if self.at_op("(") and self.looks_like_lambda():
            return self.parse_lambda(start, is_view=False)
        return self.parse_pipe_expr()

    def looks_like_lambda(self) -> bool:
        # `(` `)` `{` or `(` name `:` ...
        nxt = self.peek()
        if nxt.kind == Kind.OP and nxt.text == ")":
            return self.peek(2).text == "{"
        return nxt.kind == Kind.IDENT and self.peek(2).kind == Kind.OP and self.peek(2).text == ":"

    def parse_lambda(self, start: int, is_view: bool) -> s.Lambda:
        self.expect_op("(")
        params = self.parse_params_decl(")")
        self.expect_op(")")
        self.expect_op("{")
        self.enter()
        body = self.parse_statements(top=False)
        self.leave()
        self.expect_op("}")
        return s.Lambda(self.span_from(start), tuple(params), tuple(body), is_view)

    def parse_params_decl(self, closer: str) -> list[s.Param]:
        params: list[s.Param] = []
        while not self.at_op(closer):
            pstart = self.tok.start
            name = self.parse_name()
            self.expect_op(":")
            columns: tuple[s.ColumnDecl, ...] = ()
            if self.at_op("("):
                self.advance()
                if self.accept_op("*"):
                    cols: list[s.ColumnDecl] = []
                    self.accept_op(",")
                else:
                    cols = []
                while not self.at_op(")"):
                    cols.append(self.parse_column_decl())
                    if not self.accept_op(","):
                        break
                self.expect_op(")")
                ptype, columns = "table", tuple(cols)
            else:
                ptype = self.parse_type_name()
            default = None
            if self.accept_op("="):
                default = self.parse_expr()
            params.append(s.Param(self.span_from(pstart), name, ptype, columns, default))
            if not self.accept_op(","):
                break
        return params

    def parse_type_name(self) -> str:
        t = self.expect_ident("a type name")
        canonical = TYPE_ALIASES.get(t.text.lower())
        if canonical is None:
            raise unexpected(t.text, "a type name").at(t.span)
        return canonical

    def parse_column_decl(self) -> s.ColumnDecl:
        start = self.tok.start
        name = self.parse_name()
        self.expect_op(":")
        ctype = self.parse_type_name()
        return s.ColumnDecl(self.span_from(start), name, ctype)

    def parse_name(self) -> str:
        """An identifier or a bracketed name `['a b']` / `["x"]`."""
        t = self.tok
        if t.kind == Kind.IDENT:
            self.advance()
            return t.text
        if t.kind == Kind.OP and t.text == "[" and self.peek().kind == Kind.STRING:
            self.advance()
            name = self.advance().text
            self.expect_op("]")
            return name
        raise unexpected(t.text, "a name").at(t.span)

    def at_name(self, k: int = 0) -> int:
        """Length in tokens of a name starting k tokens ahead, or 0."""
        t = self.peek(k) if k else self.tok
        if t.kind == Kind.IDENT:
            return 1
        if t.kind == Kind.OP and t.text == "[" and self.peek(k + 1).kind == Kind.STRING:
            closing = self.peek(k + 2)
            if closing.kind == Kind.OP and closing.text == "]":
                return 3
        return 0

    # --- pipelines -----------------------------------------------------------------------

    def parse_pipe_expr(self) -> s.Expr:
        self.enter()
        start = self.tok.start
        source: s.Node
        if (
            self.tok.kind == Kind.IDENT
            and self.tok.text in SOURCE_PARSERS
            and self.is_source_operator()
        ):
            source = SOURCE_PARSERS[self.tok.text](self)
        else:
            source = self.parse_expr()
        operators: list[s.QueryOperator] = []
        while self.accept_op("|"):
            operators.append(self.parse_pipe_operator())
        self.leave()
        if not operators and isinstance(source, s.Expr):
            return source
        return s.Pipeline(self.span_from(start), source, tuple(operators))

    def is_source_operator(self) -> bool:
        word = self.tok.text
        nxt = self.peek()
        if word == "range":
            # `range x from …`; a column named range (`mv-expand range to typeof(long)`) is not
            n = self.at_name(1)
            return n > 0 and self.peek(1 + n).text == "from"
        if word in ("datatable", "externaldata", "external_data", "inline_external_table"):
            return nxt.text in ("(", "with")
        if word in ("print", "union", "search", "find", "evaluate"):
            return not (nxt.kind == Kind.OP and nxt.text in ("=", "==", ".", ",", ")", "|"))
        return True

    def parse_operator_chain(self, start: int) -> s.Pipeline:
        """`op | op | ...` with no source (mv-apply / partition / fork / facet subqueries)."""
        self.enter()
        operators = [self.parse_pipe_operator()]
        while self.accept_op("|"):
            operators.append(self.parse_pipe_operator())
        self.leave()
        span = self.span_from(start)
        return s.Pipeline(span, s.Star(Span(start, start)), tuple(operators))

    def parse_pipe_operator(self) -> s.QueryOperator:
        t = self.tok
        if t.kind != Kind.IDENT:
            raise unexpected(t.text, "a query operator").at(t.span)
        method = PIPE_OPERATORS.get(t.text)
        if method is None:
            raise unexpected(t.text, "a query operator").at(t.span)
        return method(self)

    def parse_params(self, operator: str) -> tuple[s.OperatorParam, ...]:
        allowed = OPERATOR_PARAMS.get(operator, frozenset())
        params: list[s.OperatorParam] = []
        while self.tok.kind == Kind.IDENT:
            start = self.tok.start
            word = self.tok.text
            if (
                word.lower() == "hint"
                and self.peek().text == "."
                and self.peek(2).kind == Kind.IDENT
            ):
                if not (self.peek(3).kind == Kind.OP and self.peek(3).text == "="):
                    break
                self.advance()
                self.advance()
                name = "hint." + self.advance().text.lower()
            elif (
                word.lower() in allowed and self.peek().kind == Kind.OP and self.peek().text == "="
            ):
                name = self.advance().text.lower()
            else:
                break
            self.expect_op("=")
            value = self.parse_param_value()
            params.append(s.OperatorParam(self.span_from(start), name, value))
        return tuple(params)

    def parse_param_value(self) -> s.Expr:
        t = self.tok
        if t.kind == Kind.IDENT:
            self.advance()
            return s.NameRef(t.span, t.text)
        return self.parse_unary()

    # --- expressions ---------------------------------------------------------------------

    def parse_expr(self, min_prec: int = 1) -> s.Expr:
        self.enter()
        start = self.tok.start
        left = self.parse_unary()
        while True:
            op, ntok = self.binary_op_at()
            if op is None:
                break
            prec = BINARY_PRECEDENCE[op]
            if prec < min_prec:
                break
            for _ in range(ntok):
                self.advance()
            if op in LIST_OPS:
                items = self.parse_list_operand()
                left = s.InList(self.span_from(start), op, left, items)
            elif op in ("between", "!between"):
                # ADX's `(low .. high)`, or the vendor's `[low, high]`: both ends inclusive.
                bracket = self.accept_op("[") is not None
                if not bracket and self.accept_op("(") is None:
                    raise unexpected(self.tok.text, "'(' or '['").at(self.tok.span)
                low = self.parse_expr(prec + 1)
                self.expect_op("," if bracket else "..")
                high = self.parse_expr(prec + 1)
                self.expect_op("]" if bracket else ")")
                left = s.Between(self.span_from(start), op == "!between", left, low, high)
            else:
                right = self.parse_expr(prec + 1)
                left = s.Binary(self.span_from(start), op, left, right)
        self.leave()
        return left

    def binary_op_at(self) -> tuple[str | None, int]:
        t = self.tok
        if t.kind == Kind.OP:
            if t.text in BINARY_PRECEDENCE:
                return t.text, 1
            if t.text == ":" and self.in_search:  # `search body:"timeout"` (column-scoped term)
                return ":", 1
            return None, 0
        if t.kind == Kind.BANG_WORD:
            word = t.text.lower()
            if word in BINARY_PRECEDENCE:
                return word, 1
            return None, 0
        if t.kind == Kind.IDENT:
            word = t.text.lower()
            if word not in _WORD_OPS and word not in ("has_any_cs", "has_all_cs"):
                return None, 0
            if word == "matches":
                if self.peek().kind == Kind.IDENT and self.peek().text == "regex":
                    return "matches regex", 2
                return None, 0
            if word == "in":
                nxt = self.peek()
                if nxt.kind == Kind.OP and nxt.text == "~" and nxt.start == t.end:
                    return "in~", 2
            return word, 1
        return None, 0

    def parse_list_operand(self) -> tuple[s.Expr, ...]:
        if not self.at_op("("):
            # `x in T` style is not KQL; a single expression (dynamic array) is allowed
            return (self.parse_unary(),)
        self.advance()
        items: list[s.Expr] = []
        while not self.at_op(")"):
            items.append(self.parse_pipe_expr())
            if not self.accept_op(","):
                break
        self.expect_op(")")
        return tuple(items)

    def parse_unary(self) -> s.Expr:
        t = self.tok
        if t.kind == Kind.OP and t.text in ("-", "+"):
            self.enter()
            self.advance()
            operand = self.parse_unary()
            self.leave()
            if isinstance(operand, s.Literal) and operand.type in (
                "int",
                "long",
                "real",
                "decimal",
                "timespan",
            ):
                if t.text == "-" and operand.value is not None:
                    value = -operand.value
                    return s.Literal(
                        Span(t.start, operand.span.end), operand.type, value, "-" + operand.text
                    )
                return operand
            return s.Unary(Span(t.start, operand.span.end), t.text, operand)
        return self.parse_postfix()

    def parse_postfix(self) -> s.Expr:
        start = self.tok.start
        expr = self.parse_primary()
        while True:
            t = self.tok
            if t.kind != Kind.OP:
                break
            if (t.text == "." and self.peek().kind != Kind.OP) or (
                t.text == "." and self.peek().text == "["
            ):
                self.advance()
                if self.at_op("["):
                    self.advance()
                    index = self.parse_expr()
                    self.expect_op("]")
                    expr = s.Index(self.span_from(start), expr, index)
                    continue
                name_tok = self.advance()
                if name_tok.kind not in (Kind.IDENT, Kind.INT, Kind.TYPED, Kind.STRING):
                    raise unexpected(name_tok.text, "a name").at(name_tok.span)
                name = name_tok.text if name_tok.kind != Kind.TYPED else name_tok.text.split("(")[0]
                if self.at_op("(") and name_tok.kind == Kind.IDENT:
                    args = self.parse_call_args()
                    expr = s.Call(self.span_from(start), name, args, expr)
                else:
                    expr = s.Member(self.span_from(start), expr, name)
            elif t.text == "[":
                self.advance()
                index = self.parse_expr()
                self.expect_op("]")
                expr = s.Index(self.span_from(start), expr, index)
            else:
                break
        return expr

    def parse_call_args(self) -> tuple[s.Expr, ...]:
        self.expect_op("(")
        self.enter()
        args: list[s.Expr] = []
        while not self.at_op(")"):
            astart = self.tok.start
            if (
                self.tok.kind == Kind.IDENT
                and self.peek().kind == Kind.OP
                and self.peek().text == "="
            ):
                name = self.advance().text
                self.advance()
                value = self.parse_pipe_expr()
                args.append(s.NamedArg(self.span_from(astart), name, value))
            elif self.at_op("*") and self.peek().text in (")", ","):
                args.append(s.Star(self.advance().span))
            else:
                args.append(self.parse_pipe_expr())
            if not self.accept_op(","):
                break
        self.leave()
        self.expect_op(")")
        return tuple(args)

    def parse_primary(self) -> s.Expr:
        t = self.tok
        kind = t.kind
        if kind == Kind.INT:
            self.advance()
            number = parse_int(t.text)
            # Kusto reads an integer literal past the long range as real (a 9…9 literal); 2^63
            # stays long, the operand of the minus in -9223372036854775808.
            kind_ = "long" if isinstance(number, int) or number == 2.0**63 else "real"
            return s.Literal(t.span, kind_, number, t.text)
        if kind == Kind.REAL:
            self.advance()
            return s.Literal(t.span, "real", float(t.text), t.text)
        if kind == Kind.TIMESPAN:
            self.advance()
            return s.Literal(t.span, "timespan", _timespan_token_ticks(t), t.text)
        if kind == Kind.STRING:
            self.advance()
            value = t.text
            end = t.end
            while self.tok.kind == Kind.STRING:  # adjacent literals concatenate
                value += self.tok.text
                end = self.advance().end
            return s.Literal(Span(t.start, end), "string", value, self.text[t.start : end])
        if kind == Kind.TYPED:
            self.advance()
            try:
                ltype, lvalue = typed_literal(t.text)
            except KqlError as err:
                raise err.at(t.span) from None
            return s.Literal(t.span, ltype, lvalue, t.text)
        if kind == Kind.IDENT:
            return self.parse_identifier_primary(t)
        if kind == Kind.OP:
            if t.text == "(":
                return self.parse_paren()
            if t.text == "[" and self.at_name():
                name = self.parse_name()
                return s.NameRef(self.span_from(t.start), name)
            if t.text == "*":
                self.advance()
                return s.Star(t.span)
            if t.text == "{" and self.peek().text == "}":
                self.advance()
                self.advance()
                return s.Literal(self.span_from(t.start), "dynamic", {}, "{}")
        raise missing_expression(t.text).at(t.span)

    def parse_paren(self) -> s.Expr:
        start = self.advance().start
        self.enter()
        if self.at_op(")"):
            self.advance()
            self.leave()
            return s.ListExpr(self.span_from(start), ())
        first = self.parse_pipe_expr()
        if self.at_op(","):
            items = [first]
            while self.accept_op(","):
                if self.at_op(")"):
                    break
                items.append(self.parse_pipe_expr())
            self.expect_op(")")
            self.leave()
            return s.ListExpr(self.span_from(start), tuple(items))
        self.expect_op(")")
        self.leave()
        return s.Paren(self.span_from(start), first)

    def parse_identifier_primary(self, t: Token) -> s.Expr:
        word = t.text
        nxt = self.peek()
        if nxt.kind == Kind.OP and nxt.text == "(":
            lower = word.lower()
            if lower == "typeof":
                self.advance()
                self.advance()
                type_text = self.parse_typeof_body()
                self.expect_op(")")
                return s.TypeOf(self.span_from(t.start), type_text)
            if lower == "dynamic":
                self.advance()
                self.advance()
                value = self.parse_dynamic_value() if not self.at_op(")") else None
                self.expect_op(")")
                span = self.span_from(t.start)
                return s.Literal(span, "dynamic", value, self.text[span.start : span.end])
            if lower in TYPE_ALIASES and (
                lower not in ("time", "date", "guid", "datetime", "timespan")
                or self.peek(2).kind == Kind.STRING
            ):
                return self.parse_scalar_typed_literal(TYPE_ALIASES[lower])
            if word in SOURCE_PARSERS and word in (
                "datatable",
                "externaldata",
                "external_data",
                "inline_external_table",
            ):
                return s.Pipeline(self.span_from(t.start), SOURCE_PARSERS[word](self), ())
            self.advance()
            args = self.parse_call_args()
            return s.Call(self.span_from(t.start), word, args)
        if word in ("true", "false", "True", "False", "TRUE", "FALSE"):
            self.advance()
            return s.Literal(t.span, "bool", word.lower() == "true", word)
        if word in SOURCE_PARSERS and self.is_source_operator() and word not in ("range",):
            source = SOURCE_PARSERS[word](self)
            return s.Pipeline(source.span, source, ())
        if word == "range" and self.is_source_operator():
            source = SOURCE_PARSERS[word](self)
            return s.Pipeline(source.span, source, ())
        self.advance()
        return s.NameRef(t.span, word)

    def parse_typeof_body(self) -> str:
        is_list = self.at_op("*") or (self.tok.kind == Kind.IDENT and self.peek().text == ":")
        if self.at_op("(") or is_list:
            if not is_list:
                self.advance()
            cols: list[str] = []
            while not self.at_op(")"):
                if self.accept_op("*"):
                    cols.append("*")
                else:
                    c = self.parse_column_decl()
                    cols.append(f"{c.name}:{c.type}")
                if not self.accept_op(","):
                    break
            if not is_list:
                self.expect_op(")")
            return "(" + ",".join(cols) + ")"
        return self.parse_type_name()

    def parse_scalar_typed_literal(self, ltype: str) -> s.Expr:
        start = self.advance().start
        self.expect_op("(")
        t = self.tok
        neg = False
        if t.kind == Kind.OP and t.text in ("-", "+"):
            neg = t.text == "-"
            self.advance()
            t = self.tok
        value: Any
        if t.kind == Kind.IDENT and t.text.lower() == "null":
            value = None
        elif ltype == "bool" and t.kind == Kind.IDENT and t.text.lower() in ("true", "false"):
            value = t.text.lower() == "true"
        elif ltype == "bool" and t.kind == Kind.INT and t.text in ("0", "1"):
            value = t.text == "1"
        elif (
            ltype == "real"
            and t.kind == Kind.IDENT
            and t.text.lower() in ("nan", "inf", "infinity")
        ):
            value = float("nan") if t.text.lower() == "nan" else float("inf")
        elif ltype in ("int", "long") and t.kind == Kind.INT:
            value = parse_int(t.text)
            if not isinstance(value, int):  # past the long range: no long literal spells it
                raise bad_literal(t.text, ltype).at(t.span)
        elif ltype == "real" and t.kind in (Kind.INT, Kind.REAL):
            value = float(t.text)
        elif ltype == "decimal" and t.kind in (Kind.INT, Kind.REAL):
            try:
                value = Decimal(t.text)
            except InvalidOperation:
                raise bad_literal(t.text, "decimal").at(t.span) from None
            if not value.copy_abs() <= DECIMAL_MAX:  # .NET's decimal range; Kusto refuses the rest
                raise bad_literal(t.text, "decimal").at(t.span)
        elif ltype == "string" and t.kind == Kind.STRING:
            value = t.text
        elif ltype in ("datetime", "timespan", "guid") and t.kind == Kind.STRING:
            try:
                value = typed_literal(f"{ltype}({t.text})")[1]
            except KqlError:
                value = None  # Kusto accepts any string here and yields null when unparsable
        else:
            raise bad_literal(t.text, ltype).at(t.span)
        self.advance()
        if neg and value is not None and not isinstance(value, bool | str):
            value = -value
        self.expect_op(")")
        span = self.span_from(start)
        return s.Literal(span, ltype, value, self.text[span.start : span.end])

    def parse_dynamic_value(self) -> Any:
        """The JSON-like body of `dynamic(...)`; returns the Python JSON value."""
        self.enter()
        t = self.tok
        try:
            if t.kind == Kind.OP and t.text == "[":
                self.advance()
                items = []
                while not self.at_op("]"):
                    items.append(self.parse_dynamic_value())
                    if not self.accept_op(","):
                        break
                self.expect_op("]")
                return items
            if t.kind == Kind.OP and t.text == "{":
                self.advance()
                bag: dict[str, Any] = {}
                while not self.at_op("}"):
                    key = self.advance()
                    if key.kind not in (Kind.STRING, Kind.IDENT):
                        raise unexpected(key.text, "a property name").at(key.span)
                    self.expect_op(":")
                    bag[key.text] = self.parse_dynamic_value()
                    if not self.accept_op(","):
                        break
                self.expect_op("}")
                return bag
            if t.kind == Kind.OP and t.text == "-":  # JSON has no `+1`, nor Kusto's dynamic
                self.advance()
                inner = self.parse_dynamic_value()
                if not isinstance(inner, int | float) or isinstance(inner, bool):
                    raise bad_literal(t.text, "dynamic").at(t.span)
                return -inner if t.text == "-" else inner
            self.advance()
            if t.kind == Kind.STRING:
                return t.text
            if t.kind == Kind.INT:
                return parse_int(t.text)
            if t.kind == Kind.REAL:
                return float(t.text)
            if t.kind == Kind.TIMESPAN:
                return _timespan_token_ticks(t)
            if t.kind == Kind.TYPED:
                kind, value = typed_literal(t.text)
                if kind == "datetime" and isinstance(value, int):
                    # A datetime inside a dynamic value is its ISO text, as Kusto shows it.
                    return _iso_datetime(value)
                return value
            if t.kind == Kind.IDENT:
                low = t.text.lower()
                if low in ("true", "false"):
                    return low == "true"
                if low == "null":
                    return None
                if low == "dynamic" and self.at_op("("):
                    self.advance()
                    inner = self.parse_dynamic_value() if not self.at_op(")") else None
                    self.expect_op(")")
                    return inner
                if low == "decimal" and self.at_op("("):
                    raise bad_literal(t.text, "dynamic").at(t.span)  # Kusto's KS215
                if low in DYNAMIC_ELEMENT_TYPES and self.at_op("("):
                    self.pos -= 1
                    lit = self.parse_scalar_typed_literal(TYPE_ALIASES[low])
                    if not isinstance(lit, s.Literal):
                        return None
                    if lit.type == "datetime" and isinstance(lit.value, int):
                        return _iso_datetime(lit.value)
                    return lit.value
            raise bad_literal(t.text, "dynamic").at(t.span)
        finally:
            self.leave()

    # --- shared operator pieces ----------------------------------------------------------

    def parse_named_expr(self) -> s.NamedExpr:
        start = self.tok.start
        n = self.at_name()
        if n and self.peek(n).kind == Kind.OP and self.peek(n).text == "=":
            name = self.parse_name()
            self.advance()
            expr = self.parse_expr()
            return s.NamedExpr(self.span_from(start), (name,), expr)
        if self.at_op("(") and self.is_name_tuple_assignment():
            self.advance()
            names = []
            while not self.at_op(")"):
                names.append(self.parse_name())
                if not self.accept_op(","):
                    break
            self.expect_op(")")
            self.expect_op("=")
            expr = self.parse_expr()
            return s.NamedExpr(self.span_from(start), tuple(names), expr)
        expr = self.parse_expr()
        return s.NamedExpr(self.span_from(start), (), expr)

    def is_name_tuple_assignment(self) -> bool:
        k = 1
        while True:
            n = self.at_name(k)
            if not n:
                return False
            k += n
            t = self.peek(k)
            if t.kind == Kind.OP and t.text == ",":
                k += 1
                continue
            if t.kind == Kind.OP and t.text == ")":
                nxt = self.peek(k + 1)
                return nxt.kind == Kind.OP and nxt.text == "="
            return False

    def parse_named_list(self) -> tuple[s.NamedExpr, ...]:
        items = [self.parse_named_expr()]
        while self.accept_op(","):
            items.append(self.parse_named_expr())
        return tuple(items)

    def parse_pattern_list(self) -> tuple[str, ...]:
        """Column names with optional `*` wildcards: `a, b*, ['c d']`."""
        patterns: list[str] = []
        while True:
            patterns.append(self.parse_pattern())
            if not self.accept_op(","):
                break
        return tuple(patterns)

    def parse_pattern(self) -> str:
        text = ""
        if self.at_op("*"):
            text = "*"
            end = self.advance().end
        elif self.at_name():
            text = self.parse_name()
            end = self.tokens[self.pos - 1].end
        else:
            raise unexpected(self.tok.text, "a column name").at(self.tok.span)
        while True:  # glue `a*b*` written without spaces
            t = self.tok
            if t.start != end or t.kind == Kind.EOF:
                break
            if (t.kind == Kind.OP and t.text == "*") or t.kind in (Kind.IDENT, Kind.INT):
                text += t.text
                end = self.advance().end
            else:
                break
        return text

    def parse_order_key(self) -> s.OrderKey:
        start = self.tok.start
        expr = self.parse_expr()
        descending = True
        if self.accept_word("asc"):
            descending = False
        elif self.accept_word("desc"):
            descending = True
        nulls_first = None
        if self.accept_word("nulls"):
            nulls_first = self.expect_word("first", "last").text == "first"
        return s.OrderKey(self.span_from(start), expr, descending, nulls_first)

    def parse_sub_pipeline(self) -> s.Expr:
        """`( ops )` applied to the operator's input, or `{ query }`."""
        start = self.tok.start
        if self.accept_op("{"):
            self.enter()
            statements = self.parse_statements(top=False)
            self.leave()
            self.expect_op("}")
            last = statements[-1] if statements else None
            if isinstance(last, s.ExprStatement) and len(statements) == 1:
                return last.expr
            return s.Lambda(self.span_from(start), (), tuple(statements))
        self.expect_op("(")
        chain = self.parse_operator_chain(self.tok.start)
        self.expect_op(")")
        return chain

    def skip_balanced(self) -> None:
        """Skip tokens to the end of this operator (top-level `|`, `;`, `)` or EOF)."""
        depth = 0
        while self.tok.kind != Kind.EOF:
            t = self.tok
            if t.kind == Kind.OP:
                if t.text in ("(", "[", "{"):
                    depth += 1
                elif t.text in (")", "]", "}"):
                    if depth == 0:
                        return
                    depth -= 1
                elif t.text in ("|", ";") and depth == 0:
                    return
            self.advance()


_MAX_TICKS = 3_155_378_975_999_999_999  # the span of datetime(0001..9999)


def _timespan_token_ticks(t: Token) -> int:
    raw = t.text
    i = len(raw)
    while i > 0 and raw[i - 1].isalpha():
        i -= 1
    num, unit = raw[:i], raw[i:]
    per = TIMESPAN_UNITS[unit.lower()]
    if len(num) > 30:
        raise bad_literal(raw[:40], "timespan").at(t.span)
    if "." in num or "e" in num.lower():
        scaled = float(num) * per
        if not math.isfinite(scaled) or abs(scaled) > _MAX_TICKS:
            raise bad_literal(raw[:40], "timespan").at(t.span)
        ticks = round(scaled)
    else:
        ticks = int(num) * per
    if abs(ticks) > _MAX_TICKS:
        raise bad_literal(raw, "timespan").at(t.span)
    return ticks


def _iso_datetime(ticks: int) -> str:
    """100 ns ticks since the Unix epoch → `2022-01-01T00:00:00.0000000Z`."""
    import datetime as _dt

    seconds, rest = divmod(ticks, 10_000_000)
    moment = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{rest:07d}Z"


# The operator parse methods live in parser_operators.py (kept apart for size); they register
# themselves in these tables, which the Parser reads.
PIPE_OPERATORS: dict[str, Callable[[Parser], s.QueryOperator]] = {}
SOURCE_PARSERS: dict[str, Callable[[Parser], s.QueryOperator]] = {}

from bzrk.kql import parser_operators as _ops  # noqa: E402

PIPE_OPERATORS.update(_ops.PIPE_OPERATORS)
SOURCE_PARSERS.update(_ops.SOURCE_PARSERS)

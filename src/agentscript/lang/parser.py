"""Recursive-descent parser: tokens to a Program. One method per grammar rule (reference §2.2).

It accepts the full 0.1.0 grammar and the later forms of §2.4 that do not clash with it. Where a
`<` could be a bound or a comparison, the 0.1.0 reading wins: in `use`, `<` followed by a number
is the budget; before a loop body, `< INT {` is the iteration bound. Everything else is an
ordinary comparison. Every error is a ParseError with the position of the offending token.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import ClassVar, TypeVar

from agentscript.lang import ast
from agentscript.lang.counts import MAX_COUNT, count_fits, too_large_count
from agentscript.lang.errors import ParseError, SourceMap, SourceRange
from agentscript.lang.lexer import tokenize
from agentscript.lang.suggest import shape_type_hint
from agentscript.lang.tokens import (
    BINARY_PRECEDENCE,
    CONFIG_KEYS,
    IMPORT_KINDS,
    SHAPE_TYPE_NAMES,
    Token,
    TokenKind,
)

_INT = re.compile(r"^\d+$")
_BUDGET = re.compile(r"^(\d+(?:\.\d+)?)([A-Za-z]+)?$")
_NUMBER_PREFIX = re.compile(r"^\d+(?:\.\d+)?")
# A number as a choice value takes: digits, maybe a fraction (no `k` budget suffix).
_PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_EXACT_INTEGER_LIMIT = 2**53

_T = TypeVar("_T")

# Deeper nesting than this is refused: no real program comes close, and recursion must stay
# far below Python's limit.
MAX_NESTING = 200
# Python frames one nesting level may take in the parser and in the recursive passes over the
# tree (checker, formatter, to_json); the recursion limit is raised to fit MAX_NESTING levels.
_RECURSION_ROOM = MAX_NESTING * 16 + 2000

_WORD_OPERATORS = frozenset({"or", "and"})
_POSTFIX_SYMBOLS = frozenset({".", "(", "["})

# Where the expression being parsed ends in a bound that starts with `<`.
_NO_BOUND = 0
_USE_BUDGET = 1  # `use x < 2k`
_LOOP_BOUND = 2  # `for x in xs < 4 {`, `loop until done < 3 {`


def parse_program(source: str, path: str | None = None) -> ast.Program:
    """Parse a whole program. `path` only decorates errors and declarations."""
    if sys.getrecursionlimit() < _RECURSION_ROOM:
        sys.setrecursionlimit(_RECURSION_ROOM)
    tokens = tokenize(source, path)
    source_map = SourceMap(source)
    try:
        return _Parser(tokens, source_map, path).program()
    except ParseError as error:
        unclosed = _unclosed_brace(tokens, source, error.position.offset)
        if unclosed is None:
            raise
        opened = source_map.position(unclosed.start)
        raise ParseError(
            f"Missing '}}' to close the shape opened at {opened.line}:{opened.column} "
            f"({error.bare_message})",
            opened,
            path,
        ) from None


def _unclosed_brace(tokens: list[Token], source: str, before: int) -> Token | None:
    """The `{` a parse error most likely comes from: one closed (by indentation) by a `}` at
    the start of a line indented less than the line the `{` is on. With `-> { greeting string`
    and no `}`, the function's `}` below is taken for the shape's and the error appears far
    away; this names the shape instead. Only shapes (`-> {`, which 0.1.0 did not have) are
    named, so 0.1.0 programs keep their 0.1.0 messages; only braces before the error count."""
    stack: list[tuple[Token, Token | None]] = []
    previous: Token | None = None
    for token in tokens:
        if token.start > before:
            break
        if token.symbol == "{":
            stack.append((token, previous))
        elif token.symbol == "}" and stack:
            opener, before_opener = stack[-1]
            if (
                before_opener is not None
                and before_opener.symbol == "->"
                and _starts_line(source, token.start)
                and _indent(source, token.start) < _indent(source, opener.start)
            ):
                return opener
            stack.pop()
        previous = token
    return None


def _line_start(source: str, offset: int) -> int:
    return source.rfind("\n", 0, offset) + 1


def _starts_line(source: str, offset: int) -> bool:
    return not source[_line_start(source, offset) : offset].strip()


def _indent(source: str, offset: int) -> int:
    start = _line_start(source, offset)
    line = source[start:offset]
    return len(line) - len(line.lstrip())


class _Parser:
    def __init__(self, tokens: list[Token], source_map: SourceMap, path: str | None) -> None:
        self.tokens = tokens
        self.map = source_map
        self.index = 0
        self.current = tokens[0]
        self.path = path
        self.bound_context = _NO_BOUND
        self.nesting = 0

    # ------------------------------------------------------------------ token helpers

    def peek(self, distance: int = 1) -> Token:
        index = min(self.index + distance, len(self.tokens) - 1)
        return self.tokens[index]

    def previous_end(self) -> int:
        return self.tokens[self.index - 1].end if self.index else self.current.start

    def advance(self) -> Token:
        token = self.current
        if token.kind is not TokenKind.EOF:
            self.index += 1
            self.current = self.tokens[self.index]
        return token

    def error(self, message: str, token: Token | None = None) -> ParseError:
        return ParseError(message, self.map.position((token or self.current).start), self.path)

    def expect_symbol(self, symbol: str) -> Token:
        if not self.current.is_symbol(symbol):
            raise self.error(f"Expected '{symbol}'")
        return self.advance()

    def accept_symbol(self, symbol: str) -> bool:
        if self.current.symbol == symbol:
            self.advance()
            return True
        return False

    def expect_word(self, word: str) -> Token:
        if not self.current.is_word(word):
            raise self.error(f"Expected '{word}'")
        return self.advance()

    def expect_name(self, message: str) -> Token:
        if not self.current.is_name:
            raise self.error(message)
        return self.advance()

    def span(self, start: int) -> SourceRange:
        """The range from offset `start` to the end of the last token consumed."""
        return SourceRange(self.map, start, self.previous_end())

    def token_range(self, token: Token) -> SourceRange:
        return SourceRange(self.map, token.start, token.end)

    def on_same_line(self, token: Token) -> bool:
        """Whether `token` starts on the line where the previous token ended."""
        return self.map.line_of(token.start) == self.map.line_of(self.previous_end())

    def skip_comma(self) -> None:
        if self.current.symbol == ",":
            self.advance()

    def within(self, context: int, rule: Callable[[], _T]) -> _T:
        """Run `rule` with `context` deciding what a `<` means; brackets reset it to comparison."""
        saved = self.bound_context
        self.bound_context = context
        try:
            return rule()
        finally:
            self.bound_context = saved

    # ------------------------------------------------------------------ program

    def program(self) -> ast.Program:
        start = self.current.start
        imports: list[ast.ImportDecl] = []
        agents: list[ast.AgentDecl] = []
        while self.current.kind is not TokenKind.EOF:
            if self.current.is_word("import"):
                imports.append(self.import_decl())
            elif self.current.is_word("agent") or (
                self.current.is_word("main") and self.peek().is_word("agent")
            ):
                agents.append(self.agent_decl())
            else:
                raise self.error("Expected 'import', 'agent', or 'main agent'")
        return ast.Program(
            range=SourceRange(self.map, start, self.current.end),
            imports=imports,
            agents=agents,
            source_path=self.path,
        )

    def import_decl(self) -> ast.ImportDecl:
        start = self.advance().start  # import
        if not self.current.is_name:
            raise self.error("Expected import resource kind")
        kind_token = self.current
        if kind_token.value not in IMPORT_KINDS:
            raise self.error(
                "Expected import resource kind 'tool', 'llm', 'file', 'agent', or 'memory'"
            )
        self.advance()
        kind = kind_token.value
        name = self.expect_name(f"Expected {kind} name").value
        self.expect_word("from")
        if self.current.kind is not TokenKind.STRING:
            raise self.error(f"Expected {kind} URI")
        uri = self.advance().value
        return ast.ImportDecl(
            range=self.span(start), resource_kind=kind, name=name, uri=uri, source_path=self.path
        )

    def declaration_head(self, keyword: str, opening: str, anonymous: str) -> tuple[bool, str]:
        """`[main] agent [NAME]` or `[main] func [NAME]`: whether it is main, and its name
        (only a main declaration may leave the name out)."""
        is_main = False
        if self.current.is_word("main"):
            self.advance()
            is_main = True
        self.expect_word(keyword)
        if not self.current.is_symbol(opening):
            label = "agent" if keyword == "agent" else "function"
            return is_main, self.expect_name(f"Expected {label} name").value
        if not is_main:
            raise self.error(f"Only main {keyword} can omit its name")
        return is_main, anonymous

    def agent_decl(self) -> ast.AgentDecl:
        start = self.current.start
        is_main, name = self.declaration_head("agent", "{", "__main_agent")
        self.expect_symbol("{")
        config: list[ast.ConfigDecl] = []
        functions: list[ast.FuncDecl] = []
        uses: list[ast.UseStmt | ast.UseOneOfStmt] = []
        while not self.current.is_symbol("}"):
            if self.current.kind is TokenKind.IDENTIFIER and self.current.value in CONFIG_KEYS:
                key, value, config_start = self.config_line()
                config.append(ast.ConfigDecl(range=self.span(config_start), key=key, value=value))
            elif self.current.is_word("use"):
                uses.append(self.use_stmt())
            elif self.current.is_word("func") or (
                self.current.is_word("main") and self.peek().is_word("func")
            ):
                functions.append(self.func_decl())
            else:
                raise self.error("Expected configuration declaration or function declaration")
        self.advance()
        return ast.AgentDecl(
            range=self.span(start),
            name=name,
            is_main=is_main,
            config=config,
            functions=functions,
            uses=uses or None,
            source_path=self.path,
        )

    def config_line(self) -> tuple[str, ast.Expr, int]:
        """`model postfix_expr` | `role expr` | `description expr`."""
        key_token = self.advance()
        value = self.postfix() if key_token.value == "model" else self.expression()
        return key_token.value, value, key_token.start

    def func_decl(self) -> ast.FuncDecl:
        start = self.current.start
        is_main, name = self.declaration_head("func", "(", "__main")
        self.expect_symbol("(")
        params: list[ast.FuncParam] = []
        while not self.current.is_symbol(")"):
            params.append(self.param())
            self.skip_comma()
        self.advance()
        body = self.block()
        return ast.FuncDecl(
            range=self.span(start), name=name, is_main=is_main, params=params, body=body
        )

    def param(self) -> ast.FuncParam:
        token = self.expect_name("Expected parameter name")
        shape = self.shape(allow_untyped=False) if self.current.is_symbol("{") else None
        return ast.FuncParam(range=self.span(token.start), name=token.value, shape=shape)

    # ------------------------------------------------------------------ shapes

    def shape(self, allow_untyped: bool) -> ast.ShapeObjectExpr:
        """`{ field type, … }`; also `field: type` (contract form) and, in generate output
        shapes only, a bare `field` ending its line or followed by `,`/`}` (meaning string)."""
        start = self.expect_symbol("{").start
        shape_fields: list[ast.ShapeField] = []
        while not self.current.is_symbol("}"):
            shape_fields.append(self.shape_field(allow_untyped))
            self.skip_comma()
        self.advance()
        return ast.ShapeObjectExpr(range=self.span(start), fields=shape_fields)

    def shape_field(self, allow_untyped: bool) -> ast.ShapeField:
        name_token = self.expect_name("Expected shape field name")
        if self.accept_symbol(":"):
            field_type = self.shape_type()
            return ast.ShapeField(
                range=self.span(name_token.start), name=name_token.value, type=field_type
            )
        following = self.current
        ends_field = (
            following.is_symbol(",")
            or following.is_symbol("}")
            or (not self.on_same_line(following) and not self.is_shape_type_word(following))
        )
        if allow_untyped and ends_field:
            implicit = ast.NamedShapeType(range=self.token_range(name_token), name="string")
            return ast.ShapeField(
                range=self.span(name_token.start),
                name=name_token.value,
                type=implicit,
                implicit=True,
            )
        field_type = self.shape_type()
        return ast.ShapeField(
            range=self.span(name_token.start), name=name_token.value, type=field_type
        )

    def is_shape_type_word(self, token: Token) -> bool:
        """A type name on the next line still types the field (0.1.0 ignores newlines), unless it
        is itself a contract field (`list: string`)."""
        if not token.is_name or token.value not in SHAPE_TYPE_NAMES:
            return False
        return not self.peek().is_symbol(":")

    def shape_type(self) -> ast.ShapeType:
        token = self.current
        if token.kind in (TokenKind.STRING, TokenKind.NUMBER):
            return self.choice_type()
        if not token.is_name:
            raise self.error("Expected shape type")
        self.advance()
        if token.value == "list" and self.current.is_symbol("["):
            self.advance()
            item_type = self.shape_type()
            self.expect_symbol("]")
            return ast.ListShapeType(range=self.span(token.start), item_type=item_type)
        if token.value not in SHAPE_TYPE_NAMES:
            hint = shape_type_hint(token.value, SHAPE_TYPE_NAMES)
            raise self.error(f"Unsupported shape type '{token.value}'{hint}", token)
        return ast.NamedShapeType(range=self.span(token.start), name=token.value)

    def choice_type(self) -> ast.ChoiceShapeType:
        """`"a" | "b" | …` (or numbers): the values a field may take."""
        start = self.current.start
        values: list[str | float] = []
        while True:
            token = self.current
            if token.kind is TokenKind.STRING:
                values.append(token.value)
            elif token.kind is TokenKind.NUMBER:
                if not _PLAIN_NUMBER.fullmatch(token.value):
                    raise self.error(
                        f"A choice value is a string or a plain number, got '{token.value}'"
                    )
                values.append(float(token.value))
            else:
                raise self.error("Expected a string or a number after '|' in a choice")
            self.advance()
            if not self.current.is_symbol("|"):
                break
            self.advance()
        return ast.ChoiceShapeType(range=self.span(start), values=values)

    # ------------------------------------------------------------------ statements

    def block(self) -> list[ast.Stmt]:
        self.expect_symbol("{")
        self.enter_nesting()
        body: list[ast.Stmt] = []
        while not self.current.is_symbol("}"):
            if self.current.kind is TokenKind.EOF:
                raise self.error("Expected '}'")
            body.append(self.statement())
        self.advance()
        self.nesting -= 1
        return body

    def statement(self) -> ast.Stmt:
        token = self.current
        if token.kind is TokenKind.IDENTIFIER and token.value in CONFIG_KEYS:
            key, value, start = self.config_line()
            return ast.ConfigStmt(range=self.span(start), key=key, value=value)
        if token.kind is TokenKind.KEYWORD:
            rule = self.STATEMENT_RULES.get(token.value)
            if rule is not None:
                return rule(self)
        return self.assignment_or_expression()

    def use_stmt(self) -> ast.UseStmt | ast.UseOneOfStmt:
        start = self.advance().start
        if (
            self.current.is_word("one")
            and self.peek().is_word("of")
            and self.peek(2).is_symbol("{")
        ):
            return self.use_one_of(start)
        value = self.within(_USE_BUDGET, self.expression)
        budget = self.optional_budget()
        label = self.context_label()
        return ast.UseStmt(range=self.span(start), value=value, budget=budget, label=label)

    def optional_budget(self) -> ast.Budget | None:
        """`< BUDGET` (0.1.0) or `max BUDGET` (later form) after a used expression."""
        if self.current.is_symbol("<") or (
            self.current.is_word("max") and self.peek().kind is TokenKind.NUMBER
        ):
            self.advance()
            return self.budget()
        return None

    def use_one_of(self, start: int) -> ast.UseOneOfStmt:
        """`use one of { name: expr [max B] [selected] … name: empty } as label`."""
        self.advance()  # one
        self.advance()  # of
        opening = self.expect_symbol("{")
        candidates: list[ast.UseCandidate] = []
        names: set[str] = set()
        while not self.current.is_symbol("}"):
            if self.current.kind is TokenKind.EOF:
                raise self.error("Expected '}'")
            candidate = self.use_candidate()
            if candidate.name in names:
                raise ParseError(
                    f"Duplicate candidate '{candidate.name}' in use one of",
                    candidate.range.start,
                    self.path,
                )
            names.add(candidate.name)
            candidates.append(candidate)
            self.skip_comma()
        self.advance()
        where = self.map.position(opening.start)
        if len(candidates) < 2:
            raise ParseError("use one of requires at least two candidates", where, self.path)
        if sum(1 for candidate in candidates if candidate.selected) > 1:
            raise ParseError("use one of can mark only one candidate as selected", where, self.path)
        label = self.context_label()
        if label is None:
            raise self.error("use one of requires a label: as <label>")
        return ast.UseOneOfStmt(range=self.span(start), candidates=candidates, label=label)

    def use_candidate(self) -> ast.UseCandidate:
        name = self.expect_name("Expected candidate name")
        self.expect_symbol(":")
        value: ast.Expr | None
        if self.current.is_word("empty") and self.ends_candidate(self.peek()):
            self.advance()
            value = None
        else:
            value = self.within(_USE_BUDGET, self.expression)
        budget = self.optional_budget() if value is not None else None
        selected = None
        if self.current.is_word("selected") and self.on_same_line(self.current):
            self.advance()
            selected = True
        return ast.UseCandidate(
            range=self.span(name.start),
            name=name.value,
            value=value,
            budget=budget,
            selected=selected,
        )

    def ends_candidate(self, token: Token) -> bool:
        """After `empty`: the candidate ends at `}`, `,`, `selected` or a line break."""
        return (
            token.is_symbol("}")
            or token.is_symbol(",")
            or token.is_word("selected")
            or self.map.line_of(token.start) != self.map.line_of(self.current.end)
        )

    def budget(self) -> ast.Budget:
        token = self.current
        if token.kind is not TokenKind.NUMBER:
            raise self.error("Expected budget amount")
        matched = _BUDGET.match(token.value)
        if matched is None:
            raise self.error(f"Invalid budget '{token.value}'")
        self.advance()
        return ast.Budget(amount=float(matched.group(1)), unit=matched.group(2))

    def context_label(self) -> str | None:
        """`as label` on the same line: a string, or the words up to the end of the line."""
        token = self.current
        if not (token.is_word("as") and self.on_same_line(token)):
            return None
        self.advance()
        if self.current.kind is TokenKind.STRING and self.on_same_line(self.current):
            return self.advance().value
        words: list[str] = []
        line = self.map.line_of(token.start)
        last_end: int | None = None
        while (
            self.current.kind is not TokenKind.EOF
            and self.map.line_of(self.current.start) == line
            and not self.current.is_symbol("}")
        ):
            word = self.advance()
            gap = last_end is not None and word.start > last_end
            words.append((" " if gap else "") + word.value)
            last_end = word.end
        if not words:
            raise self.error("Expected context label after 'as'")
        return "".join(words)

    def return_stmt(self) -> ast.ReturnStmt:
        start = self.advance().start
        value = self.expression()
        return ast.ReturnStmt(range=self.span(start), value=value)

    def repeat_stmt(self) -> ast.RepeatStmt:
        start = self.advance().start
        self.expect_symbol("*")
        count = self.iteration_count("Expected repeat count")
        body = self.block()
        return ast.RepeatStmt(range=self.span(start), max_attempts=count, body=body)

    def for_stmt(self) -> ast.ForInStmt:
        start = self.advance().start
        item = self.expect_name("Expected for item name")
        self.expect_word("in")
        iterable = self.within(_LOOP_BOUND, self.expression)
        limit = self.loop_bound(iterable, "Expected for iteration count")
        body = self.block()
        return ast.ForInStmt(
            range=self.span(start),
            item_name=item.value,
            item_range=self.token_range(item),
            iterable=iterable,
            max_iterations=limit,
            body=body,
        )

    def parallel_for(self) -> ast.ParallelForExpr:
        """`parallel for x in xs max N { … }` (later form; `< N` also accepted)."""
        start = self.advance().start  # parallel
        self.advance()  # for
        item = self.expect_name("Expected for item name")
        self.expect_word("in")
        iterable = self.within(_LOOP_BOUND, self.expression)
        limit = self.loop_bound(iterable, "Expected parallel for item count")
        body = self.block()
        return ast.ParallelForExpr(
            range=self.span(start),
            item_name=item.value,
            item_range=self.token_range(item),
            iterable=iterable,
            max_items=limit,
            body=body,
        )

    def loop_stmt(self) -> ast.LoopUntilStmt:
        start = self.advance().start
        self.expect_word("until")
        condition = self.within(_LOOP_BOUND, self.expression)
        limit = self.loop_bound(condition, "Expected loop iteration count")
        body = self.block()
        return ast.LoopUntilStmt(
            range=self.span(start), condition=condition, max_iterations=limit, body=body
        )

    def loop_bound(self, header: ast.Expr, message: str) -> int:
        """`< INT` (0.1.0) or `max INT` (later form) after a loop header expression."""
        if self.current.is_symbol("<") or self.current.is_word("max"):
            self.advance()
            return self.iteration_count(message)
        if isinstance(header, ast.BinaryExpr) and header.operator == "<":
            # `for x in xs < n {` with a non-literal n: the bound must be a plain integer.
            raise ParseError(message, header.right.range.start, self.path)
        raise self.error("Expected 'max' or '<' before the iteration count")

    def iteration_count(self, message: str) -> int:
        token = self.current
        if token.kind is not TokenKind.NUMBER or not _INT.match(token.value):
            raise self.error(message)
        if not count_fits(token.value):
            raise self.error(f"{too_large_count(token.value)} (the limit is {MAX_COUNT:,})")
        self.advance()
        return int(token.value)

    def if_stmt(self) -> ast.IfStmt:
        start = self.advance().start
        condition = self.expression()
        then_body = self.block()
        else_body: list[ast.Stmt] | None = None
        if self.current.is_word("else"):
            self.advance()
            # `else if` is accepted as a convenience: it nests an if in the else branch.
            if self.current.is_word("if"):
                self.enter_nesting()
                else_body = [self.if_stmt()]
                self.nesting -= 1
            else:
                else_body = self.block()
        return ast.IfStmt(
            range=self.span(start), condition=condition, then_body=then_body, else_body=else_body
        )

    def assignment_or_expression(self) -> ast.Stmt:
        start = self.current.start
        expr = self.expression()
        token = self.current
        if token.kind is TokenKind.SYMBOL and token.value in ("=", "+=", "-="):
            if not isinstance(expr, ast.IdentifierExpr | ast.MemberExpr):
                raise self.error("Assignment target must be an identifier or member expression")
            self.advance()
            value = self.expression()
            operator = None if token.value == "=" else token.value
            return ast.AssignStmt(
                range=self.span(start), target=expr, value=value, operator=operator
            )
        return ast.ExprStmt(range=self.span(start), expr=expr)

    STATEMENT_RULES: ClassVar[dict[str, Callable[[_Parser], ast.Stmt]]] = {
        "use": use_stmt,
        "return": return_stmt,
        "repeat": repeat_stmt,
        "for": for_stmt,
        "loop": loop_stmt,
        "if": if_stmt,
    }

    # ------------------------------------------------------------------ expressions

    def expression(self) -> ast.Expr:
        self.enter_nesting()
        try:
            return self.binary(1)
        finally:
            self.nesting -= 1

    def enter_nesting(self) -> None:
        """Refuse absurdly deep nesting with a ParseError instead of exhausting the stack."""
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise self.error(f"Nesting is deeper than {MAX_NESTING} levels")

    def binary(self, min_precedence: int) -> ast.Expr:
        """Precedence climbing over BINARY_PRECEDENCE; all binary operators are left-associative.
        Each operator applied nests the tree one level deeper, so it counts as nesting."""
        left = self.unary()
        levels = 0
        try:
            while True:
                token = self.current
                if token.kind is TokenKind.SYMBOL:
                    operator = token.value
                elif token.kind is TokenKind.KEYWORD and token.value in _WORD_OPERATORS:
                    operator = token.value
                else:
                    return left
                precedence = BINARY_PRECEDENCE.get(operator)
                if precedence is None or precedence < min_precedence:
                    return left
                if operator == "<" and self.less_than_is_bound():
                    return left
                self.advance()
                self.enter_nesting()
                levels += 1
                right = self.binary(precedence + 1)
                left = ast.BinaryExpr(
                    range=left.range.to(right.range),
                    operator=operator,
                    left=left,
                    right=right,
                )
        finally:
            self.nesting -= levels

    def less_than_is_bound(self) -> bool:
        after = self.peek()
        if self.bound_context == _USE_BUDGET:
            return after.kind is TokenKind.NUMBER
        if self.bound_context == _LOOP_BOUND:
            return (
                after.kind is TokenKind.NUMBER
                and _INT.match(after.value) is not None
                and self.peek(2).is_symbol("{")
            )
        return False

    def unary(self) -> ast.Expr:
        token = self.current
        value = token.value
        if (value == "not" and token.kind is TokenKind.KEYWORD) or token.symbol == "-":
            self.advance()
            self.enter_nesting()
            operand = self.unary()
            self.nesting -= 1
            return ast.UnaryExpr(range=self.span(token.start), operator=value, value=operand)
        return self.postfix()

    def postfix(self) -> ast.Expr:
        expr = self.primary()
        levels = 0
        try:
            while True:
                token = self.current
                symbol = token.symbol
                if symbol is None or symbol not in _POSTFIX_SYMBOLS:
                    return expr
                # Each postfix operator nests the tree one level deeper.
                self.enter_nesting()
                levels += 1
                expr = self.postfix_operator(expr, symbol)
        finally:
            self.nesting -= levels

    def postfix_operator(self, expr: ast.Expr, symbol: str) -> ast.Expr:
        """One `.name`, `(args)` or `[index]` applied to `expr`."""
        self.advance()
        if symbol == ".":
            name = self.expect_name("Expected property name")
            return ast.MemberExpr(
                range=SourceRange(self.map, expr.range.start_offset, name.end),
                object=expr,
                property=name.value,
            )
        if symbol == "(":
            args = self.within(_NO_BOUND, self.call_arguments)
            return ast.CallExpr(range=self.span(expr.range.start_offset), callee=expr, args=args)
        index = self.within(_NO_BOUND, self.expression)
        self.expect_symbol("]")
        return ast.IndexExpr(range=self.span(expr.range.start_offset), object=expr, index=index)

    def call_arguments(self) -> list[ast.Expr]:
        args: list[ast.Expr] = []
        while not self.current.is_symbol(")"):
            if self.current.kind is TokenKind.EOF:
                raise self.error("Expected ')'")
            args.append(self.expression())
            self.skip_comma()
        self.advance()
        return args

    def primary(self) -> ast.Expr:
        token = self.current
        kind = token.kind
        if kind is TokenKind.STRING:
            self.advance()
            return ast.StringExpr(range=self.span(token.start), value=token.value)
        if kind is TokenKind.NUMBER:
            self.advance()
            return ast.NumberExpr(
                range=self.span(token.start), value=number_value(token.value), raw=token.value
            )
        if kind is TokenKind.KEYWORD:
            word = token.value
            if word == "true" or word == "false":
                self.advance()
                return ast.BooleanExpr(range=self.span(token.start), value=word == "true")
            if word == "none":
                self.advance()
                return ast.NullExpr(range=self.span(token.start))
            if word == "generate":
                return self.generate()
        if token.is_name:
            if token.value == "parallel" and self.peek().is_word("for"):
                return self.parallel_for()
            self.advance()
            return ast.IdentifierExpr(range=self.span(token.start), name=token.value)
        if token.is_symbol("{"):
            return self.within(_NO_BOUND, self.object_literal)
        if token.is_symbol("["):
            return self.within(_NO_BOUND, self.list_literal)
        if token.is_symbol("("):
            self.advance()
            inner = self.within(_NO_BOUND, self.expression)
            self.expect_symbol(")")
            return inner
        raise self.error("Expected expression")

    def object_literal(self) -> ast.ObjectExpr:
        start = self.advance().start
        properties = self.object_properties()
        return ast.ObjectExpr(range=self.span(start), properties=properties)

    def object_properties(self) -> list[ast.ObjectProperty]:
        """`{ key: value, … }` after its opening brace, through the closing brace."""
        properties: list[ast.ObjectProperty] = []
        while not self.current.is_symbol("}"):
            key_token = self.current
            if not (key_token.is_name or key_token.kind is TokenKind.STRING):
                raise self.error("Expected object key")
            self.advance()
            self.expect_symbol(":")
            value = self.expression()
            properties.append(
                ast.ObjectProperty(
                    range=self.span(key_token.start), key=key_token.value, value=value
                )
            )
            self.skip_comma()
        self.advance()
        return properties

    def list_literal(self) -> ast.ListExpr:
        start = self.advance().start
        items: list[ast.Expr] = []
        while not self.current.is_symbol("]"):
            if self.current.kind is TokenKind.EOF:
                raise self.error("Expected ']'")
            items.append(self.expression())
            self.skip_comma()
        self.advance()
        return ast.ListExpr(range=self.span(start), items=items)

    # ------------------------------------------------------------------ generate

    def generate(self) -> ast.GenerateExpr:
        start = self.advance().start
        self.expect_symbol("(")
        options = self.within(_NO_BOUND, self.generate_options)
        self.expect_symbol(")")
        shape: ast.ShapeObjectExpr | None = None
        if self.current.is_symbol("{") and self.peek().is_word("return"):
            # 0.1.0: `generate({…}) { return { shape } }`
            self.advance()
            self.expect_word("return")
            shape = self.shape(allow_untyped=True)
            self.expect_symbol("}")
        elif self.current.is_symbol("->"):
            self.advance()
            shape = self.shape(allow_untyped=True)
        return ast.GenerateExpr(range=self.span(start), options=options, return_shape=shape)

    def generate_options(self) -> ast.GenerateOptionsExpr:
        start = self.expect_symbol("{").start
        options = ast.GenerateOptionsExpr(range=self.span(start), properties=[])
        while not self.current.is_symbol("}"):
            key_token = self.current
            if not (key_token.is_name or key_token.kind is TokenKind.STRING):
                raise self.error("Expected object key")
            self.advance()
            self.expect_symbol(":")
            key = key_token.value
            if key in ("limit", "max_output"):
                value: ast.Expr = self.budget_literal(key)
            else:
                value = self.expression()
            options.properties.append(
                ast.ObjectProperty(range=self.span(key_token.start), key=key, value=value)
            )
            capture_generate_option(options, key, value)
            self.skip_comma()
        self.advance()
        options.range = self.span(start)
        return options

    def budget_literal(self, key: str) -> ast.NumberExpr:
        token = self.current
        if token.kind is not TokenKind.NUMBER:
            raise self.error("Expected generate limit")
        if _BUDGET.match(token.value) is None:
            raise self.error(f"Invalid budget '{token.value}'")
        self.advance()
        return ast.NumberExpr(
            range=self.span(token.start), value=number_value(token.value), raw=token.value
        )


def number_value(raw: str) -> float:
    """What JavaScript's parseFloat gives for a number token: `2k` is 2, `1.5k` is 1.5."""
    matched = _NUMBER_PREFIX.match(raw)
    assert matched is not None  # the lexer only produces tokens that start with digits
    text = matched.group()
    value = float(text)
    # Integral values stay ints while a double holds them exactly; beyond that they are doubles
    # (possibly infinity), as in the original. float() also avoids int()'s digit-count limit.
    if "." not in text and value < _EXACT_INTEGER_LIMIT:
        return int(text)
    return value


def capture_generate_option(options: ast.GenerateOptionsExpr, key: str, value: ast.Expr) -> None:
    """Record the literal generate options the runtime reads (the first occurrence wins;
    duplicates are reported by the checker)."""
    if key == "input":
        if options.input is None:
            options.input = value
    elif key in ("limit", "max_output") and isinstance(value, ast.NumberExpr):
        matched = _BUDGET.match(value.raw)
        if matched is not None and getattr(options, key) is None:
            setattr(options, key, ast.Budget(amount=float(matched.group(1)), unit=matched.group(2)))
    elif key in ("attempts", "temperature") and isinstance(value, ast.NumberExpr):
        if getattr(options, key) is None:
            setattr(options, key, value.value)
    elif key in ("debug", "strict") and isinstance(value, ast.BooleanExpr):
        if getattr(options, key) is None:
            setattr(options, key, value.value)
    elif key == "think" and options.think is None:
        if isinstance(value, ast.BooleanExpr):
            options.think = value.value
        elif isinstance(value, ast.StringExpr):
            options.think = value.value

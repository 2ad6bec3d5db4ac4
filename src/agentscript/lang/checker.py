"""The static checker: a separate pass over a parsed program that reports diagnostics.

It reproduces every check of reference §3.1 with the same codes and messages, plus checks for the
later forms we accept (compound assignment, later generate options). It never raises: a program
gets a list of diagnostics, empty when it is valid. It does not evaluate anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentscript.lang import ast
from agentscript.lang.builtin_tools import IGNORED, builtin_methods
from agentscript.lang.counts import MAX_COUNT, count_fits, too_large_count
from agentscript.lang.errors import Diagnostic, SourceRange
from agentscript.lang.formatter import format_expr
from agentscript.lang.shape_types import ObjectType, ProgramTypes, members
from agentscript.lang.suggest import did_you_mean

# Symbol kinds: the import kinds, plus these.
AGENT = "agent"
FUNCTION = "function"
PARAM = "param"
LOCAL = "local"

_RESOURCE_KINDS = frozenset({"tool", "llm", "agent", "memory", FUNCTION})
_VALUE_KINDS = frozenset({PARAM, LOCAL, "file"})
_MEMORY_METHODS = ("add", "query")
_GENERATE_OPTIONS = frozenset(
    {"input", "attempts", "limit", "debug", "max_output", "temperature", "think", "strict"}
)
_THINK_LEVELS = frozenset({"auto", "low", "medium", "high"})
# Tool calls that only read, so they may run inside `parallel for`; every other call of a
# file, http(s), sh or mcp tool is effectful (an MCP tool's effects cannot be known statically).
_FILE_READS = frozenset({"read", "list"})
_HTTP_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_SHELL_READS = frozenset({"find", "grep", "sed", "read-range"})
_MEMORY_SERVICE_WRITES = frozenset({"remember", "update", "forget"})
_REQUIRED_CONFIG = ("model", "role", "description")


def check_program(program: ast.Program) -> list[Diagnostic]:
    """All diagnostics for `program`, in source order of discovery."""
    return _Checker(program).run()


@dataclass(slots=True)
class _Scope:
    parent: _Scope | None
    symbols: dict[str, str] = field(default_factory=dict)
    configured: set[str] = field(default_factory=set)

    def lookup(self, name: str) -> str | None:
        scope: _Scope | None = self
        while scope is not None:
            kind = scope.symbols.get(name)
            if kind is not None:
                return kind
            scope = scope.parent
        return None

    def names(self) -> set[str]:
        """Every name visible here, for suggestions."""
        visible: set[str] = set()
        scope: _Scope | None = self
        while scope is not None:
            visible.update(scope.symbols)
            scope = scope.parent
        return visible

    def owner(self, name: str) -> _Scope | None:
        """The scope that binds `name`, or None."""
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.symbols:
                return scope
            scope = scope.parent
        return None

    def is_within(self, ancestor: _Scope) -> bool:
        """Whether this scope is `ancestor` or nested inside it."""
        scope: _Scope | None = self
        while scope is not None:
            if scope is ancestor:
                return True
            scope = scope.parent
        return False

    def is_configured(self, key: str) -> bool:
        scope: _Scope | None = self
        while scope is not None:
            if key in scope.configured:
                return True
            scope = scope.parent
        return False

    def child(self) -> _Scope:
        return _Scope(parent=self)


class _Checker:
    def __init__(self, program: ast.Program) -> None:
        self.program = program
        self.diagnostics: list[Diagnostic] = []
        self.path: str | None = program.source_path
        self.agent: ast.AgentDecl | None = None
        self.imports: dict[str, str] = {}
        self.import_uris: dict[str, str] = {}
        self.agents: dict[str, ast.AgentDecl] = {}
        # Bodies of the `parallel for` expressions being checked, innermost last.
        self.parallel_bodies: list[_Scope] = []
        self.types = ProgramTypes(program)

    def report(self, code: str, message: str, where: SourceRange) -> None:
        self.diagnostics.append(Diagnostic(code, message, where, path=self.path))

    # ------------------------------------------------------------------ program level

    def run(self) -> list[Diagnostic]:
        for decl in self.program.imports:
            if decl.name in self.imports:
                self.report("DUPLICATE_IMPORT", f"Duplicate import '{decl.name}'", decl.range)
            else:
                self.imports[decl.name] = decl.resource_kind
                self.import_uris[decl.name] = decl.uri
        self.check_agent_set()
        for agent in self.program.agents:
            self.check_agent(agent)
        return self.diagnostics

    def check_agent_set(self) -> None:
        main_agents: list[ast.AgentDecl] = []
        for agent in self.program.agents:
            self.path = agent.source_path or self.program.source_path
            if agent.name in self.agents:
                self.report("DUPLICATE_AGENT", f"Duplicate agent '{agent.name}'", agent.range)
            else:
                self.agents[agent.name] = agent
            if agent.is_main:
                if main_agents:
                    self.report(
                        "DUPLICATE_MAIN_AGENT", "Program can only have one main agent", agent.range
                    )
                main_agents.append(agent)
        self.path = self.program.source_path
        agents = self.program.agents
        if len(agents) > 1 and not main_agents:
            self.report(
                "MISSING_MAIN_AGENT",
                "Program with multiple agents must declare one main agent",
                self.program.range,
            )
            return
        entry = main_agents[0] if main_agents else (agents[0] if len(agents) == 1 else None)
        if entry is not None and entry.main_function() is None:
            self.path = entry.source_path or self.program.source_path
            self.report("MISSING_MAIN_FUNC", "Entry agent must declare one main func", entry.range)

    def agent_scope(self, agent: ast.AgentDecl) -> _Scope:
        scope = _Scope(parent=None)
        scope.symbols.update(self.imports)
        for name in self.agents:
            scope.symbols[name] = AGENT
        for func in agent.functions:
            scope.symbols[func.name] = FUNCTION
        return scope

    def check_agent(self, agent: ast.AgentDecl) -> None:
        self.agent = agent
        self.path = agent.source_path or self.program.source_path
        seen: set[str] = set()
        has_main = False
        for func in agent.functions:
            if func.name in seen:
                self.report(
                    "DUPLICATE_FUNCTION",
                    f"Duplicate function '{func.name}' in agent '{agent.name}'",
                    func.range,
                )
            seen.add(func.name)
            if func.is_main:
                if has_main:
                    self.report(
                        "DUPLICATE_MAIN_FUNC",
                        f"Agent '{agent.name}' can only have one main func",
                        func.range,
                    )
                has_main = True
            imported = self.imports.get(func.name)
            if imported is not None:
                self.report(
                    "DUPLICATE_BINDING",
                    f"Function '{func.name}' conflicts with an imported {imported}",
                    func.range,
                )
        scope = self.agent_scope(agent)
        for config in agent.config:
            self.check_config(config.key, config.value, config.range, scope)
        for use in agent.uses or []:
            self.check_statement(use, scope)
        for func in agent.functions:
            self.check_function(func, scope)

    def check_config(self, key: str, value: ast.Expr, where: SourceRange, scope: _Scope) -> None:
        scope.configured.add(key)
        if key == "model":
            if not isinstance(value, ast.IdentifierExpr):
                self.report("INVALID_CONFIG", "model must reference an imported llm name", where)
                return
            kind = scope.lookup(value.name)
            if kind is None:
                llms = [name for name, kind in self.imports.items() if kind == "llm"]
                self.report(
                    "UNKNOWN_MODEL",
                    f"Unknown model import '{value.name}'{did_you_mean(value.name, llms)}",
                    value.range,
                )
            elif kind != "llm":
                self.report("INVALID_MODEL", "model must reference an imported llm", value.range)
        elif not isinstance(value, ast.StringExpr):
            self.report("INVALID_CONFIG", f"{key} must be a string", where)

    def check_function(self, func: ast.FuncDecl, agent_scope: _Scope) -> None:
        scope = agent_scope.child()
        for position, param in enumerate(func.params):
            if param.name in scope.symbols:
                self.report(
                    "DUPLICATE_PARAM",
                    f"Duplicate parameter '{param.name}' in function '{func.name}'",
                    param.range,
                )
            imported = self.imports.get(param.name)
            if imported is not None:
                self.report(
                    "PARAM_SHADOWS_IMPORT",
                    f"Parameter '{param.name}' conflicts with an imported {imported}",
                    param.range,
                )
            if param.shape is not None:
                if not (func.is_main and position == 0 and param.name == "input"):
                    self.report(
                        "INVALID_PARAM_SHAPE",
                        "V0 only supports shape declarations on the main func input parameter",
                        param.range,
                    )
                self.check_shape(param.shape)
            scope.symbols[param.name] = PARAM
        self.check_block(func.body, scope)

    # ------------------------------------------------------------------ statements

    def check_block(self, body: list[ast.Stmt], scope: _Scope) -> None:
        for stmt in body:
            self.check_statement(stmt, scope)

    def check_statement(self, stmt: ast.Stmt, scope: _Scope) -> None:
        if isinstance(stmt, ast.ExprStmt):
            self.check_expr(stmt.expr, scope)
        elif isinstance(stmt, ast.AssignStmt):
            self.check_assignment(stmt, scope)
        elif isinstance(stmt, ast.UseStmt):
            self.check_use(stmt, scope)
        elif isinstance(stmt, ast.UseOneOfStmt):
            for candidate in stmt.candidates:
                if candidate.value is not None:
                    self.check_context(candidate.value, candidate.budget, candidate.range, scope)
        elif isinstance(stmt, ast.ReturnStmt):
            self.check_expr(stmt.value, scope)
        elif isinstance(stmt, ast.IfStmt):
            self.check_expr(stmt.condition, scope)
            self.check_block(stmt.then_body, scope.child())
            if stmt.else_body is not None:
                self.check_block(stmt.else_body, scope.child())
        elif isinstance(stmt, ast.ForInStmt):
            self.check_expr(stmt.iterable, scope)
            if stmt.max_iterations <= 0:
                self.report(
                    "INVALID_ITERATION_LIMIT",
                    "For iteration count must be greater than 0",
                    stmt.range,
                )
            body_scope = scope.child()
            body_scope.symbols[stmt.item_name] = LOCAL
            self.check_block(stmt.body, body_scope)
        elif isinstance(stmt, ast.LoopUntilStmt):
            self.check_expr(stmt.condition, scope)
            self.check_block(stmt.body, scope.child())
        elif isinstance(stmt, ast.RepeatStmt):
            self.check_block(stmt.body, scope.child())
        elif isinstance(stmt, ast.ConfigStmt):
            self.check_config(stmt.key, stmt.value, stmt.range, scope)

    def check_assignment(self, stmt: ast.AssignStmt, scope: _Scope) -> None:
        self.check_expr(stmt.value, scope)
        target = stmt.target
        if isinstance(target, ast.IdentifierExpr):
            kind = scope.lookup(target.name)
            if self.is_outer(target.name, scope):
                self.report(
                    "PARALLEL_FOR_OUTER_ASSIGNMENT",
                    f"parallel for body cannot assign to outer variable '{target.name}'",
                    target.range,
                )
            if stmt.operator is not None:
                # `x += e` reads x first, so x must already exist.
                if kind is None:
                    self.report(
                        "UNKNOWN_IDENTIFIER", f"Unknown identifier '{target.name}'", target.range
                    )
                return
            if kind not in (PARAM, LOCAL):
                scope.symbols[target.name] = LOCAL
        else:
            self.check_expr(target, scope)
            root = _root_identifier(target)
            if root is not None and self.is_outer(root.name, scope):
                self.report(
                    "PARALLEL_FOR_OUTER_MUTATION",
                    f"parallel for body cannot mutate outer variable '{root.name}'",
                    target.range,
                )

    def is_outer(self, name: str, scope: _Scope) -> bool:
        """Inside a `parallel for` body: whether `name` is a variable of the enclosing code
        (iterations run at the same time, so they must not change it)."""
        if not self.parallel_bodies:
            return False
        owner = scope.owner(name)
        return (
            owner is not None
            and owner.symbols[name] in (LOCAL, PARAM)
            and not owner.is_within(self.parallel_bodies[-1])
        )

    def check_use(self, stmt: ast.UseStmt, scope: _Scope) -> None:
        self.check_context(stmt.value, stmt.budget, stmt.range, scope)

    def check_context(
        self, value: ast.Expr, budget: ast.Budget | None, where: SourceRange, scope: _Scope
    ) -> None:
        """What `use` (or a `use one of` candidate) puts into the prompt."""
        if budget is not None and budget.amount <= 0:
            self.report("INVALID_BUDGET", "Budget amount must be greater than 0", where)
        self.check_expr(value, scope)
        root = value
        while isinstance(root, ast.MemberExpr | ast.IndexExpr):
            root = root.object
        if isinstance(root, ast.IdentifierExpr) and scope.lookup(root.name) in _RESOURCE_KINDS:
            self.report(
                "INVALID_USE_RESOURCE",
                f"Resource '{root.name}' cannot be used as prompt context",
                root.range,
            )

    # ------------------------------------------------------------------ expressions

    def check_expr(self, expr: ast.Expr, scope: _Scope) -> None:
        if isinstance(expr, ast.IdentifierExpr):
            if scope.lookup(expr.name) is None:
                hint = did_you_mean(expr.name, scope.names())
                self.report(
                    "UNKNOWN_IDENTIFIER", f"Unknown identifier '{expr.name}'{hint}", expr.range
                )
        elif isinstance(expr, ast.CallExpr):
            self.check_call(expr, scope)
        elif isinstance(expr, ast.GenerateExpr):
            self.check_generate(expr, scope)
        elif isinstance(expr, ast.ParallelForExpr):
            self.check_parallel_for(expr, scope)
        else:
            if isinstance(expr, ast.MemberExpr):
                self.check_field(expr)
                if self.parallel_bodies and self.reads_module_export(expr, scope):
                    self.check_parallel_call(expr.object, expr.property, expr, scope)
            for child in ast.operand_expressions(expr):
                self.check_expr(child, scope)

    def reads_module_export(self, expr: ast.MemberExpr, scope: _Scope) -> bool:
        """Whether `expr` reads an export of a `node:`/`npm:` tool (`Path.sep`): at run time
        that is a call of the tool, as in the original."""
        receiver = expr.object
        if not isinstance(receiver, ast.IdentifierExpr) or scope.lookup(receiver.name) != "tool":
            return False
        uri = self.import_uris.get(receiver.name, "")
        return uri.split(":", 1)[0].lower() in ("node", "npm")

    def check_field(self, expr: ast.MemberExpr) -> None:
        """Reading a field the value's known shape does not have (UNKNOWN_FIELD); nothing when
        the type is not known or some assignment may have added the field."""
        owner = self.types.type_of(expr.object)
        name = expr.property
        if owner is None or name in self.types.written or name in members(owner):
            return
        known = members(owner)
        hint = did_you_mean(name, known)
        what = format_expr(expr.object)
        if isinstance(owner, ObjectType):
            detail = f"its fields are {', '.join(known) or 'none'} ({owner.origin})"
        else:
            detail = f"it has {', '.join(known) or 'no fields'}"
        end = expr.range.end_offset
        where = SourceRange(expr.range.source_map, end - len(name), end)
        self.report("UNKNOWN_FIELD", f"Unknown field '{name}' of '{what}'{hint}; {detail}", where)

    def check_call(self, call: ast.CallExpr, scope: _Scope) -> None:
        for arg in call.args:
            self.check_expr(arg, scope)
        callee = call.callee
        if isinstance(callee, ast.IdentifierExpr):
            self.check_bare_call(callee, len(call.args), scope)
        elif isinstance(callee, ast.MemberExpr):
            self.check_member_call(callee, len(call.args), scope)
        else:
            self.check_expr(callee, scope)
            self.report(
                "NOT_CALLABLE",
                "Only agent functions and member calls can be called in V0",
                call.range,
            )

    def check_bare_call(self, callee: ast.IdentifierExpr, count: int, scope: _Scope) -> None:
        name = callee.name
        kind = scope.lookup(name)
        if kind is None:
            self.report("UNKNOWN_FUNCTION", f"Unknown function '{name}'", callee.range)
        elif kind == FUNCTION:
            assert self.agent is not None
            func = self.agent.function(name)
            if func is not None:
                self.check_arity(self.agent.name, func, count, callee.range)
        elif kind == AGENT:
            agent = self.agents.get(name)
            if agent is None:
                return
            main = agent.main_function()
            if main is None:
                self.report(
                    "UNKNOWN_FUNCTION", f"Agent '{name}' has no callable main func", callee.range
                )
            else:
                self.check_arity(agent.name, main, count, callee.range)
        else:
            self.report("NOT_CALLABLE", f"'{name}' is not an agent function or agent", callee.range)

    def check_parallel_for(self, expr: ast.ParallelForExpr, scope: _Scope) -> None:
        self.check_expr(expr.iterable, scope)
        if expr.max_items <= 0:
            self.report(
                "INVALID_ITERATION_LIMIT",
                "parallel for item count must be greater than 0",
                expr.range,
            )
        if not expr.body or not isinstance(expr.body[-1], ast.ExprStmt):
            self.report(
                "PARALLEL_FOR_MISSING_VALUE",
                "parallel for body must end with a value expression",
                expr.range,
            )
        body_scope = scope.child()
        body_scope.symbols[expr.item_name] = LOCAL
        self.parallel_bodies.append(body_scope)
        try:
            self.check_block(expr.body, body_scope)
        finally:
            self.parallel_bodies.pop()

    def check_member_call(self, callee: ast.MemberExpr, count: int, scope: _Scope) -> None:
        self.check_expr(callee.object, scope)
        receiver = callee.object
        method = callee.property
        if self.parallel_bodies:
            self.check_parallel_call(receiver, method, callee, scope)
        if not isinstance(receiver, ast.IdentifierExpr):
            return
        kind = scope.lookup(receiver.name)
        if kind == AGENT:
            agent = self.agents.get(receiver.name)
            if agent is None:
                return
            func = agent.function(method)
            if func is None:
                self.report(
                    "UNKNOWN_FUNCTION", f"Unknown function '{agent.name}.{method}'", callee.range
                )
            else:
                self.check_arity(agent.name, func, count, callee.range)
        elif kind == "tool":
            self.check_tool_method(receiver.name, method, callee)
        elif kind == "memory":
            label = f"{receiver.name}.{method}"
            if method not in _MEMORY_METHODS:
                self.report(
                    "UNKNOWN_MEMORY_METHOD", f"Unknown memory method '{label}'", callee.range
                )
            elif count != 1:
                self.report(
                    "INVALID_ARGUMENT_COUNT",
                    f"Memory method '{label}' expects 1 argument(s), got {count}",
                    callee.range,
                )

    def check_tool_method(self, tool: str, method: str, callee: ast.MemberExpr) -> None:
        """A method a built-in tool does not have: an error where the tool refuses it at run
        time, a warning where it ignores the name (`sh://`: the command runs all the same)."""
        uri = self.import_uris.get(tool, "")
        known = builtin_methods(uri)
        if known is None or method in known.names:
            return
        hint = did_you_mean(method, known.names)
        names = ", ".join(known.names)
        if known.unknown == IGNORED:
            message = (
                f"Tool '{tool}' ({uri}) has no method '{method}'{hint}; the method name is "
                f"ignored and the command runs all the same (write {tool}.{names})"
            )
            self.diagnostics.append(
                Diagnostic("UNKNOWN_TOOL_METHOD", message, callee.range, "warning", self.path)
            )
        else:
            self.report(
                "UNKNOWN_TOOL_METHOD",
                f"Tool '{tool}' ({uri}) has no method '{method}'{hint}; it has: {names}",
                callee.range,
            )

    def check_parallel_call(
        self, receiver: ast.Expr, method: str, callee: ast.MemberExpr, scope: _Scope
    ) -> None:
        """Inside `parallel for`: no `.add` on outer lists, no effectful tool or memory calls."""
        root = _root_identifier(receiver)
        if root is None:
            return
        name = root.name
        kind = scope.lookup(name) if root is receiver else None
        effectful = (kind == "memory" and method == "add") or (
            kind == "tool" and effectful_tool_call(self.import_uris.get(name, ""), method)
        )
        if effectful:
            self.report(
                "PARALLEL_FOR_EFFECTFUL_CALL",
                f"effectful operation '{name}.{method}' is not allowed inside parallel for",
                callee.range,
            )
        elif method == "add" and self.is_outer(name, scope):
            self.report(
                "PARALLEL_FOR_OUTER_MUTATION",
                f"parallel for body cannot mutate outer variable '{name}'",
                callee.range,
            )

    def check_arity(self, agent: str, func: ast.FuncDecl, count: int, where: SourceRange) -> None:
        expected = len(func.params)
        if expected != count:
            self.report(
                "INVALID_ARGUMENT_COUNT",
                f"Function '{agent}.{func.name}' expects {expected} argument(s), got {count}",
                where,
            )

    def check_generate(self, expr: ast.GenerateExpr, scope: _Scope) -> None:
        options = expr.options
        seen: set[str] = set()
        for prop in options.properties:
            key = prop.key
            if key in seen:
                self.report(
                    "DUPLICATE_GENERATE_OPTION", f"Duplicate generate option '{key}'", prop.range
                )
            seen.add(key)
            if key not in _GENERATE_OPTIONS:
                self.report(
                    "UNKNOWN_GENERATE_OPTION", f"Unknown generate option '{key}'", prop.range
                )
            self.check_generate_option(key, prop, scope)
        if "limit" in seen and "max_output" in seen:
            self.report(
                "DUPLICATE_GENERATE_OPTION",
                "Use either generate limit or max_output, not both",
                options.range,
            )
        if "input" not in seen:
            self.report(
                "INVALID_GENERATE_INPUT",
                "generate object argument requires an input field",
                expr.range,
            )
        for key in _REQUIRED_CONFIG:
            if not scope.is_configured(key):
                self.report(
                    "MISSING_GENERATE_CONFIG",
                    f"generate requires {key} in the current scope",
                    expr.range,
                )
        if expr.return_shape is not None:
            self.check_shape(expr.return_shape)

    def check_generate_option(self, key: str, prop: ast.ObjectProperty, scope: _Scope) -> None:
        value = prop.value
        where = prop.range
        if key == "attempts":
            if not (
                isinstance(value, ast.NumberExpr)
                and float(value.value).is_integer()
                and value.value > 0
                and value.raw.isdigit()
            ):
                self.report(
                    "INVALID_GENERATE_ATTEMPTS",
                    "generate attempts must be a positive integer",
                    where,
                )
            elif not count_fits(value.raw):
                self.report(
                    "INVALID_GENERATE_ATTEMPTS",
                    f"generate attempts: {too_large_count(value.raw)} (the limit is {MAX_COUNT:,})",
                    where,
                )
        elif key in ("limit", "max_output"):
            if not (isinstance(value, ast.NumberExpr) and value.value > 0):
                code = "INVALID_GENERATE_LIMIT" if key == "limit" else "INVALID_GENERATE_MAX_OUTPUT"
                self.report(code, f"generate {key} must be a positive budget", where)
        elif key in ("debug", "strict"):
            if not isinstance(value, ast.BooleanExpr):
                self.report(
                    f"INVALID_GENERATE_{key.upper()}", f"generate {key} must be a boolean", where
                )
        elif key == "temperature":
            if not (isinstance(value, ast.NumberExpr) and value.raw.replace(".", "", 1).isdigit()):
                self.report(
                    "INVALID_GENERATE_TEMPERATURE", "generate temperature must be a number", where
                )
        elif key == "think":
            valid = isinstance(value, ast.BooleanExpr) or (
                isinstance(value, ast.StringExpr) and value.value in _THINK_LEVELS
            )
            if not valid:
                self.report(
                    "INVALID_GENERATE_THINK",
                    "generate think must be a boolean or one of 'auto', 'low', 'medium', 'high'",
                    where,
                )
        else:
            self.check_expr(value, scope)

    def check_shape(self, shape: ast.ShapeObjectExpr) -> None:
        names: set[str] = set()
        for shape_field in shape.fields:
            if shape_field.name in names:
                self.report(
                    "DUPLICATE_SHAPE_FIELD",
                    f"Duplicate generate return field '{shape_field.name}'",
                    shape_field.range,
                )
            names.add(shape_field.name)
            self.check_choices(shape_field.name, shape_field.type)

    def check_choices(self, name: str, shape_type: ast.ShapeType) -> None:
        """A closed choice lists distinct values of one kind (all strings or all numbers)."""
        if isinstance(shape_type, ast.ListShapeType):
            self.check_choices(name, shape_type.item_type)
            return
        if not isinstance(shape_type, ast.ChoiceShapeType):
            return
        kinds = {type(value) for value in shape_type.values}
        if len(kinds) > 1:
            self.report(
                "SHAPE_CHOICE_MIXED",
                f"The choices of field '{name}' mix strings and numbers; use one kind",
                shape_type.range,
            )
        seen: set[str | float] = set()
        for value in shape_type.values:
            if value in seen:
                shown = f'"{value}"' if isinstance(value, str) else f"{value:g}"
                self.report(
                    "SHAPE_CHOICE_DUPLICATE",
                    f"The choice {shown} is listed twice in field '{name}'",
                    shape_type.range,
                )
            seen.add(value)


def _root_identifier(expr: ast.Expr) -> ast.IdentifierExpr | None:
    """`a` for `a.b[0].c`; None when the chain starts with something else."""
    while isinstance(expr, ast.MemberExpr | ast.IndexExpr):
        expr = expr.object
    return expr if isinstance(expr, ast.IdentifierExpr) else None


def effectful_tool_call(uri: str, method: str) -> bool:
    """Whether calling `method` on a tool imported from `uri` may change something: by scheme
    and method, since iterations of a `parallel for` run at the same time."""
    scheme = uri.split(":", 1)[0].lower()
    if scheme == "file":
        return method not in _FILE_READS
    if scheme in ("http", "https"):
        return method.upper() not in _HTTP_READS
    if scheme == "sh":
        command = uri.split(":", 1)[1].lstrip("/").split("/", 1)[0] if ":" in uri else ""
        return command not in _SHELL_READS
    if scheme == "memory":
        return method in _MEMORY_SERVICE_WRITES
    return scheme != "env"

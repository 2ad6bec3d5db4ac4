"""The tree-walking interpreter: runs a checked Program and returns its value and trace.

Semantics follow reference §3.2-§3.8. The interpreter owns evaluation only: models, tools,
memory and interactive input are reached through the ports in `runtime.ports`, chosen by the
caller. It never reads configuration or the environment itself.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

from agentscript.lang import ast
from agentscript.lang.errors import SourceRange
from agentscript.lang.formatter import format_expr
from agentscript.runtime.budgets import BudgetExceeded, Interrupted, RunMeter
from agentscript.runtime.context import make_context_item
from agentscript.runtime.entry import resolve_entry_input
from agentscript.runtime.errors import AgentScriptError, ExecutionError
from agentscript.runtime.files import load_file_import
from agentscript.runtime.generate import (
    GenerateCall,
    GenerateSettings,
    prompt_layout_of,
    run_generate,
)
from agentscript.runtime.jsjson import utf16_length
from agentscript.runtime.operators import BINARY, negate
from agentscript.runtime.ports import (
    FileImports,
    InputProvider,
    LlmProvider,
    MemoryProvider,
    MemoryRequest,
    RunJournal,
    ToolCall,
    ToolProvider,
)
from agentscript.runtime.scope import MISSING, CallFrame, Scope, UseDeclaration
from agentscript.runtime.secrets import SecretSet
from agentscript.runtime.trace import TraceEvent, Tracer, TraceSink, elapsed_ms, event_json
from agentscript.runtime.uris import scrub_uri, uri_secrets
from agentscript.runtime.values import (
    AgentBinding,
    FunctionBinding,
    LlmBinding,
    MemoryBinding,
    ToolBinding,
    sanitize,
    truthy,
)

DEFAULT_MAX_CALL_DEPTH = 1000
DEFAULT_CONCURRENCY = 4
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# The schemes whose tools are modules: a member read without a call reads an export.
_MODULE_SCHEMES = ("node", "npm")


@dataclass(slots=True)
class RunResult:
    value: Any
    trace: list[dict[str, Any]]
    # What the run spent: model calls, input/output tokens, seconds.
    usage: dict[str, float | int] = field(default_factory=dict)
    # The run's journal record, when the run was journaled.
    journal: RunJournal | None = None


@dataclass(slots=True)
class ExecutionOptions:
    """How to run: the entry point and the providers to reach the outside world through."""

    llm: LlmProvider
    tools: ToolProvider | None = None
    memory: MemoryProvider | None = None
    input_provider: InputProvider | None = None
    agent_name: str | None = None
    function_name: str | None = None
    max_call_depth: int = DEFAULT_MAX_CALL_DEPTH
    debug_stream: TextIO | None = field(default_factory=lambda: sys.stderr)
    trace_sinks: list[TraceSink] = field(default_factory=list)
    # Counts model calls and tokens and enforces the run budget (time is checked at every
    # function call and loop iteration).
    meter: RunMeter = field(default_factory=RunMeter)
    # How many `parallel for` iterations run at once.
    concurrency: int = DEFAULT_CONCURRENCY
    # `use one of` choices by site id (`file#Agent.func[label]`), beating `selected` and first.
    variants: dict[str, str] = field(default_factory=dict)
    # Let providers that can stream pass the answer text to the trace sinks as it arrives.
    stream: bool = False
    # Where `import file` reads (the workspace jail); None: file imports fail.
    file_imports: FileImports | None = None
    # The run's redaction set (runtime/secrets.py): the trace, errors and memory writes are
    # scrubbed with it; the run adds the passwords of the URIs it imports and what tools hand
    # out as secrets.
    secrets: SecretSet = field(default_factory=SecretSet)
    # Keep the fields a model's answer has beyond its generate's shape, unless the generate
    # says `strict: true` (the original's 0.1.4 on); False rejects them unless it says
    # `strict: false` (0.1.0).
    extra_fields_allowed: bool = False
    # Set when the run is interrupted (Ctrl-C, or from another thread: a cancelled asyncio
    # task), so tool calls still working stop.
    stopped: threading.Event = field(default_factory=threading.Event)


class _Return:
    """What a statement hands back when a `return` ran."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def execute(program: ast.Program, input_value: Any, options: ExecutionOptions) -> RunResult:
    """Run the entry function of `program`. On failure the error carries the trace so far."""
    interpreter = Interpreter(program, options)
    return interpreter.run(input_value)


class Interpreter:
    def __init__(self, program: ast.Program, options: ExecutionOptions) -> None:
        self.program = program
        self.options = options
        self.tracer = Tracer(options.trace_sinks, options.secrets)
        for decl in program.imports:
            options.secrets.update(uri_secrets(decl.uri))
        self.agents = {agent.name: agent for agent in program.agents}
        self._local = threading.local()
        self._statement_rules = self._statement_table()
        self._expression_rules = self._expression_table()
        self._shared = self._shared_bindings()
        self._agent_fixed: dict[str, dict[str, Any]] = {}
        self._stopped = options.stopped

    # ------------------------------------------------------------------ entry

    def run(self, input_value: Any) -> RunResult:
        # Each AgentScript call takes several Python frames; make room for max_call_depth.
        sys.setrecursionlimit(max(sys.getrecursionlimit(), self.options.max_call_depth * 12 + 2000))
        try:
            agent, function = self._entry()
            args = resolve_entry_input(
                function,
                input_value,
                self.options.input_provider,
                self.tracer,
                agent.source_path or self.program.source_path,
            )
            value = self.call_function(agent, function, args, function.range)
            result = RunResult(
                value=sanitize(value),
                trace=self.tracer.to_json(),
                usage=self.options.meter.summary(),
            )
        except RecursionError:
            error = ExecutionError("Values or calls are nested too deeply to evaluate")
            error.trace = self.tracer.to_json()
            error.spent = self.options.meter.summary()
            self.tracer.end_run("error", str(error))
            raise error from None
        except AgentScriptError as error:
            error.trace = self.tracer.to_json()
            error.spent = self.options.meter.summary()
            error.redact(self.options.secrets.scrub_text)
            self.tracer.end_run("error", str(error))
            raise
        except KeyboardInterrupt:
            self._stopped.set()
            self.tracer.end_run("interrupted")
            raise
        self.tracer.end_run("ok")
        return result

    def _entry(self) -> tuple[ast.AgentDecl, ast.FuncDecl]:
        name = self.options.agent_name
        if name is not None:
            agent = self.agents.get(name)
            if agent is None:
                raise ExecutionError(f"Unknown agent '{name}'")
        else:
            mains = [a for a in self.program.agents if a.is_main]
            if mains:
                agent = mains[0]
            elif len(self.program.agents) == 1:
                agent = self.program.agents[0]
            else:
                raise ExecutionError(
                    "main agent is required when a program contains multiple agents"
                )
        function_name = self.options.function_name
        if function_name is not None:
            function = agent.function(function_name)
            if function is None:
                raise ExecutionError(f"Unknown function '{function_name}'")
        else:
            main = agent.main_function()
            if main is None:
                raise ExecutionError(f"Agent '{agent.name}' has no main func")
            function = main
        return agent, function

    def _shared_bindings(self) -> dict[str, Any]:
        """Imports and agent names, visible in every function's root scope."""
        shared: dict[str, Any] = {}
        for agent in self.program.agents:
            shared[agent.name] = AgentBinding(agent.name)
        for decl in self.program.imports:
            kind = decl.resource_kind
            if kind == "tool":
                shared[decl.name] = ToolBinding(decl.name, decl.uri)
            elif kind == "llm":
                shared[decl.name] = LlmBinding(decl.name, decl.uri)
            elif kind == "memory":
                shared[decl.name] = MemoryBinding(decl.name, decl.uri)
            elif kind == "file":
                shared[decl.name] = load_file_import(
                    decl, self.program.source_path, self.options.file_imports
                )
            elif kind == "agent":
                shared[decl.name] = AgentBinding(decl.name)
        return shared

    def _fixed_for(self, agent: ast.AgentDecl) -> dict[str, Any]:
        fixed = self._agent_fixed.get(agent.name)
        if fixed is None:
            fixed = dict(self._shared)
            for func in agent.functions:
                fixed[func.name] = FunctionBinding(agent.name, func.name)
            self._agent_fixed[agent.name] = fixed
        return fixed

    # ------------------------------------------------------------------ calls

    @property
    def depth(self) -> int:
        return getattr(self._local, "depth", 0)

    def call_function(
        self, agent: ast.AgentDecl, function: ast.FuncDecl, args: list[Any], where: SourceRange
    ) -> Any:
        path = agent.source_path or self.program.source_path
        if len(args) != len(function.params):
            raise ExecutionError(
                f"Function '{agent.name}.{function.name}' expects {len(function.params)} "
                f"argument(s), got {len(args)}",
                where.start,
                path,
            )
        depth = self.depth
        if depth >= self.options.max_call_depth:
            raise ExecutionError(
                f"Maximum call depth of {self.options.max_call_depth} exceeded", where.start, path
            )
        self.options.meter.check_time()
        self._local.depth = depth + 1
        try:
            scope = Scope(fixed=self._fixed_for(agent), frame=CallFrame(agent, function, path))
            for config in agent.config:
                self.apply_config(config.key, config.value, scope, config.range)
            for use in agent.uses or ():
                # Agent-level context is declared afresh in every call, for every function.
                self._statement_rules[type(use)](use, scope)
            for param, arg in zip(function.params, args, strict=True):
                scope.locals[param.name] = arg
            return self.run_body(function.body, scope)
        finally:
            self._local.depth = depth

    def run_body(self, body: list[ast.Stmt], scope: Scope) -> Any:
        """A function body: a `return` value, else the final expression statement's value."""
        last = len(body) - 1
        rules = self._statement_rules
        for index, stmt in enumerate(body):
            if index == last and type(stmt) is ast.ExprStmt:
                return self.evaluate(stmt.expr, scope)
            outcome = rules[type(stmt)](stmt, scope)
            if outcome is not None:
                return outcome.value
        return None

    def call_agent(
        self,
        agent_name: str,
        function_name: str | None,
        args: list[Any],
        where: SourceRange,
        scope: Scope,
    ) -> Any:
        """`Agent(args)` or `Agent.fn(args)`: a nested call with its own `agent` trace event."""
        agent = self.agents.get(agent_name)
        if agent is None:
            raise self.error(f"Unknown agent '{agent_name}'", where, scope)
        if function_name is None:
            function = agent.main_function()
            if function is None:
                raise self.error(f"Agent '{agent_name}' has no main func", where, scope)
        else:
            found = agent.function(function_name)
            if found is None:
                raise self.error(f"Unknown function '{agent_name}.{function_name}'", where, scope)
            function = found
        call = self.tracer.enter_agent(agent.name, function.name, sanitize(args))
        try:
            result = self.call_function(agent, function, args, where)
        except AgentScriptError as error:
            self.tracer.exit_agent(call, error=str(error))
            raise
        self.tracer.exit_agent(call, result=sanitize(result))
        return result

    def apply_config(self, key: str, expr: ast.Expr, scope: Scope, where: SourceRange) -> None:
        value = self.evaluate(expr, scope)
        if key == "model":
            if not isinstance(value, LlmBinding):
                raise self.error("model must reference an imported llm", where, scope)
        elif not isinstance(value, str):
            raise self.error(f"{key} must be a string", where, scope)
        scope.config[key] = value

    # ------------------------------------------------------------------ statements

    def _statement_table(self) -> dict[type, Callable[[Any, Scope], _Return | None]]:
        return {
            ast.ExprStmt: self.exec_expr_stmt,
            ast.AssignStmt: self.exec_assign,
            ast.UseStmt: self.exec_use,
            ast.ReturnStmt: self.exec_return,
            ast.IfStmt: self.exec_if,
            ast.ForInStmt: self.exec_for,
            ast.LoopUntilStmt: self.exec_loop,
            ast.RepeatStmt: self.exec_repeat,
            ast.ConfigStmt: self.exec_config,
            ast.UseOneOfStmt: self.exec_use_one_of,
        }

    def exec_block(self, body: list[ast.Stmt], scope: Scope) -> _Return | None:
        rules = self._statement_rules
        for stmt in body:
            outcome = rules[type(stmt)](stmt, scope)
            if outcome is not None:
                return outcome
        return None

    def exec_expr_stmt(self, stmt: ast.ExprStmt, scope: Scope) -> None:
        self.evaluate(stmt.expr, scope)

    def exec_assign(self, stmt: ast.AssignStmt, scope: Scope) -> None:
        target = stmt.target
        value = self.evaluate(stmt.value, scope)
        if stmt.operator is not None:
            current = self.evaluate(target, scope)
            value = self.binary(stmt.operator[0], current, value, stmt.range, scope)
        if isinstance(target, ast.IdentifierExpr):
            scope.assign(target.name, value)
            return
        assert isinstance(target, ast.MemberExpr)
        owner = self.evaluate(target.object, scope)
        if isinstance(owner, list):
            raise self.error("Cannot assign a property on a list value", target.range, scope)
        if not isinstance(owner, dict):
            raise self.error("Cannot assign a property on a non-object value", target.range, scope)
        owner[target.property] = value

    def exec_use(self, stmt: ast.UseStmt, scope: Scope) -> None:
        self.declare_use(stmt, scope)

    def declare_use(
        self, stmt: ast.UseStmt, scope: Scope, variant: dict[str, Any] | None = None
    ) -> None:
        source = format_expr(stmt.value)
        scope.uses.append(UseDeclaration(stmt, source, scope))
        self.trace_use(source, stmt.budget, stmt.label, variant)

    def trace_use(
        self,
        source: str | None,
        budget: ast.Budget | None,
        label: str | None,
        variant: dict[str, Any] | None = None,
    ) -> None:
        data: dict[str, Any] = {
            "source": source,
            # The 0.1.0 use event always names the unit, null when there is none.
            "budget": {"amount": budget.to_json()["amount"], "unit": budget.unit}
            if budget
            else None,
        }
        if label is not None:
            data["label"] = label
        if variant is not None:
            data["variant"] = variant
        self.tracer.emit("use", data)

    def exec_use_one_of(self, stmt: ast.UseOneOfStmt, scope: Scope) -> None:
        """Pick one candidate for this site: the run's hint, else `selected`, else the first.
        Only the pick (under the label) can reach the prompt; `empty` adds nothing."""
        site = self.site_id(stmt, scope)
        names = [candidate.name for candidate in stmt.candidates]
        hint = self.options.variants.get(site)
        if hint is not None:
            if hint not in names:
                raise self.error(
                    f"Unknown variant '{hint}' for use one of site '{site}' "
                    f"(candidates: {', '.join(names)})",
                    stmt.range,
                    scope,
                )
            picked, reason = stmt.candidates[names.index(hint)], "trial"
        else:
            chosen = [candidate for candidate in stmt.candidates if candidate.selected]
            picked, reason = (chosen[0], "selected") if chosen else (stmt.candidates[0], "first")
        variant = {
            "site_id": site,
            "picked": picked.name,
            "available": names,
            "reason": reason,
            "empty": picked.value is None,
        }
        if picked.value is None:
            self.trace_use(None, None, stmt.label, variant)
            return
        use = ast.UseStmt(
            range=picked.range, value=picked.value, budget=picked.budget, label=stmt.label
        )
        self.declare_use(use, scope, variant)

    def site_id(self, stmt: ast.UseOneOfStmt, scope: Scope) -> str:
        frame = scope.frame
        assert frame is not None
        agent_level = any(use is stmt for use in frame.agent.uses or ())
        function = None if agent_level else frame.function.name
        return use_site_id(self.program.source_path, frame.agent, function, stmt.label)

    def exec_return(self, stmt: ast.ReturnStmt, scope: Scope) -> _Return:
        return _Return(self.evaluate(stmt.value, scope))

    def exec_if(self, stmt: ast.IfStmt, scope: Scope) -> _Return | None:
        if truthy(self.evaluate(stmt.condition, scope)):
            return self.exec_block(stmt.then_body, Scope(scope))
        if stmt.else_body is not None:
            return self.exec_block(stmt.else_body, Scope(scope))
        return None

    def exec_for(self, stmt: ast.ForInStmt, scope: Scope) -> _Return | None:
        items = self.evaluate(stmt.iterable, scope)
        if not isinstance(items, list):
            raise self.error("for loop requires a list value", stmt.iterable.range, scope)
        # The count is fixed when the loop starts: items added by the body are not visited.
        meter = self.options.meter
        site = _loop_site(stmt)
        with self._loop_rounds(site) as rounds:
            for index in range(min(stmt.max_iterations, len(items))):
                meter.check_time()
                item = items[index]
                rounds.append(index)
                self.tracer.emit(
                    "for",
                    {"item": stmt.item_name, "index": index, "value": sanitize(item), "loop": site},
                )
                body_scope = Scope(scope)
                body_scope.locals[stmt.item_name] = item
                outcome = self.exec_block(stmt.body, body_scope)
                if outcome is not None:
                    return outcome
        return None

    def exec_loop(self, stmt: ast.LoopUntilStmt, scope: Scope) -> _Return | None:
        site = _loop_site(stmt)
        statement = f"loop until {format_expr(stmt.condition)}"
        ending: dict[str, Any] = {}
        with self._loop_rounds(site, ending) as rounds:
            for index in range(stmt.max_iterations):
                self.options.meter.check_time()
                if truthy(self.evaluate(stmt.condition, scope)):
                    return None
                self._begin_round(site, statement, index, stmt.max_iterations, rounds)
                outcome = self.exec_block(stmt.body, Scope(scope))
                if outcome is not None:
                    return outcome
            # Every round ran with the condition false before it. As in 0.1.0 the run goes on
            # (the condition is not evaluated again), but the trace says the bound stopped it.
            ending["bound_reached"] = True
            ending["limit"] = stmt.max_iterations
        return None

    def exec_repeat(self, stmt: ast.RepeatStmt, scope: Scope) -> _Return | None:
        site = _loop_site(stmt)
        with self._loop_rounds(site) as rounds:
            for index in range(stmt.max_attempts):
                self.options.meter.check_time()
                self._begin_round(site, "repeat", index, stmt.max_attempts, rounds)
                outcome = self.exec_block(stmt.body, Scope(scope))
                if outcome is not None:
                    return outcome
        return None

    def _begin_round(
        self, site: str, statement: str, index: int, limit: int, rounds: list[int]
    ) -> None:
        """A `loop` event opens each round of `loop until` and `repeat`, as `for` does."""
        rounds.append(index)
        self.tracer.emit(
            "loop", {"loop": site, "statement": statement, "index": index, "limit": limit}
        )

    @contextmanager
    def _loop_rounds(self, site: str, ending: dict[str, Any] | None = None) -> Iterator[list[int]]:
        """Close a loop that ran at least one round with a `loop_end` event (also when it
        returns or fails), so renderers can nest each round's events under it; `ending` is
        what the loop adds to it (a `loop until` that reached its bound says so)."""
        rounds: list[int] = []
        started = time.monotonic()
        try:
            yield rounds
        finally:
            if rounds:
                self.tracer.emit(
                    "loop_end",
                    {
                        "loop": site,
                        "rounds": len(rounds),
                        **(ending or {}),
                        "duration_ms": elapsed_ms(started),
                    },
                )

    def exec_config(self, stmt: ast.ConfigStmt, scope: Scope) -> None:
        self.apply_config(stmt.key, stmt.value, scope, stmt.range)

    # ------------------------------------------------------------------ expressions

    def _expression_table(self) -> dict[type, Callable[[Any, Scope], Any]]:
        return {
            ast.IdentifierExpr: self.eval_identifier,
            ast.StringExpr: lambda expr, scope: expr.value,
            ast.NumberExpr: lambda expr, scope: expr.value,
            ast.BooleanExpr: lambda expr, scope: expr.value,
            ast.NullExpr: lambda expr, scope: None,
            ast.ListExpr: lambda expr, scope: [self.evaluate(item, scope) for item in expr.items],
            ast.ObjectExpr: lambda expr, scope: {
                prop.key: self.evaluate(prop.value, scope) for prop in expr.properties
            },
            ast.MemberExpr: self.eval_member,
            ast.IndexExpr: self.eval_index,
            ast.CallExpr: self.eval_call,
            ast.UnaryExpr: self.eval_unary,
            ast.BinaryExpr: self.eval_binary,
            ast.GenerateExpr: self.eval_generate,
            ast.ParallelForExpr: self.eval_parallel_for,
        }

    def evaluate(self, expr: ast.Expr, scope: Scope) -> Any:
        return self._expression_rules[type(expr)](expr, scope)

    def error(self, message: str, where: SourceRange | None, scope: Scope) -> ExecutionError:
        path = scope.frame.path if scope.frame is not None else self.program.source_path
        return ExecutionError(message, where.start if where is not None else None, path)

    def eval_identifier(self, expr: ast.IdentifierExpr, scope: Scope) -> Any:
        value = scope.lookup(expr.name)
        if value is MISSING:
            raise self.error(f"Unknown variable '{expr.name}'", expr.range, scope)
        return value

    def eval_member(self, expr: ast.MemberExpr, scope: Scope) -> Any:
        owner = self.evaluate(expr.object, scope)
        name = expr.property
        where = expr.range
        if isinstance(owner, list):
            if name == "length":
                return len(owner)
            if name == "summary":
                return sanitize(owner)
            raise self.error(f"Unknown list property '{name}'", where, scope)
        if isinstance(owner, dict):
            if name in owner:
                return owner[name]
            raise self.error(f"Unknown object property '{name}'", where, scope)
        if isinstance(owner, str) and name == "length":
            return utf16_length(owner)
        if isinstance(owner, ToolBinding):
            if _scheme(owner.uri) in _MODULE_SCHEMES:  # the original reads a module's export
                return self.call_tool(owner, name, [], where, scope, property_read=True)
            return {"tool": owner.name, "method": name}
        if isinstance(owner, MemoryBinding):
            return {"memory": owner.name, "method": name}
        raise self.error(f"Cannot read property '{name}'", where, scope)

    def eval_index(self, expr: ast.IndexExpr, scope: Scope) -> Any:
        owner = self.evaluate(expr.object, scope)
        index = self.evaluate(expr.index, scope)
        where = expr.range
        if not isinstance(owner, list):
            raise self.error("Index access requires a list value", where, scope)
        if (
            isinstance(index, bool)
            or not isinstance(index, int | float)
            or index < 0
            or (isinstance(index, float) and not index.is_integer())
        ):
            raise self.error("List index must be a non-negative integer", where, scope)
        position = int(index)
        if position >= len(owner):
            raise self.error(f"List index {position} is out of range", where, scope)
        return owner[position]

    def eval_unary(self, expr: ast.UnaryExpr, scope: Scope) -> Any:
        value = self.evaluate(expr.value, scope)
        if expr.operator == "not":
            return not truthy(value)
        try:
            return negate(value)
        except ValueError as problem:
            raise self.error(str(problem), expr.range, scope) from None

    def eval_binary(self, expr: ast.BinaryExpr, scope: Scope) -> Any:
        operator = expr.operator
        if operator == "and":
            return truthy(self.evaluate(expr.left, scope)) and truthy(
                self.evaluate(expr.right, scope)
            )
        if operator == "or":
            return truthy(self.evaluate(expr.left, scope)) or truthy(
                self.evaluate(expr.right, scope)
            )
        left = self.evaluate(expr.left, scope)
        right = self.evaluate(expr.right, scope)
        return self.binary(operator, left, right, expr.range, scope)

    def binary(self, operator: str, left: Any, right: Any, where: SourceRange, scope: Scope) -> Any:
        try:
            return BINARY[operator](left, right)
        except ValueError as problem:
            raise self.error(str(problem), where, scope) from None

    # ------------------------------------------------------------------ call expressions

    def eval_call(self, expr: ast.CallExpr, scope: Scope) -> Any:
        callee = expr.callee
        where = expr.range
        if isinstance(callee, ast.IdentifierExpr):
            args = [self.evaluate(arg, scope) for arg in expr.args]
            target = scope.lookup(callee.name)
            return self.call_value(target, callee.name, args, where, scope)
        if isinstance(callee, ast.MemberExpr):
            receiver = self.evaluate(callee.object, scope)
            args = [self.evaluate(arg, scope) for arg in expr.args]
            return self.call_member(receiver, callee.property, args, where, scope)
        raise self.error("Unsupported call expression", where, scope)

    def call_value(
        self, target: Any, name: str, args: list[Any], where: SourceRange, scope: Scope
    ) -> Any:
        if isinstance(target, FunctionBinding):
            agent = self.agents.get(target.agent_name)
            function = agent.function(target.name) if agent is not None else None
            if agent is None or function is None:
                raise self.error(
                    f"Unknown function '{target.agent_name}.{target.name}'", where, scope
                )
            return self.call_function(agent, function, args, where)
        if isinstance(target, AgentBinding):
            return self.call_agent(target.name, None, args, where, scope)
        if target is MISSING:
            raise self.error(f"Unknown function '{name}'", where, scope)
        raise self.error(f"'{name}' is not callable", where, scope)

    def call_member(
        self, receiver: Any, method: str, args: list[Any], where: SourceRange, scope: Scope
    ) -> Any:
        if isinstance(receiver, AgentBinding):
            return self.call_agent(receiver.name, method, args, where, scope)
        if isinstance(receiver, ToolBinding):
            return self.call_tool(receiver, method, args, where, scope)
        if isinstance(receiver, MemoryBinding):
            return self.call_memory(receiver, method, args, where, scope)
        if isinstance(receiver, list) and method == "add":
            if len(args) != 1:
                raise self.error("list.add expects exactly one argument", where, scope)
            receiver.append(args[0])
            return receiver
        raise self.error(f"Unsupported member call '{method}'", where, scope)

    def call_tool(
        self,
        tool: ToolBinding,
        method: str,
        args: list[Any],
        where: SourceRange,
        scope: Scope,
        property_read: bool = False,
    ) -> Any:
        provider = self.options.tools
        shown_uri = scrub_uri(tool.uri)
        label = f"Tool {tool.name}.{method} ({shown_uri}) failed: "
        if provider is None:
            raise self.error(label + "no tool provider is configured", where, scope)
        meter = self.options.meter
        meter.check_time()
        self.tracer.step_started("tool", {"tool": tool.name, "method": method, "uri": shown_uri})
        request = ToolCall(
            tool.name,
            tool.uri,
            method,
            args,
            on_event=self.tracer.emit,
            on_secret=self.tracer.redact,
            deadline=meter.call_deadline(self._stopped),
            property_read=property_read,
        )
        event: dict[str, Any] = {
            "tool": tool.name,
            "method": method,
            "scheme": _scheme(tool.uri),
            "uri": shown_uri,
            "args": sanitize(args),
        }
        started = time.monotonic()
        try:
            result = provider.call(request)
        except (BudgetExceeded, Interrupted) as problem:
            # The run's limit, not the tool's failure: reported as such, at the call.
            self._failed_call(event, request, started, problem.bare_message)
            raise problem.at(where.start, scope.frame.path if scope.frame else None) from None
        except ExecutionError as problem:
            self._failed_call(event, request, started, problem.bare_message)
            raise self.error(label + problem.bare_message, where, scope) from problem
        except Exception as problem:  # a provider bug or an OS error must not become a traceback
            self._failed_call(event, request, started, _describe(problem))
            raise self.error(label + _describe(problem), where, scope) from problem
        effects = result.get("effects") if isinstance(result, dict) else None
        event.update(
            result=sanitize(result),
            effects=sanitize(effects) if isinstance(effects, list) else None,
            duration_ms=_tool_ms(started),
        )
        self.tracer.emit("tool", event, {"risk": request.risk})
        return result

    def _failed_call(
        self, event: dict[str, Any], request: ToolCall, started: float, error: str
    ) -> None:
        """A call that raised is a step of the run like any other: the journal keeps it, with
        its error, risk and latency, before the run fails (the returned trace, as the
        original's, has only the calls that returned)."""
        event.update(risk=request.risk, duration_ms=_tool_ms(started), error=error)
        self.tracer.emit_audit("tool", event)

    def call_memory(
        self, memory: MemoryBinding, method: str, args: list[Any], where: SourceRange, scope: Scope
    ) -> Any:
        if method not in ("add", "query"):
            raise self.error(f"Unknown memory method '{memory.name}.{method}'", where, scope)
        if len(args) != 1:
            raise self.error(f"memory.{method} expects exactly one argument", where, scope)
        provider = self.options.memory
        shown_uri = scrub_uri(memory.uri)
        label = f"Memory {memory.name}.{method} ({shown_uri}) failed: "
        if provider is None:
            raise self.error(label + "no memory provider is configured", where, scope)
        # A memory outlives the run and its redaction set: what it keeps is scrubbed first.
        argument = self.options.secrets.scrub(args[0]) if method == "add" else args[0]
        request = MemoryRequest(memory.name, memory.uri, method, argument)
        started = time.monotonic()
        try:
            result = provider.add(request) if method == "add" else provider.query(request)
        except ExecutionError as problem:
            raise problem.at(where.start, scope.frame.path if scope.frame else None) from None
        except Exception as problem:
            raise self.error(label + _describe(problem), where, scope) from problem
        data: dict[str, Any] = {
            "memory": memory.name,
            "operation": method,
            "uri": shown_uri,
            "args": sanitize(args[0]),
            "result": sanitize(result),
            "count": len(result) if isinstance(result, list) else None,
            "duration_ms": round((time.monotonic() - started) * 1000, 3),
        }
        if method == "add" and isinstance(result, dict):
            data["id"] = result.get("id")
            data["record"] = sanitize(result.get("record"))
        self.tracer.emit("memory", data)
        return result

    # ------------------------------------------------------------------ parallel for

    def eval_parallel_for(self, expr: ast.ParallelForExpr, scope: Scope) -> list[Any]:
        """Run the iterations on a bounded worker pool, wait for all of them, and return their
        final values in input order; any failure fails the whole expression, listing each."""
        items = self.evaluate(expr.iterable, scope)
        if not isinstance(items, list):
            raise self.error("parallel for source must be a list", expr.iterable.range, scope)
        body = expr.body
        if not body or type(body[-1]) is not ast.ExprStmt:
            raise self.error(
                "parallel for body must end with a value expression", expr.range, scope
            )
        chosen = items[: expr.max_items]
        point = self.tracer.branch_point()
        depth = self.depth
        concurrency = max(1, self.options.concurrency)

        def iteration(index: int) -> tuple[Any, str | None, list[TraceEvent]]:
            self._local.depth = depth
            with self.tracer.branch(point) as events:
                iteration_scope = Scope(scope)
                iteration_scope.locals[expr.item_name] = chosen[index]
                try:
                    return self.run_iteration(body, iteration_scope), None, events
                except AgentScriptError as error:
                    return None, str(error), events
                except RecursionError:
                    return None, "Values or calls are nested too deeply to evaluate", events

        started = time.monotonic()
        if len(chosen) <= 1 or concurrency == 1:
            outcomes = [iteration(index) for index in range(len(chosen))]
        else:
            pool = ThreadPoolExecutor(max_workers=min(concurrency, len(chosen)))
            try:
                outcomes = list(pool.map(iteration, range(len(chosen))))
            except BaseException:
                # Ctrl-C: tool calls still running in the other iterations see the stop and
                # end; iterations not started yet never start.
                self._stopped.set()
                raise
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
        records: list[dict[str, Any]] = []
        for index, (value, error, events) in enumerate(outcomes):
            record: dict[str, Any] = {
                "index": index,
                "input": sanitize(chosen[index]),
                "ok": error is None,
                "trace": [event_json(event) for event in events],
            }
            if error is None:
                record["result"] = sanitize(value)
            else:
                record["error"] = error
            records.append(record)
        failures = [(index, error) for index, (_, error, _) in enumerate(outcomes) if error]
        self.tracer.emit(
            "parallel_for",
            {
                "item": expr.item_name,
                "source": format_expr(expr.iterable),
                "max_items": expr.max_items,
                "items": len(chosen),
                "concurrency": concurrency,
                "duration_ms": round((time.monotonic() - started) * 1000),
                "ok": not failures,
                "iterations": records,
            },
        )
        if failures:
            summary = "; ".join(f"[{index}] {error}" for index, error in failures)
            raise self.error(f"parallel for failed: {summary}", expr.range, scope)
        return [value for value, _, _ in outcomes]

    def run_iteration(self, body: list[ast.Stmt], scope: Scope) -> Any:
        """One iteration: the statements, then the final expression's value. A `return` has no
        function to return from here, so it is an error."""
        rules = self._statement_rules
        for stmt in body[:-1]:
            if rules[type(stmt)](stmt, scope) is not None:
                raise self.error("return is not allowed inside parallel for", stmt.range, scope)
        last = body[-1]
        assert isinstance(last, ast.ExprStmt)
        return self.evaluate(last.expr, scope)

    # ------------------------------------------------------------------ generate

    def eval_generate(self, expr: ast.GenerateExpr, scope: Scope) -> Any:
        options = expr.options
        frame = scope.frame
        assert frame is not None
        instruction = self.evaluate(options.input, scope) if options.input is not None else None
        model = scope.config_value("model")
        layout = prompt_layout_of(self.options.llm, model if model is not MISSING else None)
        items = []
        for index, use in enumerate(scope.visible_uses()):
            statement = use.statement
            value = self.evaluate(statement.value, use.scope)
            items.append(
                make_context_item(
                    index, use.source, value, statement.budget, statement.label, layout
                )
            )
        if model is MISSING:
            raise self.error("generate requires model in the current scope", expr.range, scope)
        identity: dict[str, str] = {}
        for key in ("role", "description"):
            value = scope.config_value(key)
            if not isinstance(value, str):
                raise self.error(f"generate requires {key} in the current scope", expr.range, scope)
            identity[key] = value
        call = GenerateCall(
            expr=expr,
            path=frame.path,
            agent_name=frame.agent.name,
            function_name=frame.function.name,
            model=model,
            identity=identity,
            items=items,
            instruction=instruction,
            settings=GenerateSettings.from_options(options, self.options.extra_fields_allowed),
            layout=layout,
        )
        return run_generate(
            call,
            self.options.llm,
            self.tracer,
            self.options.debug_stream,
            self.options.meter,
            stream=self.options.stream,
        )


def _loop_site(stmt: ast.Node) -> str:
    """`line:column` of a loop statement, pairing its round events with its `loop_end`."""
    start = stmt.range.start
    return f"{start.line}:{start.column}"


def _scheme(uri: str) -> str:
    matched = _SCHEME.match(uri)
    return matched.group(1).lower() if matched else ""


def _tool_ms(started: float) -> float:
    """A tool event's `duration_ms`: milliseconds since `started`, to the microsecond."""
    return round((time.monotonic() - started) * 1000, 3)


def _describe(problem: Exception) -> str:
    if isinstance(problem, OSError) and problem.strerror:
        where = f": {os.fsdecode(problem.filename)}" if problem.filename else ""
        return f"{problem.strerror}{where}"
    return str(problem) or type(problem).__name__


def use_site_id(
    entry_path: str | None, agent: ast.AgentDecl, function: str | None, label: str
) -> str:
    """`<file>#<Agent>.<func>[<label>]`, the id `--variant` names a `use one of` site by; the
    function part is left out for agent-level sites; the file is relative to the entry
    program's directory."""
    own = agent.source_path or entry_path
    if own is None:
        file = "<source>"
    elif entry_path is None:
        file = os.path.basename(own)
    else:
        file = os.path.relpath(own, os.path.dirname(entry_path)).replace(os.sep, "/")
    where = agent.name if function is None else f"{agent.name}.{function}"
    return f"{file}#{where}[{label}]"

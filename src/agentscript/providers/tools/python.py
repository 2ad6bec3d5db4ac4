"""Python tools: `import tool Text from "python:mypkg.text"`, then `Text.slugify("Hello")`.

A module is imported only when the workspace allows it (python_allow.py) and only on first
call; importing runs its top-level code, which the allow-list vouches for. Its public functions
(`__all__`, else the functions it defines whose names do not start with `_`) are the methods.
Arguments are positional, or keywords when the only argument is an object whose keys all name
parameters. They are validated against the type hints before the call, and the result against
the return hint; values cross as JSON-safe data (Pydantic models and dataclasses are dumped).

A call is bounded by the run's deadline (and DEFAULT_TIMEOUT_SECONDS): a sync function runs in a
daemon thread that is abandoned when time runs out (Python cannot stop a thread), an async one
runs on its own event loop in that thread and is cancelled.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib
import inspect
import sys
import threading
import time
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentscript.providers.tools.base import Risk
from agentscript.providers.tools.python_allow import AllowList
from agentscript.providers.tools.python_marks import marked_risk
from agentscript.runtime.budgets import CallDeadline
from agentscript.runtime.errors import ExecutionError
from agentscript.runtime.ports import ToolCall

DEFAULT_TIMEOUT_SECONDS = 120.0
# How often a waiting call looks for Ctrl-C.
_POLL_SECONDS = 0.1
_IMPORT_LOCK = threading.Lock()


def public_functions(module: Any) -> dict[str, Callable[..., Any]]:
    """The functions a module exposes as tool methods, by name."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and inspect.isfunction(value)
            and value.__module__ == module.__name__
        ]
    found: dict[str, Callable[..., Any]] = {}
    for name in names:
        value = getattr(module, name, None)
        if inspect.isfunction(value):
            found[name] = value
    return found


def import_module_from(name: str, workspace: Path) -> Any:
    """Import `name` from the environment, with the workspace folder searched last (so a
    workspace's own package is found, and never shadows an installed one)."""
    root = str(workspace)
    with _IMPORT_LOCK:
        added = root not in sys.path
        if added:
            sys.path.append(root)
        try:
            return importlib.import_module(name)
        except ImportError as problem:
            raise ExecutionError(f"Cannot import Python module '{name}': {problem}") from None
        except Exception as problem:  # the module's own code failed
            raise ExecutionError(
                f"Importing Python module '{name}' failed: {type(problem).__name__}: {problem}"
            ) from None
        finally:
            if added and root in sys.path:
                sys.path.remove(root)


class PythonTools:
    """The `python` scheme over the modules the workspace at `workspace` allows (`allow`,
    else its allow-list as it is read now)."""

    def __init__(
        self,
        workspace: Path,
        allow: AllowList | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self._workspace = workspace
        # Read once: a pyproject.toml the run itself writes must not widen what it may import.
        self._allow = allow if allow is not None else AllowList.read(workspace)
        self._timeout = timeout_seconds
        self._modules: dict[str, dict[str, Callable[..., Any]]] = {}
        self._lock = threading.Lock()

    def functions(self, uri: str) -> dict[str, Callable[..., Any]]:
        """The module's tool functions; ExecutionError when it is not allowed or not found."""
        name = self._allow.check(uri)
        with self._lock:
            functions = self._modules.get(name)
            if functions is None:
                functions = public_functions(import_module_from(name, self._workspace))
                self._modules[name] = functions
            return functions

    def function(self, request: ToolCall) -> Callable[..., Any]:
        functions = self.functions(request.uri)
        function = functions.get(request.method)
        if function is None:
            known = ", ".join(sorted(functions)) or "none"
            raise ExecutionError(
                f"Unknown Python tool function '{request.label}'. Available: {known}"
            )
        return function

    def describe(self, uri: str) -> list[dict[str, Any]]:
        """Each tool function of the module (imported): name, signature, docstring and risk,
        for `agentscript tools`, the language server and the trace."""
        return [
            {
                "name": name,
                "signature": signature_text(function),
                "description": inspect.getdoc(function) or "",
                "risk": marked_risk(function),
            }
            for name, function in sorted(self.functions(uri).items())
        ]

    def risk(self, request: ToolCall) -> Risk:
        risk = marked_risk(self.function(request))
        return "read" if risk == "read" else "destructive" if risk == "destructive" else "effect"

    def call(self, request: ToolCall) -> Any:
        function = self.function(request)
        signature, hints = _introspect(function)
        bound = bind_arguments(request, signature)
        for name, value in bound.arguments.items():
            if name in hints:
                bound.arguments[name] = validate(hints[name], value, request.label, name)
        result = run_bounded(lambda: function(*bound.args, **bound.kwargs), request, self._timeout)
        if "return" in hints:
            result = validate(hints["return"], result, request.label, None)
        return to_json(result, request.label)


def signature_text(function: Callable[..., Any]) -> str:
    """`(text: str, limit: int = 3) -> str`, with string annotations resolved when they can be."""
    try:
        signature = inspect.signature(function, eval_str=True)
    except Exception:  # an annotation naming something undefined: show it as written
        signature = inspect.signature(function)
    return str(signature).replace("typing.", "")


@functools.lru_cache(maxsize=1024)
def _introspect(function: Callable[..., Any]) -> tuple[inspect.Signature, dict[str, Any]]:
    """The function's signature and resolved type hints, read once per function."""
    return inspect.signature(function), _type_hints(function)


def _type_hints(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function)
    except Exception:  # a hint naming something undefined: treat the function as unannotated
        return {}


def bind_arguments(request: ToolCall, signature: inspect.Signature) -> inspect.BoundArguments:
    """Positional arguments, or keywords when the only argument is an object whose keys all
    name parameters; an error lists the parameters when they do not fit."""
    args = request.args
    try:
        if (
            len(args) == 1
            and isinstance(args[0], dict)
            and args[0]
            and all(key in signature.parameters for key in args[0])
        ):
            return signature.bind(**args[0])
        return signature.bind(*args)
    except TypeError as problem:
        raise ExecutionError(f"{request.label}{signature}: {problem}") from None


def validate(hint: Any, value: Any, label: str, parameter: str | None) -> Any:
    """`value` checked (and converted, e.g. an object into a Pydantic model) against `hint`."""
    from pydantic import ValidationError

    try:
        return _adapter(hint).validate_python(value)
    except ValidationError as problem:
        first = problem.errors()[0]
        where = "".join(f"[{part!r}]" for part in first.get("loc", ()))
        subject = f"parameter '{parameter}'" if parameter else "the return value"
        raise ExecutionError(
            f"{label}: {subject}{where} expects {_type_name(hint)}, got "
            f"{_show(value)} ({type(value).__name__}): {first.get('msg', '')}"
        ) from None


def _adapter(hint: Any) -> Any:
    """A Pydantic TypeAdapter for `hint`, built once per hint (building one costs far more than
    validating with it)."""
    from pydantic import TypeAdapter

    try:
        return _cached_adapter(hint)
    except TypeError:  # an unhashable hint: build it each time
        return TypeAdapter(hint)


@functools.lru_cache(maxsize=256)
def _cached_adapter(hint: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(hint)


def _type_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def to_json(value: Any, label: str) -> Any:
    """`value` as JSON-safe data; Pydantic models and dataclasses become objects."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise ExecutionError(f"{label} returned an object with a non-string key")
        return {key: to_json(item, label) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item, label) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_json(dataclasses.asdict(value), label)
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # a Pydantic model
        return to_json(dump(mode="json"), label)
    raise ExecutionError(
        f"{label} returned a value of type {type(value).__name__}, which cannot cross as JSON "
        "(return str, numbers, booleans, None, lists, dicts, dataclasses or Pydantic models)"
    )


def run_bounded(call: Callable[[], Any], request: ToolCall, timeout: float) -> Any:
    """Run `call` (awaiting its result when it is a coroutine) in a daemon thread, waiting no
    longer than the run's deadline and `timeout`; the function's own exception becomes an
    ExecutionError with its message."""
    deadline: CallDeadline = request.deadline
    outcome: dict[str, Any] = {}
    done = threading.Event()
    loop_box: dict[str, Any] = {}

    def work() -> None:
        try:
            result = call()
            if inspect.isawaitable(result):
                result = _await(result, loop_box)
            outcome["value"] = result
        except BaseException as problem:  # reported to the caller below
            outcome["error"] = problem
        finally:
            done.set()

    ends = time.monotonic() + timeout

    def seconds_left() -> float:
        return max(0.0, min(deadline.seconds_left(timeout), ends - time.monotonic()))

    threading.Thread(target=work, name=f"python-tool {request.label}", daemon=True).start()
    while not done.wait(min(_POLL_SECONDS, seconds_left())):
        if deadline.stopped.is_set() or seconds_left() <= 0:
            _cancel(loop_box)
            deadline.check()  # Interrupted, or the run's time is up
            raise ExecutionError(f"{request.label} did not finish within {timeout:g} seconds")
    if "error" in outcome:
        problem = outcome["error"]
        if isinstance(problem, asyncio.CancelledError):
            deadline.check()
        raise ExecutionError(
            f"{request.label} raised {type(problem).__name__}: {problem}"
        ) from None
    return outcome.get("value")


def _await(awaitable: Any, loop_box: dict[str, Any]) -> Any:
    async def main() -> Any:
        loop_box["task"] = asyncio.current_task()
        loop_box["loop"] = asyncio.get_running_loop()
        return await awaitable

    return asyncio.run(main())


def _cancel(loop_box: dict[str, Any]) -> None:
    """Cancel a running async tool function (a sync one cannot be stopped; it is abandoned)."""
    loop, task = loop_box.get("loop"), loop_box.get("task")
    if loop is not None and task is not None:
        loop.call_soon_threadsafe(task.cancel)

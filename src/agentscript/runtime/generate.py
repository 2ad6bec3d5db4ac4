"""One `generate`: build the prompt, ask the model, coerce and validate, repair within attempts.

Only two failures are repaired by asking again: an answer that is not JSON, and an answer that
does not match the shape. Anything else (network, auth, timeouts, budgets) fails at once. The
repair always rewrites the *original* instruction, so repairs never accumulate (reference §3.7).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from agentscript.lang import ast
from agentscript.runtime.budgets import RunMeter
from agentscript.runtime.context import (
    BuiltContext,
    ContextItem,
    PromptLayout,
    build_context,
)
from agentscript.runtime.errors import AgentScriptError, ExecutionError, ModelOutputError
from agentscript.runtime.jsjson import stringify
from agentscript.runtime.ports import GenerateRequest, LlmProvider
from agentscript.runtime.shapes import choice_values, coerce, shape_schema, validate_output
from agentscript.runtime.trace import Tracer, short
from agentscript.runtime.usage import Usage
from agentscript.runtime.values import LlmBinding, sanitize


@dataclass(slots=True)
class GenerateSettings:
    """The literal options of one generate (reference §3.7 and the 0.1.4 options)."""

    attempts: int = 1
    budget: ast.Budget | None = None
    debug: bool = False
    temperature: float | None = None
    think: bool | str | None = None
    strict: bool | None = None
    # Whether a field the shape does not declare fails the answer (else it is kept).
    reject_extra_fields: bool = True

    @classmethod
    def from_options(
        cls, options: ast.GenerateOptionsExpr, extra_fields_allowed: bool = False
    ) -> GenerateSettings:
        """The settings `options` ask for. `strict: true` always rejects undeclared fields and
        `strict: false` always keeps them; without `strict`, `extra_fields_allowed` decides:
        0.1.0 rejected them, 0.1.4 on keeps them (ExecutionOptions.extra_fields_allowed)."""
        attempts = options.attempts if options.attempts is not None else 1
        strict = options.strict
        return cls(
            attempts=int(attempts),
            budget=options.max_output if options.max_output is not None else options.limit,
            debug=bool(options.debug),
            temperature=options.temperature,
            think=options.think,
            strict=strict,
            reject_extra_fields=strict is True or (strict is None and not extra_fields_allowed),
        )

    @property
    def max_output_tokens(self) -> int | None:
        if self.budget is None:
            return None
        return max(1, self.budget.character_limit())


@dataclass(slots=True)
class GenerateCall:
    """Everything the interpreter resolved before the attempt loop starts."""

    expr: ast.GenerateExpr
    path: str | None
    agent_name: str
    function_name: str
    model: LlmBinding | None
    identity: dict[str, str]
    items: list[ContextItem]
    instruction: Any
    settings: GenerateSettings
    layout: PromptLayout = PromptLayout.ORIGINAL


def prompt_layout_of(llm: LlmProvider, model: LlmBinding | None) -> PromptLayout:
    """The layout a provider wants: one that enforces shapes natively (the HTTP providers)
    declares `prompt_layout(model)`; the mock, scripted answers, the dry run and any other
    provider get the 0.1.0 layout that programs written for the original expect."""
    choose = getattr(llm, "prompt_layout", None)
    if choose is None:
        return PromptLayout.ORIGINAL
    layout = choose(model)
    return layout if isinstance(layout, PromptLayout) else PromptLayout.ORIGINAL


@dataclass(slots=True)
class _Answered:
    """What the trace says about the model calls of one generate besides the answer: which
    model was asked, which answered and why it stopped, how long the attempts took in all.
    (Not which provider class answered: a replayed run must trace what the recorded one did.)"""

    started: float = field(default_factory=time.monotonic)
    response_model: str | None = None
    finish_reasons: list[str] = field(default_factory=list)

    def saw(self, details: dict[str, Any]) -> None:
        """One attempt's answer details (a failed attempt's too): the finish reasons are
        listed attempt by attempt, for the attempts whose provider reports one."""
        model = details.get("response_model")
        if isinstance(model, str):
            self.response_model = model
        reason = details.get("finish_reason")
        if isinstance(reason, str):
            self.finish_reasons.append(reason)

    def to_json(self, call: GenerateCall) -> dict[str, Any]:
        data: dict[str, Any] = {
            "model": call.model.uri if call.model else None,
            "duration_ms": round((time.monotonic() - self.started) * 1000, 3),
        }
        if self.response_model:
            data["response_model"] = self.response_model
        if self.finish_reasons:
            data["finish_reasons"] = self.finish_reasons
        return data


def run_generate(
    call: GenerateCall,
    llm: LlmProvider,
    tracer: Tracer,
    debug_stream: TextIO | None,
    meter: RunMeter | None = None,
    stream: bool = False,
) -> Any:
    """Run the attempt loop and return the validated value (or the text of a free-form one).

    Every attempt is metered against the run budget; a budget error is never repaired. With
    `stream`, providers that can stream pass the answer text to the trace sinks as it arrives.
    The traced event says how long the whole generate took and how many attempts it had.
    """
    settings = call.settings
    where = call.expr.range.start
    if settings.attempts < 1:
        raise ExecutionError("generate attempts must be a positive integer", where, call.path)
    shape = call.expr.return_shape
    schema = shape_schema(shape) if shape is not None else None
    instruction = call.instruction
    failures: list[str] = []
    usage = Usage()
    answered = _Answered()
    built: BuiltContext | None = None
    for attempt in range(1, settings.attempts + 1):
        built = build_context(
            call.agent_name,
            call.model,
            call.identity,
            call.items,
            instruction,
            schema,
            settings.budget,
            call.layout,
        )
        if settings.debug and debug_stream is not None:
            _print_debug(
                debug_stream,
                call.agent_name,
                attempt,
                built.system,
                built.final_user_message,
                schema,
            )
        request = GenerateRequest(
            agent_name=call.agent_name,
            function_name=call.function_name,
            model=call.model,
            identity=call.identity,
            instruction=instruction,
            return_shape=shape,
            schema=schema,
            context=call.items,
            built=built,
            attempt=attempt,
            max_output_tokens=settings.max_output_tokens,
            temperature=settings.temperature,
            think=settings.think,
            strict=settings.strict,
            deadline_seconds=meter.remaining_seconds() if meter else None,
            on_event=tracer.emit,
            on_text=tracer.text_delta if stream else None,
        )
        tracer.step_started(
            "generate",
            {
                "agent": call.agent_name,
                "function": call.function_name,
                "instruction": short(sanitize(call.instruction)),
                "attempt": attempt,
                "max_attempts": settings.attempts,
            },
        )
        raw: Any = None
        has_output = False
        try:
            if meter is not None:
                meter.before_model_call()
            try:
                response = llm.generate(request)
            except ModelOutputError as error:
                usage.add(error.usage)
                answered.saw(error.details)
                if meter is not None:
                    meter.after_model_call(error.usage)
                raise
            except AgentScriptError:
                raise
            except Exception as problem:  # a provider's own bug must not escape as a traceback
                detail = str(problem) or type(problem).__name__
                raise ExecutionError(f"LLM provider failed: {detail}") from problem
            usage.add(response.usage)
            answered.saw(response.details)
            if meter is not None:
                if response.budgeted:
                    meter.after_model_call(response.usage)
                else:
                    meter.not_a_model_call()
            raw = response.value
            has_output = True
            if shape is None:
                value = raw
            else:
                value = raw if settings.strict else coerce(raw, shape)
                validate_output(
                    value,
                    shape,
                    call.expr,
                    call.path,
                    reject_extra_fields=settings.reject_extra_fields,
                )
        except ModelOutputError as error:
            # The repair quotes the provider's message as it was raised, without a location
            # (0.1.0); the location is only added for the trace and the final error.
            provider_message = str(error)
            error.at(where, call.path)
            failures.append(str(error))
            # A cut-off answer is not repaired: the same output limit would cut it off again.
            if attempt < settings.attempts and not error.cut_off:
                instruction = repair_instruction(
                    call.instruction, provider_message, call.layout, shape=shape
                )
                continue
            _trace_failure(tracer, call, built, attempt, failures, usage, answered)
            raise
        except ExecutionError as error:
            error.at(where, call.path)
            failures.append(str(error))
            if has_output and shape is not None and attempt < settings.attempts:
                instruction = repair_instruction(
                    call.instruction, str(error), call.layout, raw, shape=shape
                )
                continue
            _trace_failure(tracer, call, built, attempt, failures, usage, answered)
            raise
        data: dict[str, Any] = {
            "instruction": sanitize(call.instruction),
            "attempts": attempt,
            "budget": settings.budget.to_json() if settings.budget else None,
            "debug": settings.debug,
            "context": built.to_json(),
            "result": sanitize(value),
            "max_attempts": settings.attempts,
            "promptTokens": built.token_breakdown(),
        }
        if failures:
            data["errors"] = failures
        if usage:
            data["usage"] = usage.to_json()
        data.update(answered.to_json(call))
        tracer.emit("generate", data)
        return value
    raise AssertionError("the attempt loop always returns or raises")


_NO_OUTPUT: Any = object()


def repair_instruction(
    original: Any,
    error: str,
    layout: PromptLayout = PromptLayout.ORIGINAL,
    output: Any = _NO_OUTPUT,
    shape: ast.ShapeObjectExpr | None = None,
) -> Any:
    """The instruction for the next attempt: the original plus a repair message. The previous
    output is shown when there was one (a JSON null counts; a non-JSON answer does not), as
    pretty JSON in the 0.1.0 layout and compact JSON in the compact one.

    The compact layout prints no schema (the provider sends it natively), so when a server
    ignored it the model has never seen the shape: its repair message ends with the answer's
    form (`answer_form`). The 0.1.0 layout keeps the original's message byte for byte; it
    prints the whole schema after the instruction anyway."""
    parts = ["Previous generation failed."]
    if output is not _NO_OUTPUT:
        indent = 2 if layout is PromptLayout.ORIGINAL else None
        parts.append("Previous output:\n" + stringify(sanitize(output), indent))
    parts.append("Error:\n" + error)
    tail = "Return corrected JSON matching the requested schema only."
    if shape is not None and layout is not PromptLayout.ORIGINAL:
        tail += (
            " Reply with one JSON object of this form, each <type> replaced by a value of"
            " that type taken from the context, and nothing else:\n" + answer_form(shape)
        )
    parts.append(tail)
    message = "\n\n".join(parts)
    if isinstance(original, str):
        return original + "\n\n" + message
    if isinstance(original, dict):
        return {**original, "repair": message}
    return {"input": original, "repair": message}


def answer_form(shape: ast.ShapeObjectExpr) -> str:
    """The shape as the JSON object a model should write, each value a placeholder naming its
    type: `{"label": <string>, "tags": [<string>]}`. Not JSON itself, so a model that copies it
    instead of filling it in fails again rather than passing with made-up values."""
    fields = ", ".join(
        f"{stringify(field.name)}: {_placeholder(field.type)}" for field in shape.fields
    )
    return "{" + fields + "}"


def _placeholder(shape_type: ast.ShapeType) -> str:
    if isinstance(shape_type, ast.ListShapeType):
        return "[" + _placeholder(shape_type.item_type) + "]"
    if isinstance(shape_type, ast.ChoiceShapeType):
        return "<" + " | ".join(stringify(value) for value in choice_values(shape_type)) + ">"
    if shape_type.name == "list":
        return "[<json>]"
    return f"<{shape_type.name}>"


def _trace_failure(
    tracer: Tracer,
    call: GenerateCall,
    built: BuiltContext | None,
    attempt: int,
    failures: list[str],
    usage: Usage,
    answered: _Answered,
) -> None:
    """Failed generates are traced too (a later addition), so an audit shows what was tried."""
    data: dict[str, Any] = {
        "instruction": sanitize(call.instruction),
        "attempts": attempt,
        "budget": call.settings.budget.to_json() if call.settings.budget else None,
        "debug": call.settings.debug,
        "context": built.to_json() if built is not None else None,
        "ok": False,
        "error": failures[-1],
        "errors": failures,
        "max_attempts": call.settings.attempts,
    }
    if usage:
        data["usage"] = usage.to_json()
    data.update(answered.to_json(call))
    tracer.emit("generate", data)


def _print_debug(
    stream: TextIO,
    agent_name: str,
    attempt: int,
    system: str,
    message: str,
    schema: dict[str, Any] | None,
) -> None:
    block = [
        f"--- AgentScript generate debug: {agent_name} attempt {attempt} ---",
        "System:",
        system,
        "Final user message:",
        message,
        "Return schema:",
        stringify(schema, 2),
        "--- end AgentScript generate debug ---",
    ]
    stream.write("\n".join(block) + "\n")

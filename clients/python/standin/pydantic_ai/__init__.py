"""A stand-in for Pydantic AI (``pydantic_ai``), for the tests only.

PyPI is unreachable where slackbot's tests run, and the real package does
not import here (it needs anyio, httpx2, griffelib, opentelemetry-api,
genai-prices and pydantic-graph, none of them installed). So the tests put
this directory first on sys.path (``SLACKBOT_TEST_PYDANTIC_AI=standin``, see
``pai_mode.py``) and the client meets the same names, fields, defaults and
pydantic serialization rules as with the real package.

Copied from pydantic/pydantic-ai at commit
4fda38988f2939fa6ea9cdefcf120693e10ef491 (v2.33.0-11), file by file:

- ``pydantic_ai_slim/pydantic_ai/_deferred.py``: DeferredToolRequests,
  ToolApproved, ToolDenied, the DeferredToolApprovalResult and
  DeferredToolCallResult unions with their discriminator, and
  DeferredToolResults, verbatim but for docstrings and
  DeferredToolRequests' helper methods (build_results, remaining);
- ``pydantic_ai_slim/pydantic_ai/exceptions.py``: ModelRetry and ToolFailed
  with their ``__get_pydantic_core_schema__``;
- ``pydantic_ai_slim/pydantic_ai/messages.py``: ToolReturn, RetryPromptPart
  and ToolCallPart (BaseToolCallPart's fields) with their fields and
  defaults; their helpers and custom reprs left out, ToolReturn's value
  typed Any (ToolReturnContent there);
- ``pydantic_ai_slim/pydantic_ai/tools.py``: ToolDefinition's fields that
  matter here (name, parameters_json_schema, description, kind, metadata)
  and Tool.tool_def;
- ``toolsets/function.py``, ``toolsets/abstract.py``, ``tool_manager.py``,
  ``agent/__init__.py``: the shape the client reads tool definitions from:
  FunctionToolset.tools (name -> Tool), ToolsetTool.tool_def,
  ToolManager.tools / tool_defs, Agent.toolsets and the tool decorators.
  The Agent here runs nothing; its tools' JSON Schemas are built the way
  Pydantic AI builds them (pydantic's, of the function's parameters, with
  ``additionalProperties: false``).

Like the real package it needs pydantic (>= 2.12).
"""

from __future__ import annotations as _annotations

import inspect
import uuid
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timezone
from typing import Annotated, Any, Callable, Generic, Literal, TypeAlias, TypeVar, cast

import pydantic
import pydantic_core
from pydantic import Discriminator, Tag
from pydantic_core import core_schema

#: Marks the stand-in; the real package's version is read from its metadata.
__version__ = "2.33.0+slackbot-standin"
STANDIN = True


def _generate_tool_call_id() -> str:
    return f"pyd_ai_{uuid.uuid4().hex}"


def _now_utc() -> datetime:
    return datetime.now(tz=timezone.utc)


# --- exceptions.py -----------------------------------------------------------


class ModelRetry(Exception):
    message: str

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, self.__class__) and other.message == self.message

    def __hash__(self) -> int:
        return hash((self.__class__, self.message))

    @classmethod
    def __get_pydantic_core_schema__(cls, _: Any, __: Any) -> core_schema.CoreSchema:
        schema = core_schema.typed_dict_schema(
            {
                'message': core_schema.typed_dict_field(core_schema.str_schema()),
                'kind': core_schema.typed_dict_field(core_schema.literal_schema(['model-retry'])),
            }
        )
        return core_schema.no_info_after_validator_function(
            lambda dct: ModelRetry(dct['message']),
            schema,
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda x: {'message': x.message, 'kind': 'model-retry'},
                return_schema=schema,
            ),
        )


class ToolFailed(Exception):
    message: str

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self.__class__) and other.message == self.message

    def __hash__(self) -> int:
        return hash((self.__class__, self.message))

    @classmethod
    def __get_pydantic_core_schema__(cls, _: Any, __: Any) -> core_schema.CoreSchema:
        serialized_schema = core_schema.typed_dict_schema(
            {
                'message': core_schema.typed_dict_field(core_schema.str_schema()),
                'kind': core_schema.typed_dict_field(core_schema.literal_schema(['tool-failed'])),
            }
        )
        deserialization_schema = core_schema.no_info_after_validator_function(
            lambda dct: cls(dct['message']),
            serialized_schema,
        )
        return core_schema.json_or_python_schema(
            json_schema=deserialization_schema,
            python_schema=core_schema.union_schema([core_schema.is_instance_schema(cls), deserialization_schema]),
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda x: {'message': x.message, 'kind': 'tool-failed'},
                return_schema=serialized_schema,
            ),
        )


# --- messages.py -------------------------------------------------------------

_ToolReturnValueT = TypeVar('_ToolReturnValueT')


@dataclass(repr=False)
class ToolReturn(Generic[_ToolReturnValueT]):
    return_value: Any
    _: KW_ONLY
    content: str | Sequence[Any] | None = None
    metadata: Any = None
    tools: list[str] | None = None
    kind: Literal['tool-return'] = 'tool-return'


@dataclass(repr=False)
class RetryPromptPart:
    content: list[pydantic_core.ErrorDetails] | str
    _: KW_ONLY
    tool_name: str | None = None
    tool_call_id: str = field(default_factory=_generate_tool_call_id)
    timestamp: datetime = field(default_factory=_now_utc)
    part_kind: Literal['retry-prompt'] = 'retry-prompt'


@dataclass(repr=False)
class ToolCallPart:
    tool_name: str
    args: str | dict[str, Any] | None = None
    tool_call_id: str = field(default_factory=_generate_tool_call_id)
    _: KW_ONLY
    tool_kind: Literal['tool-search', 'capability-load'] | None = None
    id: str | None = None
    provider_name: str | None = None
    provider_details: dict[str, Any] | None = None
    part_kind: Literal['tool-call'] = 'tool-call'


# --- _deferred.py ------------------------------------------------------------


@dataclass(kw_only=True)
class DeferredToolRequests:
    calls: list[ToolCallPart] = field(default_factory=list[ToolCallPart])
    approvals: list[ToolCallPart] = field(default_factory=list[ToolCallPart])
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])


@dataclass(kw_only=True)
class ToolApproved:
    override_args: dict[str, Any] | None = None
    kind: Literal['tool-approved'] = 'tool-approved'


@dataclass
class ToolDenied:
    message: str = 'The tool call was denied.'
    _: KW_ONLY
    kind: Literal['tool-denied'] = 'tool-denied'


def _deferred_tool_call_result_discriminator(x: Any) -> str | None:
    if isinstance(x, ToolFailed):
        return 'tool-failed'
    elif isinstance(x, ModelRetry):
        return 'model-retry'
    elif isinstance(x, dict):
        x_dict = cast(dict[str, Any], x)
        if 'kind' in x_dict:
            return cast(str, x_dict['kind'])
        elif 'part_kind' in x_dict:
            return cast(str, x_dict['part_kind'])
    else:
        if hasattr(x, 'kind'):
            return cast(str, x.kind)
        elif hasattr(x, 'part_kind'):
            return cast(str, x.part_kind)
    return None


DeferredToolApprovalResult: TypeAlias = Annotated[ToolApproved | ToolDenied, Discriminator('kind')]
DeferredToolCallResult: TypeAlias = Annotated[
    Annotated[ToolReturn, Tag('tool-return')]
    | Annotated[ToolFailed, Tag('tool-failed')]
    | Annotated[ModelRetry, Tag('model-retry')]
    | Annotated[RetryPromptPart, Tag('retry-prompt')],
    Discriminator(_deferred_tool_call_result_discriminator),
]
DeferredToolResult = DeferredToolApprovalResult | DeferredToolCallResult


@dataclass(kw_only=True)
class DeferredToolResults:
    calls: dict[str, DeferredToolCallResult | Any] = field(default_factory=dict[str, DeferredToolCallResult | Any])
    approvals: dict[str, bool | DeferredToolApprovalResult] = field(
        default_factory=dict[str, bool | DeferredToolApprovalResult]
    )
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])

    def update(self, other: DeferredToolResults) -> None:
        self.approvals.update(other.approvals)
        self.calls.update(other.calls)
        self.metadata.update(other.metadata)


# --- tools.py, toolsets, tool_manager.py, agent ------------------------------


@dataclass(repr=False, kw_only=True)
class ToolDefinition:
    name: str
    parameters_json_schema: dict[str, Any] = field(default_factory=lambda: {'type': 'object', 'properties': {}})
    description: str | None = None
    kind: Literal['function', 'output', 'external', 'unapproved'] = field(default='function')
    metadata: dict[str, Any] | None = None


def _parameters_json_schema(function: Callable[..., Any], takes_ctx: bool) -> dict[str, Any]:
    """The JSON Schema of function's parameters, as Pydantic AI's
    _function_schema builds it: a pydantic model of the parameters (the
    RunContext left out), extra fields forbidden."""
    params = list(inspect.signature(function).parameters.values())[1 if takes_ctx else 0 :]
    fields: dict[str, Any] = {
        p.name: (Any if p.annotation is inspect.Parameter.empty else p.annotation, ... if p.default is inspect.Parameter.empty else p.default)
        for p in params
    }
    model = pydantic.create_model(function.__name__, __config__=pydantic.ConfigDict(extra='forbid'), **fields)
    schema = model.model_json_schema()
    schema.pop('title', None)
    for prop in schema.get('properties', {}).values():
        prop.pop('title', None)
    return schema


class Tool:
    def __init__(self, function: Callable[..., Any], *, takes_ctx: bool = False, name: str | None = None,
                 description: str | None = None, requires_approval: bool = False, metadata: dict[str, Any] | None = None):
        self.function = function
        self.takes_ctx = takes_ctx
        self.name = name or function.__name__
        self.description = description or inspect.getdoc(function)
        self.requires_approval = requires_approval
        self.metadata = metadata
        self._json_schema = _parameters_json_schema(function, takes_ctx)

    @property
    def tool_def(self) -> ToolDefinition:
        return ToolDefinition(
            name=self.name,
            description=self.description,
            parameters_json_schema=self._json_schema,
            metadata=self.metadata,
            kind='unapproved' if self.requires_approval else 'function',
        )


class FunctionToolset:
    def __init__(self, tools: Sequence[Tool | Callable[..., Any]] = []):
        self.tools: dict[str, Tool] = {}
        for t in tools:
            self.add_tool(t if isinstance(t, Tool) else Tool(t))

    def add_tool(self, tool: Tool) -> None:
        if tool.name in self.tools:
            raise ValueError(f'Tool name conflicts with existing tool: {tool.name!r}')
        self.tools[tool.name] = tool


@dataclass
class ToolsetTool:
    toolset: Any
    tool_def: ToolDefinition
    max_retries: int = 1


@dataclass
class ToolManager:
    toolset: Any = None
    tools: dict[str, ToolsetTool] | None = None

    @property
    def tool_defs(self) -> list[ToolDefinition]:
        if self.tools is None:
            raise ValueError('ToolManager has not been prepared for a run step yet')
        return [tool.tool_def for tool in self.tools.values()]


@dataclass
class RunContext:
    deps: Any = None
    run_id: str | None = None
    run_step: int = 0
    tool_manager: ToolManager | None = None
    tool_call_metadata: Any = None


class Agent:
    def __init__(self, model: Any = None, *, tools: Sequence[Tool | Callable[..., Any]] = (), toolsets: Sequence[Any] = (), **_: Any):
        self.model = model
        self._function_toolset = FunctionToolset(tools)
        self._user_toolsets = list(toolsets)

    @property
    def toolsets(self) -> Sequence[Any]:
        return [self._function_toolset, *self._user_toolsets]

    def tool_plain(self, func: Callable[..., Any] | None = None, *, requires_approval: bool = False, name: str | None = None) -> Any:
        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self._function_toolset.add_tool(Tool(f, name=name, requires_approval=requires_approval))
            return f
        return register if func is None else register(func)

    def tool(self, func: Callable[..., Any] | None = None, *, requires_approval: bool = False, name: str | None = None) -> Any:
        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self._function_toolset.add_tool(Tool(f, takes_ctx=True, name=name, requires_approval=requires_approval))
            return f
        return register if func is None else register(func)

"""The JSON Schemas of an agent's tools' arguments, for Edit on slackbot's cards.

slackbot lets approvers edit a call's arguments on its card when the call
carries its tool's JSON Schema (slackbot_client's args_schemas). Pydantic AI
holds that schema in each tool's ToolDefinition.parameters_json_schema:
args_schemas_of reads it from Pydantic AI's objects by attribute (no import
of pydantic_ai is needed) or from plain dicts. Standard library only.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["args_schemas_of"]


def args_schemas_of(*sources: Any) -> dict[str, dict[str, Any]]:
    """The JSON Schema of each tool's arguments, by tool name, from Pydantic
    AI's objects or plain dicts: what args_schemas takes, so the cards of
    those tools offer Edit.

    Each source is one of (read by attribute, so no import is needed):

    - a RunContext, as a deferred-tool handler gets it: the tool definitions
      prepared for the run's step (``ctx.tool_manager.tool_defs``), which
      hold every toolset's tools (MCP servers' too) under the names the
      model saw; before its tools are prepared, its agent's;
    - an Agent: the tools of its toolsets that hold them
      (``agent.toolsets``, e.g. the function toolset of ``@agent.tool``);
      toolsets whose tools exist only during a run (MCP servers, dynamic
      toolsets) have none here, and a handler's RunContext has them;
    - a ToolManager, a toolset with ``tools``, a Tool or ToolsetTool (its
      ``tool_def``), a ToolDefinition (``name``, ``parameters_json_schema``);
    - a dict: a ToolDefinition as a dict (``name``, ``parameters_json_schema``)
      or tool names mapped to schemas;
    - a list or tuple of any of these.

    Later sources win for the same name. Anything else, or a schema that is
    not a JSON object, raises TypeError naming it.
    """
    out: dict[str, dict[str, Any]] = {}
    for source in sources:
        _collect_schemas(source, out)
    return out


def _add_schema(out: dict, name: Any, schema: Any) -> None:
    if not isinstance(name, str) or not name:
        raise TypeError(f"args_schemas_of: a tool name must be a non-empty string, not {name!r}")
    if not isinstance(schema, Mapping):
        raise TypeError(f"args_schemas_of: the schema of {name!r} is a {type(schema).__name__}, not a JSON Schema object")
    out[name] = dict(schema)


def _collect_schemas(source: Any, out: dict) -> None:
    if isinstance(source, Mapping):
        if "parameters_json_schema" in source and "name" in source:
            _add_schema(out, source["name"], source["parameters_json_schema"])
        else:
            for name, schema in source.items():
                _add_schema(out, name, schema)
    elif isinstance(source, (list, tuple)):
        for item in source:
            _collect_schemas(item, out)
    elif hasattr(source, "parameters_json_schema") and hasattr(source, "name"):  # ToolDefinition
        _add_schema(out, source.name, source.parameters_json_schema)
    elif hasattr(source, "tool_def"):  # Tool, ToolsetTool
        _collect_schemas(source.tool_def, out)
    elif hasattr(source, "tool_manager"):  # RunContext
        manager = source.tool_manager
        if manager is not None and getattr(manager, "tools", None) is not None:
            _collect_schemas(manager, out)
        elif getattr(source, "agent", None) is not None:
            _collect_schemas(source.agent, out)
        else:
            raise TypeError("args_schemas_of: this RunContext has neither prepared tools nor an agent")
    elif hasattr(source, "tool_defs") and hasattr(source, "tools"):  # ToolManager
        _collect_schemas(list(source.tool_defs), out)
    elif hasattr(source, "toolsets"):  # Agent
        for toolset in source.toolsets:
            tools = getattr(toolset, "tools", None)
            if isinstance(tools, Mapping):
                _collect_schemas(list(tools.values()), out)
    elif isinstance(getattr(source, "tools", None), Mapping):  # FunctionToolset
        _collect_schemas(list(source.tools.values()), out)
    else:
        raise TypeError(
            f"args_schemas_of: a {type(source).__name__} holds no tool definitions "
            "(want a RunContext, Agent, toolset, Tool, ToolDefinition, dict or list of them)"
        )

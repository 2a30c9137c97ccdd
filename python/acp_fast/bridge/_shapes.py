"""Reshaping of the messages whose members differ between v1 and v2 (private): ``initialize``,
capabilities, auth methods, config options, MCP servers, command inputs.

Each function takes the value one side sent and returns ``(value for the other side, problems)``;
a problem is a sentence saying what the other version cannot say (strict mode refuses the frame
with it; otherwise the documented choice in docs/BRIDGE.md applies). Values are never changed in
place.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

Problems = List[str]

#: ``info`` sent to a v2 peer when the v1 peer gave no ``clientInfo`` / ``agentInfo``.
UNKNOWN_INFO: Dict[str, Any] = {"name": "unknown", "version": "unknown"}


def _obj(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _with_meta(out: Dict[str, Any], source: Any) -> Dict[str, Any]:
    if isinstance(source, dict) and source.get("_meta") is not None:
        out["_meta"] = source["_meta"]
    return out


def _marker(value: Any) -> Optional[Dict[str, Any]]:
    """A v2 capability marker (``{}`` = supported) from a v1 boolean."""
    return {} if value is True else None


def _flag(value: Any) -> bool:
    """A v1 capability boolean from a v2 marker (an object = supported)."""
    return isinstance(value, dict)


def _put(out: Dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


# ---------------------------------------------------------------------------------------------
# initialize request


def initialize_params(params: Dict[str, Any], target: int) -> Tuple[Dict[str, Any], Problems]:
    problems: Problems = []
    out: Dict[str, Any] = {}
    for key, value in params.items():
        if key == "protocolVersion":
            out[key] = target
        elif key in ("clientInfo", "info", "clientCapabilities", "capabilities"):
            continue
        else:
            out[key] = value
    if "protocolVersion" not in out:
        out = {"protocolVersion": target, **out}
    if target == 2:
        info = params.get("clientInfo")
        if not isinstance(info, dict):
            problems.append("no clientInfo (v2 requires info)")
            info = dict(UNKNOWN_INFO)
        out["info"] = info
        out["capabilities"] = client_capabilities_v2(params.get("clientCapabilities"))
    else:
        if isinstance(params.get("info"), dict):
            out["clientInfo"] = params["info"]
        out["clientCapabilities"] = client_capabilities_v1(params.get("capabilities"))
    return out, problems


def client_capabilities_v2(caps: Any) -> Dict[str, Any]:
    """v1 client capabilities for a v2 agent: ``auth.terminal`` and ``elicitation`` carry over;
    ``fs`` and ``terminal`` (client methods v2 does not have), ``session`` and ``subagents`` (v2
    agents may always use subagents; the bridge shows them to a v1 editor that advertised it)
    are left out."""
    caps = _obj(caps)
    out: Dict[str, Any] = {}
    auth = _obj(caps.get("auth"))
    if auth:
        out["auth"] = _with_meta({"terminal": {}} if auth.get("terminal") is True else {}, auth)
    _put(out, "elicitation", caps.get("elicitation"))
    return _with_meta(out, caps)


def client_capabilities_v1(caps: Any) -> Dict[str, Any]:
    """v2 client capabilities for a v1 agent: no ``fs`` and no ``terminal`` (a v2 editor serves
    neither), ``subagents`` (a v2 editor handles them without a capability), ``auth.terminal`` and
    ``elicitation`` carried over."""
    caps = _obj(caps)
    auth = _obj(caps.get("auth"))
    out: Dict[str, Any] = {
        "fs": {"readTextFile": False, "writeTextFile": False},
        "terminal": False,
        "subagents": {},
        "auth": _with_meta({"terminal": _flag(auth.get("terminal"))}, auth),
    }
    _put(out, "elicitation", caps.get("elicitation"))
    return _with_meta(out, caps)


# ---------------------------------------------------------------------------------------------
# initialize response


def initialize_result(result: Dict[str, Any], target: int) -> Tuple[Dict[str, Any], Problems]:
    problems: Problems = []
    out: Dict[str, Any] = {"protocolVersion": target}
    if target == 1:
        if isinstance(result.get("info"), dict):
            out["agentInfo"] = result["info"]
        out["agentCapabilities"] = agent_capabilities_v1(result.get("capabilities"))
    else:
        info = result.get("agentInfo")
        if not isinstance(info, dict):
            problems.append("no agentInfo (v2 requires info)")
            info = dict(UNKNOWN_INFO)
        out["info"] = info
        caps, more = agent_capabilities_v2(result.get("agentCapabilities"))
        problems += more
        out["capabilities"] = caps
    if "authMethods" in result:
        methods, more = auth_methods(result["authMethods"], target)
        problems += more
        out["authMethods"] = methods
    for key, value in result.items():
        if key not in ("protocolVersion", "info", "agentInfo", "capabilities", "agentCapabilities", "authMethods"):
            out[key] = value
    return out, problems


def agent_capabilities_v1(caps: Any) -> Dict[str, Any]:
    """v2 agent capabilities for a v1 editor. ``session`` present means v2's baseline
    ``session/resume``, ``session/list`` and ``session/close``, and ``session/load`` (which the
    bridge turns into ``session/resume`` with ``replayFrom``)."""
    caps = _obj(caps)
    session = caps.get("session")
    s = _obj(session)
    prompt = _obj(s.get("prompt"))
    mcp = _obj(s.get("mcp"))
    out: Dict[str, Any] = {
        "loadSession": isinstance(session, dict),
        "promptCapabilities": _with_meta(
            {key: _flag(prompt.get(key)) for key in ("image", "audio", "embeddedContext")}, prompt
        ),
        "mcpCapabilities": _with_meta({"http": _flag(mcp.get("http")), "sse": False}, mcp),
    }
    sessions: Dict[str, Any] = {}
    if isinstance(session, dict):
        sessions = {"list": {}, "resume": {}, "close": {}}
        for key in ("delete", "additionalDirectories"):
            _put(sessions, key, s.get(key) if isinstance(s.get(key), dict) else None)
    out["sessionCapabilities"] = _with_meta(sessions, s)
    if isinstance(caps.get("auth"), dict):
        out["auth"] = _with_meta({}, caps["auth"])
    return _with_meta(out, caps)


def agent_capabilities_v2(caps: Any) -> Tuple[Dict[str, Any], Problems]:
    """v1 agent capabilities for a v2 editor; ``session`` is always there (it holds the prompt
    and MCP capabilities), so v2's baseline resume / list / close are announced even when the v1
    agent lacks them (a problem for strict mode)."""
    caps = _obj(caps)
    problems: Problems = []
    prompt = _obj(caps.get("promptCapabilities"))
    mcp = _obj(caps.get("mcpCapabilities"))
    sessions = _obj(caps.get("sessionCapabilities"))
    session: Dict[str, Any] = {
        "prompt": _with_meta(
            {key: {} for key in ("image", "audio", "embeddedContext") if prompt.get(key) is True}, prompt
        ),
        "mcp": _with_meta({"stdio": {}, **({"http": {}} if mcp.get("http") is True else {})}, mcp),
    }
    if mcp.get("sse") is True:
        problems.append("MCP over SSE (v2 has no sse transport)")
    for key in ("delete", "additionalDirectories"):
        _put(session, key, sessions.get(key) if isinstance(sessions.get(key), dict) else None)
    missing = [key for key in ("list", "resume", "close") if not isinstance(sessions.get(key), dict)]
    if missing:
        problems.append(f"no session {'/'.join(missing)} (v2's session capability implies them)")
    out: Dict[str, Any] = {"session": _with_meta(session, sessions)}
    if isinstance(caps.get("auth"), dict):
        out["auth"] = _with_meta({}, caps["auth"])
    return _with_meta(out, caps), problems


def auth_methods(methods: Any, target: int) -> Tuple[Any, Problems]:
    """Auth methods: v1 ``id`` <-> v2 ``methodId``; v1's untagged agent method <-> v2
    ``type: "agent"``; terminal ``env`` object <-> array of ``{name, value}``. v2 methods of
    another type are left out for v1."""
    if not isinstance(methods, list):
        return methods, []
    problems: Problems = []
    out: List[Any] = []
    for method in methods:
        if not isinstance(method, dict):
            out.append(method)
            continue
        kind = method.get("type")
        item: Dict[str, Any] = {}
        if target == 2:
            item["type"] = "terminal" if kind == "terminal" else "agent"
        elif kind not in ("agent", "terminal"):
            problems.append(f"auth method type {kind!r}")
            continue
        elif kind == "terminal":
            item["type"] = "terminal"
        for key, value in method.items():
            if key == "type":
                continue
            if key in ("id", "methodId"):
                item["methodId" if target == 2 else "id"] = value
            elif key == "env" and kind == "terminal":
                item["env"] = _env(value, target)
            else:
                item[key] = value
        out.append(item)
    return out, problems


def _env(value: Any, target: int) -> Any:
    if target == 2 and isinstance(value, dict):
        return [{"name": name, "value": v} for name, v in value.items()]
    if target == 1 and isinstance(value, list):
        return {e["name"]: e.get("value") for e in value if isinstance(e, dict) and isinstance(e.get("name"), str)}
    return value


# ---------------------------------------------------------------------------------------------
# Sessions: MCP servers, config options, modes, command inputs


def mcp_servers(servers: Any, target: int) -> Tuple[Any, Problems]:
    """v1 stdio servers have no ``type``, v2 ones ``type: "stdio"``; v1 requires ``args``, ``env``
    and (http) ``headers``. v1 SSE servers and v2 servers of an unknown type are left out."""
    if not isinstance(servers, list):
        return servers, []
    problems: Problems = []
    out: List[Any] = []
    for server in servers:
        if not isinstance(server, dict):
            out.append(server)
            continue
        kind = server.get("type")
        if target == 2:
            if kind == "sse":
                problems.append("an MCP server over SSE (v2 has no sse transport)")
                continue
            out.append(server if kind == "http" else {"type": "stdio", **server})
            continue
        if kind == "http":
            out.append(server if "headers" in server else {**server, "headers": []})
        elif kind == "stdio":
            item = {k: v for k, v in server.items() if k != "type"}
            item.setdefault("args", [])
            item.setdefault("env", [])
            out.append(item)
        else:
            problems.append(f"an MCP server of type {kind!r}")
    return out, problems


def session_params(params: Dict[str, Any], target: int, *, needs_servers: bool) -> Tuple[Dict[str, Any], Problems]:
    """``session/new`` / ``load`` / ``resume`` params: MCP servers reshaped (and ``[]`` when v1
    requires them and a v2 editor left them out)."""
    if "mcpServers" in params:
        servers, problems = mcp_servers(params["mcpServers"], target)
        return (params if servers == params["mcpServers"] else {**params, "mcpServers": servers}), problems
    if target == 1 and needs_servers:
        return {**params, "mcpServers": []}, []
    return params, []


def config_options(options: Any, target: int) -> Tuple[Any, Problems]:
    """v1 ``id`` <-> v2 ``configId``; select groups v1 ``group`` <-> v2 ``groupId``; v2 options of
    another type than ``select`` / ``boolean`` are left out for v1."""
    if not isinstance(options, list):
        return options, []
    problems: Problems = []
    out: List[Any] = []
    src, dst = ("id", "configId") if target == 2 else ("configId", "id")
    gsrc, gdst = ("group", "groupId") if target == 2 else ("groupId", "group")
    for option in options:
        if not isinstance(option, dict):
            out.append(option)
            continue
        if target == 1 and option.get("type") not in ("select", "boolean"):
            problems.append(f"a config option of type {option.get('type')!r}")
            continue
        item = {dst if key == src else key: value for key, value in option.items()}
        if isinstance(item.get("options"), list):
            item["options"] = [
                {gdst if k == gsrc else k: v for k, v in g.items()} if isinstance(g, dict) and gsrc in g else g
                for g in item["options"]
            ]
        out.append(item)
    return out, problems


def session_result(result: Dict[str, Any], target: int) -> Tuple[Dict[str, Any], Problems]:
    """Results of ``session/new``, ``load``, ``resume``, ``set_config_option``: config options
    reshaped; for v2, v1's ``modes`` are left out and a ``null`` ``configOptions`` omitted."""
    problems: Problems = []
    out: Dict[str, Any] = {}
    for key, value in result.items():
        if key == "configOptions":
            if value is None and target == 2:
                continue
            value, more = config_options(value, target)
            problems += more
        elif key == "modes" and target == 2:
            if value is not None:
                problems.append("session modes (v2 has config options instead)")
            continue
        out[key] = value
    return out, problems


def set_config_params(params: Dict[str, Any], target: int) -> Tuple[Dict[str, Any], Problems]:
    """``session/set_config_option``: a v1 value id has no ``type``, a v2 one ``type: "id"``."""
    kind = params.get("type")
    if target == 2 and "type" not in params:
        return {**params, "type": "id"}, []
    if target == 1 and kind == "id":
        return {k: v for k, v in params.items() if k != "type"}, []
    if target == 1 and kind != "boolean":
        return params, [f"a config value of type {kind!r}"]
    return params, []


def command_input(value: Any, target: int) -> Tuple[Any, Problems]:
    """An available command's ``input``: v1 ``{hint}`` <-> v2 ``{type: "text", hint}``; other v2
    input types become ``null`` for v1."""
    if not isinstance(value, dict):
        return value, []
    if target == 2:
        return ({"type": "text", **value} if "type" not in value else value), []
    if value.get("type") == "text":
        return {k: v for k, v in value.items() if k != "type"}, []
    return None, [f"a command input of type {value.get('type')!r}"]


def commands(update: Dict[str, Any], target: int) -> Tuple[Dict[str, Any], Problems]:
    items = update.get("availableCommands")
    if not isinstance(items, list):
        return update, []
    problems: Problems = []
    out = []
    for item in items:
        if isinstance(item, dict):
            # v2 tags each entry (`"type": "command"`, or a kind v1 has no form for)
            if target == 2 and "type" not in item:
                item = {"type": "command", **item}
            elif target == 1 and "type" in item:
                if item["type"] != "command":
                    problems.append(f"an available command of type {item['type']!r}")
                    continue
                item = {k: v for k, v in item.items() if k != "type"}
        if isinstance(item, dict) and isinstance(item.get("input"), dict):
            value, more = command_input(item["input"], target)
            problems += more
            item = {**item, "input": value}
        out.append(item)
    return {**update, "availableCommands": out}, problems

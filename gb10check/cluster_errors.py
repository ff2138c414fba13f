"""A cluster file's validation errors as lines a user can act on.

A misspelled key names the field it was probably meant to be (difflib over the field names at its level), and the
required field it left missing is said with it, not counted apart. A value of the wrong type shows the value given,
what kind of value it is, and an example of a right one. The most useful line comes first.
"""

import difflib
import types
from collections.abc import Callable
from typing import Annotated, Any, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticUndefined

MAX_LINES = 10  # beyond this many mistakes, the rest are counted

# pydantic's error type -> the kind of value the field expects, in the words of a YAML file
EXPECTED = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer", "int_parsing_size": "an integer",
    "float_type": "a number", "float_parsing": "a number", "bool_type": "true or false", "bool_parsing": "true or false",
    "string_type": "a string", "list_type": "a list", "dict_type": "a mapping", "model_type": "a mapping",
    "model_attributes_type": "a mapping", "ip_v4_interface": "an IPv4 address with its prefix length",
    "ip_v4_network": "an IPv4 network with its prefix length",
}
GENERIC = {"ip_v4_interface": "192.168.101.10/24", "ip_v4_network": "192.168.101.0/24", "bool": True}


def where(loc: tuple, data) -> str:
    """'nodes[1](thinkstationpgx-32).address': list items by index, named by their `name` where they have one."""
    parts, node = [], data
    for item in loc:
        if isinstance(item, int):
            label = ""
            if isinstance(node, list) and 0 <= item < len(node) and isinstance(node[item], dict) and "name" in node[item]:
                label = f"({node[item]['name']})"
            parts[-1] = f"{parts[-1]}[{item}]{label}" if parts else f"[{item}]"
        else:
            parts.append(str(item))
        try:
            node = node[item]
        except (KeyError, IndexError, TypeError):
            node = None
    return ".".join(parts)


def lines(exc: ValidationError, data, model: type[BaseModel], source: str,
          known: Callable[[type, str], Any] = lambda model, name: None) -> list[str]:
    """One line per mistake, `source: where: what`, the misspelled keys first; `known(model, field)`: a right value
    for a field without a default (an example for a wrong type), or None."""
    errors = [{**e, "loc": tuple(l for l in e["loc"] if not str(l).startswith("function-"))} for e in exc.errors()]
    missing = {e["loc"] for e in errors if e["type"] == "missing"}
    explained, typos, rest = set(), [], []
    for e in errors:
        if e["type"] == "extra_forbidden":
            text, meant = _unknown(e["loc"], model, missing)
            if meant:
                explained.add(meant)
            typos.append((e["loc"], text))
    for e in errors:
        if e["type"] == "extra_forbidden" or e["loc"] in explained:
            continue
        rest.append((e["loc"], _wrong_type(e, model, known) or e["msg"].removeprefix("Value error, ")))
    out = [f"{source}: {where(loc, data) + ': ' if loc else ''}{text}" for loc, text in typos + rest]
    if len(out) > MAX_LINES:
        out = out[:MAX_LINES] + [f"{source}: (and {len(out) - MAX_LINES} more)"]
    return out


def _unknown(loc: tuple, model: type[BaseModel], missing: set) -> tuple[str, tuple | None]:
    """An unknown key: the field it is closest to (and whether that field is the missing one it stands for)."""
    holder = _model(_annotation(model, loc[:-1]))
    fields = list(holder.model_fields) if holder else []
    close = difflib.get_close_matches(str(loc[-1]), fields, n=1)
    if close:
        meant = (*loc[:-1], close[0])
        if meant in missing:
            return f"unknown field; did you mean {close[0]}? ({close[0]} is required and missing)", meant
        return f"unknown field; did you mean {close[0]}?", None
    if fields:
        return f"unknown field; the fields here are {', '.join(fields)}", None
    return "unknown field", None


def _wrong_type(e: dict, model: type[BaseModel], known) -> str | None:
    """`got 'fast' (a string); expected an integer, e.g. 200000`, for an error about the kind of value; else None."""
    if e["type"] == "literal_error":
        return f"{e['msg']}; got {_show(e['input'])}"
    expected = EXPECTED.get(e["type"])
    if not expected:
        return None
    value, got = e["input"], f"got {_show(e['input'])} ({_kind(e['input'])})"
    if expected == "a mapping":
        holder = _model(_annotation(model, e["loc"]))
        keys = f" of {', '.join(holder.model_fields)}" if holder else ""
        return f"{got}; expected a mapping{keys}"
    if expected == "a string" and isinstance(value, (int, float, bool)):
        return f"{got}; expected a string: put it in quotes, e.g. '{_show(value) if isinstance(value, bool) else value}'"
    if expected == "a list":
        items = get_args(_bare(_annotation(model, e["loc"])))
        holder = _model(items[0]) if items else None
        if holder:
            return f"{got}; expected a list, each item a mapping of {', '.join(holder.model_fields)}"
    example = _example(e, model, known)
    if example is None and expected == "a list" and isinstance(value, (str, int, float)):
        example = [value]
    return f"{got}; expected {expected}" + (f", e.g. {_show(example)}" if example is not None else "")


def _example(e: dict, model: type[BaseModel], known):
    """A right value: the field's default, else what `known` gives, else one fit for its type and bounds."""
    loc = e["loc"]
    item = bool(loc) and isinstance(loc[-1], int)
    field_loc = loc[:-1] if item else loc
    holder = _model(_annotation(model, field_loc[:-1])) if field_loc else None
    name = field_loc[-1] if field_loc else None
    info = holder.model_fields.get(name) if holder and isinstance(name, str) else None
    value = None
    if info is not None and info.default not in (PydanticUndefined, None, [], {}) and not isinstance(info.default, BaseModel):
        value = info.default
    elif info is not None and info.examples:
        value = info.examples[0]
    if value is None and holder is not None and isinstance(name, str):
        value = known(holder, name)
    if item:
        value = value[0] if isinstance(value, list) and value else None
    if value is not None and e["type"].startswith("int") and not (isinstance(value, int) and not isinstance(value, bool)):
        value = int(value) if isinstance(value, float) and value.is_integer() else None
    if value is None:
        value = GENERIC.get(e["type"])
    if value is None and e["type"].startswith(("int", "float")):
        value = _least(info.metadata if info is not None and not item else [], e["type"].startswith("int"))
    if value is None and e["type"].startswith("bool"):
        value = GENERIC["bool"]
    return value


def _least(metadata: list, integer: bool):
    """A round value the field's bounds allow: 1, or the lower bound above it, or 0.5 under an upper bound of 1."""
    value = 1 if integer else 1.0
    for m in metadata:
        low = getattr(m, "ge", None) if isinstance(m, annotated_types.Ge) else getattr(m, "gt", None)
        if low is not None and low >= value:
            value = low if isinstance(m, annotated_types.Ge) else low + 1 if integer else low * 2
        high = getattr(m, "le", None) if isinstance(m, annotated_types.Le) else getattr(m, "lt", None)
        if high is not None and high <= value:
            value = high if isinstance(m, annotated_types.Le) else high / 2
    return value


def _annotation(model: type[BaseModel], loc: tuple):
    """The type at `loc` under `model` (a field's, a list item's, a mapping value's), or None."""
    tp = model
    for item in loc:
        tp = _bare(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(item, str) and item in tp.model_fields:
            tp = tp.model_fields[item].annotation
        elif get_origin(tp) in (list, tuple, set) and isinstance(item, int) and get_args(tp):
            tp = get_args(tp)[0]
        elif get_origin(tp) is dict and get_args(tp):
            tp = get_args(tp)[1]
        else:
            return None
    return tp


def _bare(tp):
    """Without Annotated[...] and without `| None`."""
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin in (Union, types.UnionType) and len([a for a in get_args(tp) if a is not type(None)]) == 1:
            tp = next(a for a in get_args(tp) if a is not type(None))
        else:
            return tp


def _model(tp) -> type[BaseModel] | None:
    tp = _bare(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _kind(value) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction" if not value.is_integer() else "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _show(value) -> str:
    """A value as the cluster file would spell it, cut to a readable length."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

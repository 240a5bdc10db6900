"""Check requests and response models against the official API specs (issue 9 §2).

:class:`ApiSpec` loads one OpenAPI document (``../shared/reference/specs``) and checks a recorded
request (:class:`~sandbox.server.SeenRequest`) against it: the path template and the method exist, every
query parameter is one the operation declares (and the required ones are there), each value fits the
parameter's schema (enum, pattern, integer, boolean, ``date-time``, ``uuid``, bounds; arrays split as the
parameter's ``style``/``explode`` say), ``filterBy`` terms use only the operators the parameter's
description documents (dates: only those it allows for dates) on the fields its pattern lists, and a
body's content type and field names (and the values the spec enumerates) are the request body's.

:func:`model_fields` walks a pydantic model (field aliases, nested models) so that a test can check
each field the product reads against the response schema the model is mapped to.
"""

from __future__ import annotations

import json
import re
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

from pydantic import AliasChoices, BaseModel

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT.parent / "shared" / "reference" / "specs"
RUNAI_SPEC = SPECS / "runai-2.24-openapi.json"
OSMO_SPEC = SPECS / "osmo-openapi.json"

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
#: RFC 3339 date-time (``format: date-time``): a zone is required.
DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$",
)
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
FILTER_OPERATORS = ("==", "!=", "<=", ">=", "=@", "!@", "=^", "=$")
_OPERATOR = re.compile(r"==|!=|<=|>=|=@|!@|=\^|=\$")


@dataclass
class Operation:
    """One (method, path template) of a spec, with its parameters resolved."""

    method: str
    template: str
    op: dict[str, Any]
    params: dict[tuple[str, str], dict[str, Any]]
    segments: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.method.upper()} {self.template}"

    @property
    def literal_segments(self) -> int:
        return sum(1 for s in self.segments if not s.startswith("{"))

    def match(self, raw_path: str) -> dict[str, str] | None:
        parts = raw_path.strip("/").split("/") if raw_path.strip("/") else []
        if len(parts) != len(self.segments):
            return None
        out: dict[str, str] = {}
        for want, have in zip(self.segments, parts, strict=True):
            value = unquote(have)
            if want.startswith("{") and want.endswith("}"):
                if not value:
                    return None
                out[want[1:-1]] = value
            elif want != value:
                return None
        return out


@dataclass
class Checked:
    """What checking one request found: its operation (None when none matched) and its violations."""

    operation: Operation | None
    violations: list[str] = field(default_factory=list)


class ApiSpec:
    """One OpenAPI document (3.0 or 3.1) with the checks this module describes."""

    def __init__(self, path: Path, name: str) -> None:
        self.name = name
        self.doc: dict[str, Any] = json.loads(path.read_text())
        self.schemas: dict[str, Any] = self.doc.get("components", {}).get("schemas", {})
        self._parameters: dict[str, Any] = self.doc.get("components", {}).get("parameters", {})

    # -- schemas -----------------------------------------------------------------------------

    def resolve(self, schema: Any) -> dict[str, Any]:
        """``schema`` with ``$ref`` chains followed (a non-dict is an empty schema)."""
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**self.schemas[name], **rest}
            seen += 1
            if seen > 50:
                raise ValueError(f"$ref loop at {name}")
        return schema if isinstance(schema, dict) else {}

    def flatten(self, schema: Any) -> dict[str, Any]:
        """One schema with ``$ref`` resolved, ``allOf`` parts merged (properties, required) and a 3.1
        ``anyOf``/``oneOf`` with ``null`` reduced to its non-null option (``nullable`` noted)."""
        schema = self.resolve(schema)
        out: dict[str, Any] = {k: v for k, v in schema.items() if k not in ("allOf", "anyOf", "oneOf")}
        for part in schema.get("allOf") or []:
            flat = self.flatten(part)
            props = {**(out.get("properties") or {}), **(flat.get("properties") or {})}
            required = [*(out.get("required") or []), *(flat.get("required") or [])]
            out = {**flat, **out}
            if props:
                out["properties"] = props
            if required:
                out["required"] = required
        for combo in ("anyOf", "oneOf"):
            options = schema.get(combo)
            if not options:
                continue
            real = [o for o in options if self.resolve(o).get("type") != "null"]
            if len(real) < len(options):
                out["nullable"] = True
            if len(real) == 1:
                out = {**self.flatten(real[0]), **out}
            else:
                out[combo] = real
        return out

    def properties(self, schema: Any) -> dict[str, Any] | None:
        """The properties of an object schema (None when the schema is not one: no ``properties``).

        With ``anyOf``/``oneOf`` of objects, the union of their properties."""
        flat = self.flatten(schema)
        if flat.get("type") == "array" or "items" in flat:
            return None
        props = dict(flat.get("properties") or {})
        for combo in ("anyOf", "oneOf"):
            for option in flat.get(combo) or []:
                props.update(self.properties(option) or {})
        return props if props or flat.get("type") == "object" else None

    def item_schema(self, schema: Any) -> dict[str, Any] | None:
        """The ``items`` of an array schema (None when the schema is not an array)."""
        flat = self.flatten(schema)
        if flat.get("type") == "array" or "items" in flat:
            return self.flatten(flat.get("items") or {})
        return None

    def at(self, schema: Any, dotted: str) -> dict[str, Any] | None:
        """The schema at a dotted property path (``[]`` steps into array items); None when absent."""
        current: Any = schema
        for step in dotted.split("."):
            while step.endswith("[]"):
                step = step[:-2]
                if step:
                    props = self.properties(current) or {}
                    if step not in props:
                        return None
                    current, step = props[step], ""
                current = self.item_schema(current)
                if current is None:
                    return None
            if not step:
                continue
            props = self.properties(current) or {}
            if step not in props:
                return None
            current = props[step]
        return self.flatten(current)

    # -- operations --------------------------------------------------------------------------

    @cached_property
    def operations(self) -> list[Operation]:
        out: list[Operation] = []
        for template, item in self.doc["paths"].items():
            shared = [self._param(p) for p in item.get("parameters") or []]
            for method, op in item.items():
                if method not in METHODS:
                    continue
                params = {(p["in"], p["name"]): p for p in shared}
                params |= {(p["in"], p["name"]): p for p in (self._param(p) for p in op.get("parameters") or [])}
                segments = tuple(template.strip("/").split("/"))
                out.append(Operation(method, template, op, params, segments))
        return out

    def _param(self, param: dict[str, Any]) -> dict[str, Any]:
        if "$ref" in param:
            return self._parameters[param["$ref"].rsplit("/", 1)[-1]]
        return param

    def find(self, method: str, raw_path: str) -> tuple[Operation | None, dict[str, str], str | None]:
        """The operation for ``method`` on ``raw_path`` (the most literal template wins), its path parameters,
        or None and why."""
        matches = [(op, params) for op in self.operations if (params := op.match(raw_path)) is not None]
        if not matches:
            return None, {}, f"{self.name}: no path template matches {raw_path}"
        same = [(op, params) for op, params in matches if op.method == method.lower()]
        if not same:
            templates = sorted({op.template for op, _ in matches})
            return None, {}, f"{self.name}: {method} is not an operation of {', '.join(templates)}"
        op, params = max(same, key=lambda m: m[0].literal_segments)
        return op, params, None

    # -- requests ----------------------------------------------------------------------------

    def check(
        self,
        method: str,
        raw_path: str,
        query: str,
        content_type: str | None = None,
        body: dict[str, str] | None = None,
    ) -> Checked:
        """Every way the request departs from the spec (see the module docstring)."""
        op, path_params, problem = self.find(method, raw_path)
        if op is None:
            return Checked(None, [problem or "no operation"])
        where = f"{op.key}"
        out = Checked(op)
        for name, value in path_params.items():
            param = op.params.get(("path", name))
            if param is None:
                out.violations.append(f"{where}: path parameter {name} is not declared")
                continue
            out.violations += [f"{where}: path {name}={value!r}: {p}" for p in self.scalar(param.get("schema"), value)]
        given: dict[str, list[str]] = {}
        for name, value in parse_qsl(query, keep_blank_values=True):
            given.setdefault(name, []).append(value)
        for (place, name), param in op.params.items():
            if place == "query" and param.get("required") and name not in given:
                out.violations.append(f"{where}: required query parameter {name} is missing")
        for name, values in given.items():
            param = op.params.get(("query", name))
            if param is None:
                declared = sorted(n for p, n in op.params if p == "query")
                out.violations.append(f"{where}: query parameter {name!r} is not in the spec (declared: {declared})")
                continue
            out.violations += [f"{where}: query {name}: {p}" for p in self.query_values(param, values)]
            if name == "filterBy":
                out.violations += [f"{where}: filterBy: {p}" for p in self.filter_terms(op, param, values)]
        out.violations += [f"{where}: body: {p}" for p in self.body(op, content_type, body)]
        return out

    def query_values(self, param: dict[str, Any], values: list[str]) -> list[str]:
        schema = self.flatten(param.get("schema") or {})
        items = self.item_schema(schema)
        if items is None:
            if len(values) > 1:
                return [f"given {len(values)} times but is not an array"]
            return self.scalar(schema, values[0])
        style = param.get("style", "form")
        explode = param.get("explode", style == "form")
        if explode:
            parts = values
        elif len(values) > 1:
            return [f"given {len(values)} times but the spec says explode: false (one comma-separated value)"]
        else:
            parts = values[0].split(",")
        problems: list[str] = []
        for part in parts:
            problems += self.scalar(items, part)
        return problems

    def scalar(self, schema: Any, text: str) -> list[str]:
        """Why ``text`` (a query or path value) does not fit ``schema``; empty when it does."""
        schema = self.flatten(schema or {})
        for combo in ("anyOf", "oneOf"):
            if schema.get(combo):
                tries = [self.scalar(o, text) for o in schema[combo]]
                return [] if any(not t for t in tries) else [f"{text!r} fits none of the {combo} options"]
        kind = schema.get("type")
        problems: list[str] = []
        if "enum" in schema and text not in [str(e) for e in schema["enum"]]:
            problems.append(f"{text!r} is not one of {schema['enum']}")
        if kind == "integer":
            if not re.fullmatch(r"[+-]?\d+", text):
                return [f"{text!r} is not an integer"]
            problems += _bounds(schema, int(text))
        elif kind == "number":
            try:
                number = float(text)
            except ValueError:
                return [f"{text!r} is not a number"]
            problems += _bounds(schema, number)
        elif kind == "boolean":
            if text not in ("true", "false"):
                problems.append(f"{text!r} is not a boolean (true/false)")
        elif kind in ("string", None):
            pattern = schema.get("pattern")
            if pattern and not re.search(pattern, text):
                problems.append(f"{text!r} does not match the pattern {pattern}")
            if len(text) < schema.get("minLength", 0):
                problems.append(f"{text!r} is shorter than minLength {schema['minLength']}")
            if "maxLength" in schema and len(text) > schema["maxLength"]:
                problems.append(f"{text!r} is longer than maxLength {schema['maxLength']}")
            fmt = schema.get("format")
            if fmt == "date-time" and not is_date_time(text):
                problems.append(f"{text!r} is not an RFC 3339 date-time")
            if fmt == "uuid" and not UUID.match(text):
                problems.append(f"{text!r} is not a uuid")
        return problems

    # -- filterBy ------------------------------------------------------------------------------

    def filter_terms(self, op: Operation, param: dict[str, Any], values: list[str]) -> list[str]:
        """``filterBy`` terms against the parameter's documented operators and the listed items' field types.

        The description says which operators exist and which of them dates take ("Dates are in ISO 8601
        timestamp format and available for operators ``==``, ``!=``, ``<=`` and ``>=``"); the fields are
        those of the pattern; a field is a date when the listed item's property is ``format: date-time``."""
        description = str(param.get("description") or "")
        before, _, dates_sentence = description.partition("Dates")
        allowed = set(_OPERATOR.findall(before))
        date_ops = set(_OPERATOR.findall(dates_sentence.split(". ", 1)[0]))
        pattern = (self.item_schema(param.get("schema") or {}) or {}).get("pattern", "")
        fields_group = re.match(r"^\^\(([^)]*)\)", pattern)
        fields = set(fields_group.group(1).split("|")) if fields_group else set()
        item_props = self.listed_item_properties(op)
        explode = param.get("explode", param.get("style", "form") == "form")
        terms = [term for raw in values for term in ([raw] if explode else raw.split(","))]
        problems: list[str] = []
        for term in terms:
            m = re.match(r"^([A-Za-z0-9_]+)(==|!=|<=|>=|=@|!@|=\^|=\$)(.*)$", term)
            if m is None:
                problems.append(f"{term!r} is not field-operator-value")
                continue
            name, operator, value = m.groups()
            if fields and name not in fields:
                problems.append(f"{term!r}: {name} is not a filterable field ({sorted(fields)})")
            if allowed and operator not in allowed:
                problems.append(f"{term!r}: operator {operator} is not documented ({sorted(allowed)})")
            prop = self.flatten(item_props.get(name) or {})
            if prop.get("format") == "date-time":
                if date_ops and operator not in date_ops:
                    problems.append(f"{term!r}: dates take only {sorted(date_ops)}")
                if not is_date_time(value):
                    problems.append(f"{term!r}: {value!r} is not an ISO 8601 timestamp")
            elif prop.get("type") in ("integer", "number"):
                try:
                    float(value)
                except ValueError:
                    problems.append(f"{term!r}: {name} is a number")
        return problems

    def listed_item_properties(self, op: Operation) -> dict[str, Any]:
        """The properties of the items a list operation returns (the array property of its 200 answer)."""
        schema = self.response_schema(op)
        props = self.properties(schema) or {}
        for sub in props.values():
            items = self.item_schema(sub)
            if items is not None:
                return self.properties(items) or {}
        items = self.item_schema(schema)
        return (self.properties(items) or {}) if items is not None else {}

    def response_schema(self, op: Operation, status: str = "200") -> dict[str, Any]:
        content = ((op.op.get("responses") or {}).get(status) or {}).get("content") or {}
        media: dict[str, Any] = content.get("application/json") or next(iter(content.values()), {})
        return self.flatten(media.get("schema") or {})

    # -- bodies ---------------------------------------------------------------------------------

    def body(self, op: Operation, content_type: str | None, body: dict[str, str] | None) -> list[str]:
        spec_body = op.op.get("requestBody")
        if spec_body is None:
            return [f"sent a {content_type} body, the operation takes none"] if body else []
        content = spec_body.get("content") or {}
        if content_type not in content:
            return [f"content type {content_type!r} is not one of {sorted(content)}"]
        if body is None:
            return ["the spec requires a body"] if spec_body.get("required") else []
        media = content[content_type]
        schema = self.flatten(media.get("schema") or {})
        props = self.properties(schema) or {}
        problems = [f"field {name!r} is not in the schema ({sorted(props)})" for name in body if name not in props]
        problems += [f"required field {name!r} is missing" for name in schema.get("required") or [] if name not in body]
        for name, value in body.items():
            prop = self.flatten(props.get(name) or {})
            if "enum" in prop and value != "<masked>" and value not in [str(e) for e in prop["enum"]]:
                problems.append(f"{name}={value!r} is not one of {prop['enum']}")
        # Where the spec gives an example per grant (``examples``), the fields must be that example's.
        examples = [e.get("value") for e in (media.get("examples") or {}).values() if isinstance(e, dict)]
        for example in examples:
            if not isinstance(example, dict):
                continue
            selector = next((k for k in ("grantType", "grant_type") if k in example), None)
            if selector and body.get(selector) == example[selector] and set(body) != set(example):
                grant = example[selector]
                problems.append(f"fields {sorted(body)} differ from the spec's {grant} example {sorted(example)}")
        return problems


def _bounds(schema: dict[str, Any], number: float) -> list[str]:
    problems: list[str] = []
    if "minimum" in schema and number < schema["minimum"]:
        problems.append(f"{number} is below the minimum {schema['minimum']}")
    if "maximum" in schema and number > schema["maximum"]:
        problems.append(f"{number} is above the maximum {schema['maximum']}")
    if "exclusiveMinimum" in schema and not isinstance(schema["exclusiveMinimum"], bool):
        if number <= schema["exclusiveMinimum"]:
            problems.append(f"{number} is not above {schema['exclusiveMinimum']}")
    return problems


def is_date_time(text: str) -> bool:
    if not DATE_TIME.match(text):
        return False
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return True


# -- models -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelField:
    """One field a model reads: its dotted path of wire names (``meta.creationTimestamp``), the names it is
    read by (the alias and any alternative), and the nested model when it is one."""

    path: str
    names: tuple[str, ...]
    nested: type[BaseModel] | None
    is_list: bool


def wire_names(model: type[BaseModel], name: str) -> tuple[str, ...]:
    """The JSON names a pydantic field is read by (validation alias choices, alias, alias generator)."""
    info = model.model_fields[name]
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        return tuple(str(c) for c in alias.choices if isinstance(c, str))
    if isinstance(alias, str):
        return (alias,)
    if info.alias:
        return (info.alias,)
    generator = model.model_config.get("alias_generator")
    if callable(generator):
        return (str(generator(name)),)
    return (name,)


def _nested(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model inside ``X``, ``X | None``, ``list[X]`` (and whether it was a list)."""
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    if origin in (list, tuple, set, frozenset):
        inner, _ = _nested((typing.get_args(annotation) or (Any,))[0])
        return inner, True
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            inner, is_list = _nested(arg)
            if inner is not None:
                return inner, is_list
    return None, False


def model_fields(model: type[BaseModel]) -> Iterator[tuple[str, type[BaseModel], ModelField]]:
    """(field name, its model, field) for every field of ``model`` (nested models are walked by the caller)."""
    for name, info in model.model_fields.items():
        nested, is_list = _nested(info.annotation)
        yield name, model, ModelField(name, wire_names(model, name), nested, is_list)

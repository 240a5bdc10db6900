"""Random JSON values valid for an OpenAPI document's JSON schemas (seeded; shared by the spec fuzzers).

:class:`SchemaGen` walks ``components.schemas``: ``$ref``, ``anyOf``/``oneOf`` (a ``null`` option taken
30% of the time), ``allOf`` (properties and ``required`` merged), ``enum``, ``const``, ``type`` lists,
``required`` and optional properties (each optional one 60% of the time), ``additionalProperties``,
``uniqueItems``, OpenAPI 3.0 ``nullable`` (``null`` :attr:`SchemaGen.null_rate` of the time), ``writeOnly``
properties (never in an answer), ``format`` (``date-time``, ``uuid``, ``int32``/``int64``), ``minimum``/
``maximum``, ``minLength``/``maxLength``, ``minItems``/``maxItems`` and ``pattern`` (a string is picked
from the generator's candidates that match it, else the schema's ``example``; a pattern nothing matches is
an error, so a new one is noticed).

Subclasses say what values look like for a key (:attr:`numeric_keys`: numeric strings; :attr:`name_keys`:
identifiers most of the time; :attr:`free_keys`: the keys of free-form objects) and may override
:meth:`free_value` (the value of a free-form object's key). The random draws for a schema that uses none of
the newer keywords are the ones ``bench/osmo_fuzz.py`` always made, so its seeded results do not change.
"""

from __future__ import annotations

import json
import random
import re
import string
import threading
import time
import uuid
from typing import Any


class SchemaGen:
    """Random JSON values valid for the spec's JSON schemas (the OpenAPI 3.0/3.1 subset the specs use)."""

    ident_words: tuple[str, ...] = ("train", "eval", "prep", "render", "sdg", "policy", "sim", "h100", "gb200", "node")
    weird: tuple[str, ...] = ("", " ", "x", "名前", "a b", "a/b", "Ω≈ç√", "%2F", "..", "\u202e", "<script>", "null")
    numeric: tuple[str, ...] = ("0", "8", "-1", "1.5", "1e3", "", "abc", "99999999999999999999", "NaN", "inf", "-0")
    numeric_keys: frozenset[str] = frozenset()
    name_keys: frozenset[str] = frozenset()
    free_keys: tuple[str, ...] = ("a", "b")
    #: Zones of generated date-times ("" is a naive time: not RFC 3339, but what FastAPI services send).
    zones: tuple[str, ...] = ("", "", "Z", "+00:00", "-07:00", "+14:00", "-23:59")
    null_rate = 0.2  # OpenAPI 3.0 ``nullable: true``
    #: Extra string candidates tried for a ``pattern`` (besides identifiers, :attr:`weird` and :attr:`numeric`).
    pattern_candidates: tuple[str, ...] = ()

    def __init__(self, spec: dict[str, Any], rng: random.Random) -> None:
        self.schemas: dict[str, Any] = spec["components"]["schemas"]
        self.rng = rng

    def body(self, name: str) -> Any:
        return self.value({"$ref": f"#/components/schemas/{name}"}, key="", depth=0)

    def value(self, schema: dict[str, Any], key: str, depth: int) -> Any:
        rng = self.rng
        if "$ref" in schema:
            return self.value(self.schemas[schema["$ref"].rsplit("/", 1)[-1]], key, depth)
        if schema.get("nullable") is True and rng.random() < self.null_rate:
            return None
        for combo in ("anyOf", "oneOf"):
            if combo in schema:
                options = schema[combo]
                nulls = [o for o in options if o.get("type") == "null"]
                if nulls and rng.random() < 0.3:
                    return None
                rest = [o for o in options if o.get("type") != "null"] or options
                return self.value(rng.choice(rest), key, depth)
        if "allOf" in schema:
            return self.value(self.merged(schema), key, depth)
        if "enum" in schema:
            return rng.choice(schema["enum"])
        if "const" in schema:
            return schema["const"]
        kind = schema.get("type")
        if kind is None:
            kind = "object" if "properties" in schema else None
        if kind is None:
            return self.anything(depth)
        if isinstance(kind, list):
            kind = rng.choice(kind)
        return getattr(self, f"_{kind}")(schema, key, depth)

    def merged(self, schema: dict[str, Any]) -> dict[str, Any]:
        """An ``allOf`` schema as one: its parts' properties and ``required`` merged, its own keywords kept
        (``nullable`` is already decided)."""
        out: dict[str, Any] = {k: v for k, v in schema.items() if k not in ("allOf", "nullable")}
        for part in schema["allOf"]:
            resolved = self.resolve(part)
            if "allOf" in resolved:
                resolved = self.merged(resolved)
            props = {**(out.get("properties") or {}), **(resolved.get("properties") or {})}
            required = [*(out.get("required") or []), *(resolved.get("required") or [])]
            out = {**{k: v for k, v in resolved.items() if k != "nullable"}, **out}
            if props:
                out["properties"] = props
            if required:
                out["required"] = required
        return out

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            schema = self.schemas[schema["$ref"].rsplit("/", 1)[-1]]
        return schema

    def _null(self, schema: dict[str, Any], key: str, depth: int) -> None:
        return None

    def _boolean(self, schema: dict[str, Any], key: str, depth: int) -> bool:
        return self.rng.random() < 0.5

    def _integer(self, schema: dict[str, Any], key: str, depth: int) -> int:
        value = self.rng.choice((0, 1, -1, 2, 8, 137, 3000, 2012, 4000, 2**31, -(2**53), self.rng.randint(-10, 10**6)))
        if schema.get("format") == "int32":
            value = max(-(2**31), min(2**31 - 1, value))
        return int(self._bounded(schema, value))

    def _number(self, schema: dict[str, Any], key: str, depth: int) -> float | int:
        value = self.rng.choice((0, 0.0, 1.5, -1.0, 64, 3600.0, 1e308, -1e-300, self.rng.uniform(-1e6, 1e7)))
        return self._bounded(schema, value)

    @staticmethod
    def _bounded(schema: dict[str, Any], value: float) -> float:
        low, high = schema.get("minimum"), schema.get("maximum")
        if isinstance(low, int | float) and value < low:
            value = low
        if isinstance(high, int | float) and value > high:
            value = high
        return value

    def _string(self, schema: dict[str, Any], key: str, depth: int) -> str:
        rng = self.rng
        if schema.get("format") == "date-time":
            return self.date_time()
        if schema.get("format") == "uuid":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if schema.get("pattern"):
            return self._patterned(schema, key)
        if key in self.numeric_keys:
            text = rng.choice(self.numeric)
        elif key in self.name_keys and rng.random() < 0.85:
            text = self.ident()
        elif rng.random() < 0.5:
            text = rng.choice(self.weird)
        else:
            text = "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 40)))
        return self._sized(schema, text)

    @staticmethod
    def _sized(schema: dict[str, Any], text: str) -> str:
        low, high = schema.get("minLength"), schema.get("maxLength")
        if isinstance(low, int) and len(text) < low:
            text += "x" * (low - len(text))
        if isinstance(high, int) and len(text) > high:
            text = text[:high]
        return text

    def _patterned(self, schema: dict[str, Any], key: str) -> str:
        pattern = schema["pattern"]
        pool = [*self.pattern_candidates, *(self.ident() for _ in range(3)), *self.weird, *self.numeric]
        fits = [c for c in pool if re.search(pattern, c) and c == self._sized(schema, c)]
        if fits:
            return self.rng.choice(fits)
        example = schema.get("example")
        if isinstance(example, str) and re.search(pattern, example):
            return example
        raise ValueError(f"no candidate string matches the pattern {pattern!r} (key {key!r})")

    def _array(self, schema: dict[str, Any], key: str, depth: int) -> list[Any]:
        n = self.rng.randint(0, 3 if depth < 4 else 1)
        low, high = schema.get("minItems"), schema.get("maxItems")
        if isinstance(low, int):
            n = max(n, low)
        if isinstance(high, int):
            n = min(n, high)
        items = [self.value(schema.get("items") or {}, key, depth + 1) for _ in range(n)]
        if schema.get("uniqueItems"):
            unique: dict[str, Any] = {}
            for item in items:
                unique.setdefault(json.dumps(item, sort_keys=True), item)
            items = list(unique.values())
        return items

    def _object(self, schema: dict[str, Any], key: str, depth: int) -> dict[str, Any]:
        rng = self.rng
        props: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if sub.get("writeOnly") is True:
                continue  # never in an answer
            if name in required or rng.random() < 0.6:
                out[name] = self.value(sub, name, depth + 1)
        extra = schema.get("additionalProperties", True if not props else False)
        if extra is not False:
            for _ in range(rng.randint(0, 3 if not props else 1)):
                name = rng.choice(self.free_keys) if not props and rng.random() < 0.7 else self.ident()
                if name in out:
                    continue
                if isinstance(extra, dict):
                    out[name] = self.value(extra, name, depth + 1)
                else:
                    out[name] = self.free_value(name, depth)
        return out

    def free_value(self, name: str, depth: int) -> Any:
        """The value of a free-form object's key (``additionalProperties: true``)."""
        return self.anything(depth + 1, name)

    def anything(self, depth: int, key: str = "") -> Any:
        """Any JSON value (``additionalProperties: true``, an untyped schema)."""
        rng = self.rng
        pick = rng.randrange(8 if depth < 3 else 5)
        if pick == 0:
            return None
        if pick == 1:
            return rng.random() < 0.5
        if pick == 2:
            return rng.choice((0, 8, -1, 2**40, 1.5, 1e308))
        if pick in (3, 4):
            return rng.choice(self.numeric + self.weird)
        if pick == 5:
            return [self.anything(depth + 1) for _ in range(rng.randint(0, 2))]
        return {self.ident(): self.anything(depth + 1) for _ in range(rng.randint(0, 2))}

    def ident(self) -> str:
        rng = self.rng
        return f"{rng.choice(self.ident_words)}-{rng.randint(0, 99)}"

    def date_time(self) -> str:
        rng = self.rng
        year = rng.choice((2026, 2026, 2026, 1970, 2000, 2099, 1, 9999))
        base = f"{year:04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:" + (
            f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        )
        frac = rng.choice(("", ".5", ".123456", ".123456789"))
        zone = rng.choice(self.zones)
        return base + frac + zone


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "null": (type(None),),
}


def violations(schemas: dict[str, Any], schema: dict[str, Any], value: Any, where: str = "$") -> list[str]:
    """Why ``value`` is not valid for ``schema`` (the keywords :class:`SchemaGen` generates; ``date-time``
    accepts a naive time, as the generator's :attr:`SchemaGen.zones` may); empty when it is.

    Used to prove that the bodies a fuzzer serves as spec-valid are (its own edits included)."""
    while "$ref" in schema:
        schema = schemas[schema["$ref"].rsplit("/", 1)[-1]]
    if value is None and schema.get("nullable") is True:
        return []
    for combo in ("anyOf", "oneOf"):
        if combo in schema:
            tries = [violations(schemas, option, value, where) for option in schema[combo]]
            if any(not t for t in tries):
                return []
            return [f"{where}: fits none of the {combo} options ({min(tries, key=len)[0]})"]
    out: list[str] = []
    for part in schema.get("allOf") or []:
        out += violations(schemas, {**part, "nullable": schema.get("nullable", False)}, value, where)
    if "enum" in schema and value not in schema["enum"]:
        return [*out, f"{where}: {value!r} is not one of the enum"]
    kind = schema.get("type")
    if kind is None and "properties" in schema:
        kind = "object"
    if kind is None:
        return out
    kinds = kind if isinstance(kind, list) else [kind]
    if not any(isinstance(value, _TYPES[k]) and not (k in ("integer", "number") and isinstance(value, bool))
               for k in kinds):  # fmt: skip
        return [*out, f"{where}: {type(value).__name__} is not {kind}"]
    if isinstance(value, str):
        fmt = schema.get("format")
        if fmt == "date-time" and not _RFC3339.match(value):
            out.append(f"{where}: {value!r} is not a date-time")
        if fmt == "uuid" and not _UUID.match(value):
            out.append(f"{where}: {value!r} is not a uuid")
        if schema.get("pattern") and not re.search(schema["pattern"], value):
            out.append(f"{where}: {value!r} does not match {schema['pattern']}")
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", len(value)):
            out.append(f"{where}: {value!r} has the wrong length")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value < schema.get("minimum", value) or value > schema.get("maximum", value):
            out.append(f"{where}: {value} is out of bounds")
    if isinstance(value, list):
        for i, item in enumerate(value):
            out += violations(schemas, schema.get("items") or {}, item, f"{where}[{i}]")
    if isinstance(value, dict) and (kind == "object" or "properties" in schema):
        props = schema.get("properties") or {}
        out += [f"{where}: {name} is required" for name in schema.get("required") or [] if name not in value]
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in props:
                out += violations(schemas, props[name], item, f"{where}.{name}")
            elif extra is False:
                out.append(f"{where}: {name} is not a property")
            elif isinstance(extra, dict):
                out += violations(schemas, extra, item, f"{where}.{name}")
    return out


class LoopbackServer:
    """A uvicorn server on 127.0.0.1 (an ephemeral port) in a thread, for the fuzz runs: subclasses give
    :meth:`app`; ``with Server() as s`` starts it (``s.url``) and stops it."""

    name = "fuzz"

    def __init__(self) -> None:
        self.url = ""
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def app(self) -> Any:
        raise NotImplementedError

    def __enter__(self) -> Any:
        import uvicorn

        config = uvicorn.Config(self.app(), host="127.0.0.1", port=0, log_level="error", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=self.name, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fuzz server did not start")
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{self._server.servers[0].sockets[0].getsockname()[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)

"""Units: Kubernetes quantities to bytes, bytes to GiB text, RFC 3339 timestamps to UTC datetimes."""

from __future__ import annotations

import re
from datetime import UTC, datetime

_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$")
_FACTORS = {
    "": 1,
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "m": 1,
}


def quantity_bytes(value: str | int | float | None) -> int | None:
    """``"32Gi"`` -> 34359738368; numbers pass through; None or unparseable -> None."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return int(value)
    m = _QUANTITY.match(value)
    if not m or m.group(2) not in _FACTORS:
        return None
    number = float(m.group(1))
    if m.group(2) == "m":
        return int(number / 1000)
    return int(number * _FACTORS[m.group(2)])


def gib(n_bytes: float) -> str:
    """``34359738368`` -> ``"32.0 GiB"``."""
    return f"{n_bytes / 2**30:.1f} GiB"


def bytes_text(n_bytes: float) -> str:
    """``34359738368`` -> ``"34359738368 bytes (32.0 GiB)"``."""
    return f"{int(n_bytes)} bytes ({gib(n_bytes)})"


def parse_time(value: str | datetime | None) -> datetime | None:
    """Lenient RFC 3339 / ``"2023-06-06 12:09:18.211"`` parser; naive times are UTC. None on failure."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    text = value.strip()
    if not text:
        return None
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    text = text.replace(" ", "T", 1)
    # Python < 3.12 rejects more than 6 fractional digits.
    text = re.sub(r"(\.\d{6})\d+", r"\1", text)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def iso(value: datetime) -> str:
    """UTC RFC 3339 with a ``Z``."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

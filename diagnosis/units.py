"""Units: Kubernetes quantities to bytes, bytes to GiB text, RFC 3339 timestamps to UTC datetimes."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import ROUND_UP, Decimal
from typing import cast

#: The grammar of a Kubernetes quantity (apimachinery ``resource/quantity.go``): a signed number
#: (``1``, ``1.5``, ``1.``, ``.5``) and one suffix: binary SI (``Ki`` .. ``Ei``), decimal SI
#: (``n u m k M G T P E``; ``K`` as the Python package also reads it) or a decimal exponent (``e3``, ``E-3``).
#: Checked before parsing because :class:`~decimal.Decimal` also takes ``NaN``, ``Infinity`` and ``1_000``.
_K8S_QUANTITY = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[KMGTPE]i|[numkKMGTPE]|[eE][+-]?[0-9]+)?$")
#: Byte units that Run:ai and people write but Kubernetes does not parse (``0B``, ``32GiB``, ``16 GB``).
_BYTES_TEXT = re.compile(r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))\s*([KMGTPE]?i?B)$")
_BYTE_FACTORS = {
    "B": 1,
    **{p + "B": 1000 ** (i + 1) for i, p in enumerate("KMGTPE")},
    **{p + "iB": 1024 ** (i + 1) for i, p in enumerate("KMGTPE")},
}


def quantity_decimal(value: str | int | float | Decimal | None) -> Decimal | None:
    """A Kubernetes quantity as an exact :class:`~decimal.Decimal` (``"129e6"``, ``"+1Gi"``, ``".5Gi"``,
    ``"128974848000m"``), parsed by the ``kubernetes`` package's own ``parse_quantity``; byte units
    (``"0B"``, ``"32GiB"``) are read too. Numbers pass through. None when absent or not a quantity."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float | Decimal):
        number = Decimal(value)
        return number if number.is_finite() else None
    text = str(value).strip()
    if _K8S_QUANTITY.match(text):
        try:
            number = _parse_quantity()(text)
        except (ValueError, ArithmeticError):
            return None
        return number if number.is_finite() else None
    m = _BYTES_TEXT.match(text)
    if m and m.group(2) in _BYTE_FACTORS:
        return Decimal(m.group(1)) * _BYTE_FACTORS[m.group(2)]
    return None


def quantity_bytes(value: str | int | float | Decimal | None) -> int | None:
    """``"32Gi"`` -> 34359738368, ``"129e6"`` -> 129000000; a fraction of a byte rounds up, away from
    zero (as Kubernetes' ``Quantity.Value()`` does); None or unparseable -> None."""
    number = quantity_decimal(value)
    if number is None:
        return None
    return int(number.to_integral_value(rounding=ROUND_UP))


@functools.cache
def _parse_quantity() -> Callable[[str], Decimal]:
    """``kubernetes.utils.parse_quantity``, imported on first use (importing ``kubernetes`` takes ~0.2 s)."""
    from kubernetes.utils.quantity import parse_quantity

    return cast(Callable[[str], Decimal], parse_quantity)


def gib(n_bytes: float) -> str:
    """``34359738368`` -> ``"32.0 GiB"``."""
    return f"{n_bytes / 2**30:.1f} GiB"


def bytes_text(n_bytes: float) -> str:
    """``34359738368`` -> ``"34359738368 bytes (32.0 GiB)"``."""
    return f"{int(n_bytes)} bytes ({gib(n_bytes)})"


def parse_time(value: str | datetime | None) -> datetime | None:
    """Lenient RFC 3339 / ``"2023-06-06 12:09:18.211"`` parser, in UTC: naive times are UTC, a time with another
    offset is converted (``10:00:00+02:00`` is 08:00 UTC: reports say "UTC" beside every time). None on failure."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):  # a number, a list, an object where a time is due: not a time
        return None
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
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def iso(value: datetime) -> str:
    """UTC RFC 3339 with a ``Z``."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

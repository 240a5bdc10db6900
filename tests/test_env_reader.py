"""One reader of the environment (issue 20): :func:`diagnosis.config.environment` is the product's one read of
``os.environ``; every other module (``bot``, ``handlers``, ``diagnosis``, ``sandbox``) takes the mapping it gives.

The scan is of the source with :mod:`ast` (a docstring that names ``os.environ`` does not count): ``os.environ``,
``os.getenv`` and their kin through any name ``os`` is imported as, and ``from os import environ``. pydantic-settings
reads ``os.environ`` by default, so only the base that switches that off may import it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.test_import_cycles import product_modules

ROOT = Path(__file__).resolve().parents[1]
#: The one module that reads the process environment.
READER = "diagnosis.config"
#: Any other module that must touch the process environment, with its reason. None does today: a subprocess is
#: given its environment by its parent's default, and no product module starts one.
ALLOWED: dict[str, str] = {}
#: The only module that may import pydantic-settings: ``MappingSettings`` keeps init values as its one source
#: (``settings_customise_sources``), so no model built on it reads ``os.environ``, ``.env`` files or secrets.
SETTINGS_BASE = "diagnosis.envsettings"
_ENV_NAMES = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})
_OS_MODULES = frozenset({"os", "posix", "nt"})


def env_touches(path: Path) -> list[str]:
    """Each place ``path`` reads or writes the process environment, as ``line: source``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    os_names = {"os"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            os_names |= {a.asname or a.name for a in node.names if a.name in _OS_MODULES}
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _ENV_NAMES:
            if isinstance(node.value, ast.Name) and node.value.id in os_names:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and node.module in _OS_MODULES:
            if any(a.name in _ENV_NAMES or a.name == "*" for a in node.names):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def settings_imports(path: Path) -> list[str]:
    """Each import of pydantic-settings (or python-dotenv, which reads ``.env`` files into the environment)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(n.split(".")[0] in ("pydantic_settings", "dotenv") for n in names):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_one_module_reads_the_environment() -> None:
    modules = product_modules()
    offenders = {
        f"{name} ({path.relative_to(ROOT)})": touches
        for name, path in modules.items()
        if name != READER and name not in ALLOWED and (touches := env_touches(path))
    }
    assert not offenders, f"read the environment through diagnosis.config.environment(), not directly: {offenders}"
    assert env_touches(modules[READER]), "the scan finds the reader's own read"
    assert set(ALLOWED) <= set(modules), "an allowed module that no longer exists"


def test_only_the_settings_base_imports_pydantic_settings() -> None:
    modules = product_modules()
    offenders = {
        name: found for name, path in modules.items() if name != SETTINGS_BASE and (found := settings_imports(path))
    }
    assert not offenders, f"build typed settings on diagnosis.envsettings.MappingSettings: {offenders}"
    assert settings_imports(modules[SETTINGS_BASE]), "the scan finds the base's import"


@pytest.mark.parametrize(
    "source",
    [
        "import os\nos.environ.get('X')",
        "import os as o\no.getenv('X')",
        "from os import environ",
        "from os import getenv as g",
        "import os\nos.putenv('X', '1')",
        "import posix\nposix.environ",
    ],
)
def test_the_scan_sees_every_spelling(tmp_path: Path, source: str) -> None:
    path = tmp_path / "m.py"
    path.write_text(source)
    assert env_touches(path)


def test_the_scan_ignores_words_and_other_modules(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text('"""Reads os.environ."""\nimport os\nos.path.exists("x")\nenviron = {}\nenviron.get("X")\n')
    assert env_touches(path) == []


def test_every_read_sees_the_environment_as_it_is_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """No setting is cached: a test's ``monkeypatch.setenv`` is seen by the next read, through every reader."""
    from bot.settings import Settings
    from diagnosis.config import ConfigError, KubeConfig, OsmoConfig, body_seconds, environment, max_body_bytes
    from diagnosis.logs import log_format

    monkeypatch.setenv("WD_DEADLINE", "7")
    monkeypatch.setenv("WD_MAX_BODY_BYTES", "4096")
    assert (body_seconds(), max_body_bytes()) == (7.0, 4096)
    monkeypatch.setenv("WD_DEADLINE", "8")
    assert body_seconds() == 8.0
    monkeypatch.setenv("OSMO_URL", "https://osmo.example/")
    monkeypatch.setenv("OSMO_TOKEN", "t")
    assert OsmoConfig.from_env().url == "https://osmo.example"
    monkeypatch.setenv("KUBECONFIG", "/tmp/kc")
    assert KubeConfig.from_env().kubeconfig == "/tmp/kc"
    monkeypatch.setenv("WD_LOG_FORMAT", "json")
    assert log_format() == "json"
    monkeypatch.setenv("WD_RATE_LIMIT", "3")
    assert Settings.from_env("chat").rate_limit == 3
    monkeypatch.setenv("WD_RATE_LIMIT", "many")
    with pytest.raises(ConfigError, match=r"^WD_RATE_LIMIT must be a whole number, not 'many'$"):
        Settings.from_env("chat")
    monkeypatch.delenv("WD_DEADLINE")
    assert body_seconds() == 60.0
    assert environment().get("WD_DEADLINE") is None
    with pytest.raises(TypeError):
        environment()["WD_DEADLINE"] = "1"  # type: ignore[index]

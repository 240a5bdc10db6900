"""The one base of the typed environment models (``diagnosis.config.CoreEnv``, ``bot.settings.BotEnv``).

Field names are the environment variables. Values come only from the mapping a caller passes to :meth:`read`
(:func:`diagnosis.config.environment`, the one reader of the environment, unless a test or ``doctor`` names
another): pydantic-settings' own sources (``os.environ``, ``.env`` files, secrets directories) are switched off, so
no model is a second, hidden reader. Imported lazily by the core, so a CLI diagnosis never pays for importing
pydantic-settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Self

from pydantic import ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict


class MappingSettings(BaseSettings):
    model_config = SettingsConfigDict(case_sensitive=True, extra="ignore", frozen=True)

    #: What :meth:`read` raises, one line naming the variable (the core: ``ConfigError``, the bot: ``SettingsError``).
    read_error: ClassVar[type[ValueError]] = ValueError

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)

    @classmethod
    def read(cls, env: Mapping[str, str]) -> Self:
        """The settings in ``env`` (empty values count as unset); raises :attr:`read_error` with one line: a
        validator's own error as it is, else the variable and pydantic's message."""
        given = {k: env[k] for k in cls.model_fields if env.get(k) not in (None, "")}
        try:
            return cls.model_validate(given)
        except ValidationError as exc:
            for error in exc.errors():
                cause = (error.get("ctx") or {}).get("error")
                if isinstance(cause, cls.read_error):
                    raise cause from None
            first = exc.errors()[0]
            name = ".".join(str(p) for p in first.get("loc") or ()) or "a setting"
            raise cls.read_error(f"{name}: {first.get('msg')}") from None

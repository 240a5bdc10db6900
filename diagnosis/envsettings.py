"""The one base of the typed environment models (``diagnosis.config.CoreEnv``, ``bot.settings.BotEnv``).

Field names are the environment variables. Values come only from the mapping a caller passes as init values
(``os.environ`` unless a test or ``doctor`` names another): never a second, hidden read of ``os.environ``.
Imported lazily by the core, so a CLI diagnosis never pays for importing pydantic-settings.
"""

from __future__ import annotations

from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict


class MappingSettings(BaseSettings):
    model_config = SettingsConfigDict(case_sensitive=True, extra="ignore", frozen=True)

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

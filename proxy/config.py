"""Settings, layered once by pydantic-settings' own sources: flags (init kwargs) >
`RECOVERY_PROXY_*` environment variables > the config file > a command's fallbacks > defaults;
`trace_settings` also says which layer set each one. The store spec is parsed here, once, into
a `StoreSpec`. Secret settings (`secret_settings`) get no flag and are never printed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)

StoreKind = Literal["memory", "sqlite", "redis"]
Origin = Literal["flag", "env", "file", "fallback", "default"]
SECRET = {"secret": True}  # a field's json_schema_extra: no flag (it would show in `ps`), masked
STORE_SPECS = "memory, sqlite, sqlite:PATH, redis://HOST:PORT/DB or rediss://HOST:PORT/DB"
CONFIG_READERS: dict[str, type[InitSettingsSource]] = {
    ".yaml": YamlConfigSettingsSource,
    ".yml": YamlConfigSettingsSource,
    ".toml": TomlConfigSettingsSource,
}


def default_sqlite_path() -> Path:
    """`sessions.db` in the user's state directory (e.g. ~/.local/state/recovery-proxy)."""
    from platformdirs import user_state_dir

    return Path(user_state_dir("recovery-proxy")) / "sessions.db"


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """Where sessions live: `memory`, a sqlite file (`path`) or a redis server (`url`)."""

    kind: StoreKind
    path: Path | None = None
    url: str | None = None

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(cls.parse)

    @classmethod
    def parse(cls, spec: object) -> StoreSpec:
        """`memory`, `sqlite` (the file in the user's state directory), `sqlite:PATH`,
        `sqlite:///ABS/PATH`, `redis://HOST:PORT/DB`, `rediss://...`; ValueError otherwise."""
        if isinstance(spec, StoreSpec):
            return spec
        if not isinstance(spec, str):
            raise ValueError(f"unknown session store {spec!r}: use {STORE_SPECS}")
        text = spec.strip()
        if text == "memory":
            return cls("memory")
        if text.startswith(("redis://", "rediss://")):
            return cls("redis", url=text)
        if text == "sqlite" or text.startswith("sqlite:"):
            rest = text.removeprefix("sqlite").removeprefix(":").removeprefix("//")
            return cls("sqlite", path=Path(rest).expanduser() if rest else default_sqlite_path())
        raise ValueError(f"unknown session store {text!r}: use {STORE_SPECS}")

    def describe(self) -> str:
        """Safe to print: `memory`, the sqlite file's path, the redis URL without its user and
        password."""
        if self.path is not None:
            return str(self.path)
        return self.kind if self.url is None else mask_url(self.url)

    def __repr__(self) -> str:  # never the redis password
        return f"StoreSpec({self.describe()!r})"


def mask_url(url: str) -> str:
    """`url` with its user and password, if it has either, shown as `***` (a token can be the
    user name alone)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))


class SettingsFileError(Exception):
    """The config file is missing, unreadable, or sets an unknown key or a bad value."""


class Settings(BaseSettings):
    """Everything an operator can set. Validated once, at start-up."""

    model_config = SettingsConfigDict(
        env_prefix="RECOVERY_PROXY_", extra="ignore", env_ignore_empty=True, title="Settings"
    )
    fallbacks: ClassVar[Mapping[str, Any]] = {}  # a command's own defaults: `load_settings`
    origins: ClassVar[dict[str, Origin] | None] = None  # filled in by `trace_settings`

    config: Path | None = Field(
        None, description="YAML or TOML file of settings; flags and environment variables win"
    )
    host: str = Field("127.0.0.1", description="listen address")
    port: int = Field(8787, ge=0, le=65535, description="listen port")
    upstream: str = Field(
        "https://api.openai.com/v1",
        description="OpenAI-compatible base URL, /v1 included (like OPENAI_BASE_URL)",
    )
    anthropic_upstream: str = Field(
        "https://api.anthropic.com", description="Anthropic base URL (like ANTHROPIC_BASE_URL)"
    )
    gemini_upstream: str = Field(
        "https://generativelanguage.googleapis.com", description="Gemini API base URL"
    )
    rules: Path | None = Field(None, description="rules directory; default: the bundled rules")
    extra_rules: Path | None = Field(
        None, description="rules directory on top of --rules (same id replaces)"
    )
    models: Path | None = Field(None, description="LiteLLM model_list YAML: models via litellm")
    prices: Path | None = Field(
        None, description="YAML of model prices (USD per 1M tokens) for the cost of loops"
    )
    read_responses: bool = Field(
        True, description="read relayed responses, after their last byte, for calls and usage"
    )
    store: Annotated[StoreSpec, NoDecode] = Field(  # NoDecode: the variable is no JSON
        "memory", validate_default=True, description="memory | sqlite:PATH | redis://HOST:PORT/DB"
    )
    redis_prefix: str = Field("recovery-proxy:", description="key prefix in a redis store")

    max_body_bytes: int = Field(32 * 1024 * 1024, gt=0, description="largest request body")
    connect_timeout: float = Field(10.0, gt=0, description="connect to the upstream (s)")
    read_timeout: float = Field(600.0, gt=0, description="wait for response headers")
    stream_chunk_timeout: float = Field(300.0, gt=0, description="max gap between stream chunks")
    max_connections: int = Field(200, gt=0, description="upstream connection pool size")
    keepalive_timeout: float = Field(30.0, gt=0, description="idle upstream connections close")
    head_timeout: float = Field(
        10.0, gt=0, description="a client's request head must arrive within this (s)"
    )

    sqlite_busy_timeout: float = Field(1.0, gt=0, description="wait for a locked SQLite file")
    require_credential: bool = Field(
        False, description="refuse requests without a credential (else they share one tenant)"
    )
    session_salt: str = Field(
        "recovery-proxy", description="salt for credential hashes", json_schema_extra=SECRET
    )
    session_ttl_seconds: int = Field(24 * 3600, gt=0, description="idle sessions expire")
    max_sessions: int = Field(10_000, gt=0, description="memory store: sessions kept")
    context_window: int | None = Field(None, description="override the model's context window")
    admin_token: str | None = Field(
        None, description="enables /admin (Bearer token)", json_schema_extra=SECRET
    )
    control_fraction: float = Field(
        0.0, ge=0.0, le=1.0, description="share of sessions in the A/B control arm"
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="recovery-proxy's own loggers (libraries stay at warning)"
    )
    log_format: Literal["text", "json"] = Field(
        "text", description="text, or json: one JSON object per line"
    )
    log_bodies: bool = Field(
        False, description="request lines carry the (rewritten) body: message content"
    )
    hot_reload: bool = Field(True, description="reload the rules when their files change")
    known_fixes: bool = Field(
        False,
        description="offer fixes learned from the same tenant's earlier sessions (never in "
        "the control arm)",
    )
    known_fixes_sessions: int = Field(
        3, ge=1, description="distinct sessions a fix must have resolved before it is offered"
    )

    @field_validator("upstream", "anthropic_upstream", "gemini_upstream")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"upstream must be an http(s) URL, got {value!r}")
        return value.rstrip("/")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """First to last: flags, environment, the config file, the command's fallbacks
        (pydantic-settings adds the defaults at the end); then, when traced, `OriginSource`."""
        sources = (
            init_settings,
            env_settings,
            ConfigFileSource(settings_cls),
            FallbackSource(settings_cls, dict(cls.fallbacks)),
        )
        if cls.origins is None:
            return sources
        return (*sources, OriginSource(settings_cls, cls.origins))


class FallbackSource(InitSettingsSource):
    """A command's own defaults (a class of its own: pydantic-settings names sources by it)."""


class OriginSource(PydanticBaseSettingsSource):
    """Adds no value: records, in `origins`, the first of the sources before it that set each
    setting (from pydantic-settings' `settings_sources_data`), else `default`."""

    KINDS: ClassVar[dict[str, Origin]] = {
        "InitSettingsSource": "flag",
        "EnvSettingsSource": "env",
        "ConfigFileSource": "file",
        "FallbackSource": "fallback",
    }

    def __init__(self, settings_cls: type[BaseSettings], origins: dict[str, Origin]) -> None:
        super().__init__(settings_cls)
        self.origins = origins

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads the other sources' data

    def __call__(self) -> dict[str, Any]:
        found = self.settings_sources_data
        for name in self.settings_cls.model_fields:
            self.origins[name] = next(
                (kind for source, kind in self.KINDS.items() if name in found.get(source, {})),
                "default",
            )
        return {}


class ConfigFileSource(PydanticBaseSettingsSource):
    """The file `config` names (by flag or `RECOVERY_PROXY_CONFIG`), read by pydantic-settings'
    YAML or TOML source; every key must be a setting and every value valid for it."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ reads the whole file

    def __call__(self) -> dict[str, Any]:
        path = self.current_state.get("config")
        return {} if path is None else read_config_file(self.settings_cls, Path(path))


def read_config_file(settings_cls: type[BaseSettings], path: Path) -> dict[str, Any]:
    """The settings in `path`, each checked alone; `SettingsFileError` names the file and the
    key for the first problem."""
    import tomllib

    import yaml

    reader = CONFIG_READERS.get(path.suffix.lower())
    if reader is None:
        raise SettingsFileError(f"config file {path}: use a .yaml, .yml or .toml file")
    if not path.is_file():
        raise SettingsFileError(f"config file {path}: no such file")
    try:
        values = reader(settings_cls, path)()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        reason = " ".join(str(exc).split())
        raise SettingsFileError(f"config file {path}: cannot read it: {reason}") from None
    except (ValueError, TypeError, AttributeError):  # a YAML list or scalar
        raise SettingsFileError(f"config file {path}: not a mapping of settings") from None
    blank = settings_cls.model_construct()
    for key, value in values.items():
        if key not in settings_cls.model_fields or key == "config":
            raise SettingsFileError(f"config file {path}: unknown setting {key!r}")
        try:
            settings_cls.__pydantic_validator__.validate_assignment(blank, key, value)
        except ValidationError as exc:
            reason = exc.errors()[0]["msg"]
            raise SettingsFileError(f"config file {path}: {key}: {reason}") from None
    return values


def load_settings(
    flags: Mapping[str, Any] | None = None, fallbacks: Mapping[str, Any] | None = None
) -> Settings:
    """Settings from, first to last: `flags` (a None value is no flag), `RECOVERY_PROXY_*`,
    the config file, `fallbacks` (a command's own defaults), the defaults. Raises pydantic's
    ValidationError or `SettingsFileError`."""
    given = {name: value for name, value in (flags or {}).items() if value is not None}
    if not fallbacks:
        return Settings(**given)
    layered = type("Settings", (Settings,), {"fallbacks": dict(fallbacks)})
    return layered(**given)


def trace_settings(
    flags: Mapping[str, Any] | None = None, fallbacks: Mapping[str, Any] | None = None
) -> tuple[Settings, dict[str, Origin]]:
    """`load_settings`, and for each setting the layer its value came from."""
    origins: dict[str, Origin] = {}
    given = {name: value for name, value in (flags or {}).items() if value is not None}
    namespace = {"fallbacks": dict(fallbacks or {}), "origins": origins}
    return type("Settings", (Settings,), namespace)(**given), origins


def secret_settings() -> frozenset[str]:
    """The settings with no flag, masked wherever they are shown."""
    return frozenset(
        name for name, field in Settings.model_fields.items() if field.json_schema_extra == SECRET
    )

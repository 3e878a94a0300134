"""Settings: environment variables `RECOVERY_PROXY_*`, overridden by CLI flags."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything an operator can set. Validated once, at start-up."""

    model_config = SettingsConfigDict(env_prefix="RECOVERY_PROXY_", extra="ignore")

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
    store: str = Field("memory", description="memory | sqlite:PATH | redis://HOST:PORT/DB")
    redis_prefix: str = Field("recovery-proxy:", description="key prefix in a redis store")

    max_body_bytes: int = Field(32 * 1024 * 1024, gt=0, description="largest request body")
    connect_timeout: float = Field(10.0, gt=0, description="connect to the upstream (s)")
    read_timeout: float = Field(600.0, gt=0, description="wait for response headers")
    stream_chunk_timeout: float = Field(300.0, gt=0, description="max gap between stream chunks")
    max_connections: int = Field(200, gt=0, description="upstream connection pool size")
    keepalive_timeout: float = Field(30.0, gt=0, description="idle upstream connections close")

    sqlite_busy_timeout: float = Field(1.0, gt=0, description="wait for a locked SQLite file")
    require_credential: bool = Field(
        False, description="refuse requests without a credential (else they share one tenant)"
    )
    session_salt: str = Field("recovery-proxy", description="salt for credential hashes")
    session_ttl_seconds: int = Field(24 * 3600, gt=0, description="idle sessions expire")
    max_sessions: int = Field(10_000, gt=0, description="memory store: sessions kept")
    context_window: int | None = Field(None, description="override the model's context window")
    admin_token: str | None = Field(None, description="enables /admin (Bearer token)")
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

    @field_validator("upstream", "anthropic_upstream", "gemini_upstream")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"upstream must be an http(s) URL, got {value!r}")
        return value.rstrip("/")

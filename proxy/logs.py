"""Logging: plain text or one JSON object per line, and the one line per rewritten request.

The request line carries counts and ids only: never a credential, never message content
(unless the operator sets `RECOVERY_PROXY_LOG_BODIES=true`). It goes to the
`recovery_proxy.requests` logger, so it can be silenced on its own.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
BODY_LIMIT = 64 * 1024  # characters of a body a request line may carry (LOG_BODIES only)

OWN_LOGGERS = ("recovery_proxy", "uvicorn")
# uvicorn logs its start, stop and errors as `uvicorn.error` (its access lines, switched off,
# are `uvicorn.access`): shown as `uvicorn`, they do not read as errors.
SHOWN_NAMES = {"uvicorn.error": "uvicorn"}

requests_log = logging.getLogger("recovery_proxy.requests")


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "message", ...fields}` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": SHOWN_NAMES.get(record.name, record.name),
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if fields:
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    """The usual text line; a request line's fields follow as `key=value`."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        if record.name in SHOWN_NAMES:  # a copy: other handlers see the record as it was
            record = logging.makeLogRecord({**record.__dict__, "name": SHOWN_NAMES[record.name]})
        line = super().format(record)
        fields = getattr(record, "fields", None)
        if not fields:
            return line
        return line + " " + " ".join(f"{k}={_text(v)}" for k, v in fields.items())


def _text(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    text = str(value)
    return orjson.dumps(text).decode() if (" " in text or not text) else text


def configure(level: str, fmt: LogFormat, bodies: bool = False) -> None:
    """One handler on the root logger, in the chosen format. Only recovery-proxy's and
    uvicorn's loggers go below WARNING: at debug, libraries print what they send (the openai
    SDK its request options, litellm the conversations it counts), unless `bodies`."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    chosen = logging.getLevelName(level.upper())
    root.setLevel(chosen if bodies else max(chosen, logging.WARNING))
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(chosen)


def log_request(
    *,
    session: str,
    wire: str,
    results: int,
    failures: int,
    injected: int,
    reapplied: int,
    started: float,
    rules_version: str,
    arm: str = "",
    refused: bool = False,
    body: bytes | None = None,
) -> None:
    """The one line for a rewritten request (cheap when INFO is off: nothing is built)."""
    if not requests_log.isEnabledFor(logging.INFO):
        return
    fields: dict[str, Any] = {
        "session": session,
        "wire": wire,
        "results": results,
        "new_failures": failures,
        "injected": injected,
        "reapplied": reapplied,
        "overhead_ms": round((time.perf_counter() - started) * 1000, 3),
        "rules": rules_version,
    }
    if arm:
        fields["arm"] = arm
    if refused:
        fields["refused"] = True  # answered 409 by the `block` escalation, not forwarded
    if body is not None:
        fields["body"] = body[:BODY_LIMIT].decode("utf-8", "replace")
    requests_log.info("request", extra={"fields": fields})

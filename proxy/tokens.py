"""Token counts and context windows without importing litellm.

Importing litellm takes seconds; start-up must not pay for it (issue 9). Its data is enough:
tiktoken with the rank files litellm vendors (fully offline) and the context windows in its
bundled model map, both read on first use. Until the tokenizer has loaded (a background
thread warms it at start-up) counts are the cheap 4-characters-per-token estimate.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import threading
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("recovery_proxy")
DEFAULT_WINDOW = 128_000
CHARS_PER_TOKEN = 4  # cheap estimate; exact counts only near the limit
_encoding: Any = None


def _litellm_dir() -> Path | None:
    """litellm's package directory, found without importing it."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def load_tokenizer() -> None:
    """Load tiktoken's o200k_base from litellm's vendored rank files (no network)."""
    global _encoding
    if _encoding is not None:
        return
    package = _litellm_dir()
    if package is not None and not os.environ.get("TIKTOKEN_CACHE_DIR"):
        os.environ["TIKTOKEN_CACHE_DIR"] = str(package / "litellm_core_utils" / "tokenizers")
    try:
        import tiktoken

        _encoding = tiktoken.get_encoding("o200k_base")
    except Exception as exc:  # offline without the rank files: keep estimating
        log.warning("tokenizer unavailable, estimating token counts: %s", exc)


def warm_up() -> None:
    """Load the tokenizer and the model map."""
    load_tokenizer()
    _windows()


def warm_up_in_background() -> None:
    """`warm_up()` on a daemon thread; requests never wait for it."""
    threading.Thread(target=warm_up, name="tokenizer-warm-up", daemon=True).start()


@functools.lru_cache(maxsize=4096)
def _exact(text: str) -> int:
    return len(_encoding.encode_ordinary(text))


def count(text: str, model: str = "") -> int:
    """Tokens in `text` (o200k_base; an estimate until the tokenizer has loaded)."""
    if _encoding is None:
        return len(text) // CHARS_PER_TOKEN + 1
    return _exact(text)


def count_messages(messages: list[dict[str, Any]], model: str = "") -> int:
    """Tokens of a whole message list: its texts plus a few per message (near the limit only)."""
    total = 0
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        total += 4 + count(str(content or ""), model)
    return total


@functools.cache
def _windows() -> dict[str, Any]:
    """litellm's bundled model map (name -> info), read once."""
    package = _litellm_dir()
    if package is None:
        return {}
    path = package / "model_prices_and_context_window_backup.json"
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        log.warning("model map unavailable, assuming %d-token windows: %s", DEFAULT_WINDOW, exc)
        return {}
    return data if isinstance(data, dict) else {}


@functools.lru_cache(maxsize=512)
def context_window(model: str, override: int | None = None) -> int:
    """The model's input window: the override, else litellm's model map, else 128k."""
    if override:
        return override
    info = _windows().get(model) or _windows().get(model.rsplit("/", 1)[-1])
    if not isinstance(info, dict):
        return DEFAULT_WINDOW
    window = info.get("max_input_tokens") or info.get("max_tokens")
    return int(window) if isinstance(window, int) and window > 0 else DEFAULT_WINDOW

"""Token counts and context windows, from litellm (tiktoken fallback)."""

from __future__ import annotations

import functools
import logging
import os
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

log = logging.getLogger("recovery_proxy")
DEFAULT_WINDOW = 128_000
CHARS_PER_TOKEN = 4  # cheap estimate; exact counts only near the limit


@functools.cache
def _litellm() -> Any:
    import litellm  # heavy import (seconds): done once, at start-up via warm_up()

    return litellm


def warm_up() -> None:
    """Import litellm and load the tokenizer before the first request needs them."""
    count("warm up", "gpt-4o")


@functools.lru_cache(maxsize=4096)
def count(text: str, model: str) -> int:
    """Tokens in `text` for `model`."""
    try:
        return int(_litellm().token_counter(model=model or "gpt-4o", text=text))
    except Exception:
        return len(text) // CHARS_PER_TOKEN + 1


def count_messages(messages: list[dict[str, Any]], model: str) -> int:
    """Tokens of a whole message list (slow on big requests: only used near the limit)."""
    try:
        return int(_litellm().token_counter(model=model or "gpt-4o", messages=messages))
    except Exception:
        return sum(len(str(m.get("content") or "")) for m in messages) // CHARS_PER_TOKEN


@functools.lru_cache(maxsize=512)
def context_window(model: str, override: int | None = None) -> int:
    """The model's input window: the override, else litellm's model info, else 128k."""
    if override:
        return override
    try:
        info = _litellm().get_model_info(model)
        return int(info.get("max_input_tokens") or info.get("max_tokens") or DEFAULT_WINDOW)
    except Exception:
        return DEFAULT_WINDOW

"""Token counts and context windows from the proxy's own code and data, no tokenizer needed.

A count is an estimate of OpenAI's o200k_base tokenizer, good enough for budgets (block caps,
window headroom): tokenizers cut text into words, numbers, punctuation runs and line breaks
before merging, so the estimate counts where such pieces start, in one pass of `bytes.count`
over the text's character classes (linear time, no regex), with weights fitted by
`python -m bench.tokens --fit`. Measured against tiktoken on the test corpora (bench/
results-tokens.md): mean error about 5%, 95th percentile under 15% on single tool results.

Context windows come from tokens_data/windows.json, a table generated once from litellm's model
map (MIT, tokens_data/LICENSE-litellm; how: tokens_data/README.md).
"""

from __future__ import annotations

import functools
from importlib.resources import files
from typing import Any

import orjson

DEFAULT_WINDOW = 128_000
CHARS_PER_TOKEN = 4  # the first, cheapest guess from a body's size (pipeline._budget_numbers)
MAX_CHARS_PER_TOKEN = 8  # o200k_base: `"a" * 1000` is 125 tokens
CLASSES = "aA0 \n.bu"  # lower, upper, digit, space, line break, punctuation, non-ASCII (below)


def _class_table() -> bytes:
    """Each UTF-8 byte's class. A character's first byte stands for it: `b` a 2-byte character
    (accented, Cyrillic, Greek letters), `u` a longer one (CJK, symbols, emoji)."""
    table = bytearray(b"." * 256)
    for first, last, cls in ((97, 122, b"a"), (65, 90, b"A"), (48, 57, b"0")):
        table[first : last + 1] = cls * (last - first + 1)
    table[ord(" ")] = table[ord("\t")] = ord(" ")
    table[ord("\n")] = table[ord("\r")] = ord("\n")
    table[0xC0:0xE0] = b"b" * 0x20
    table[0xE0:0x100] = b"u" * 0x20
    return bytes(table)


TABLE = _class_table()
CONTINUATION = bytes(range(0x80, 0xC0))  # deleted: one class byte per character


def _after(cls: str, before: str) -> tuple[bytes, ...]:
    """`cls` right after any class in `before`: where a run of `cls` starts."""
    return tuple((b + cls).encode() for b in before)


# (weight, patterns): the estimate is the weighted sum of the patterns' counts in the class
# string. Weights from `python -m bench.tokens --fit` (least squares of the relative error over
# tests/data/tool_results.yaml); the two non-ASCII weights are set by hand (see bench/tokens.py).
FEATURES: tuple[tuple[float, tuple[bytes, ...]], ...] = (
    (0.982, _after("a", "0 \n.bu") + _after("A", "a0 \n.bu")),  # a word (camelCase: two)
    (0.200, (b"AAA",)),  # capitals: 3 more letters of an all-caps word
    (0.778, _after("0", "aA \n.bu")),  # a number
    (0.844, (b"000",)),  # 3 more digits
    (1.377, _after(".", "aA0 \nbu")),  # a run of punctuation
    (-0.997, (b".a", b".A")),  # a mark before a word joins the word's token
    (0.689, (b"..a", b"..A")),  # unless it ends a longer run
    (1.289, _after("\n", "aA0 bu")),  # a line break (after punctuation it joins that token)
    (0.733, (b"\n  ",)),  # an indent
    (0.530, (b"a  ", b"A  ", b"0  ", b".  ", b" 0")),  # spaces that are no word's prefix
    (0.3, (b"b",)),  # a 2-byte character
    (0.7, (b"u",)),  # a 3- or 4-byte character
)


def classes(text: str) -> bytes:
    """The text as one class byte per character, after a space (a start like any other)."""
    return b" " + text.encode("utf-8", "surrogatepass").translate(TABLE, CONTINUATION)


def features(text: str) -> list[int]:
    """How often each feature's patterns occur in `text` (the counts `FEATURES` weighs)."""
    string = classes(text)
    return [sum(string.count(p) for p in patterns) for _, patterns in FEATURES]


@functools.lru_cache(maxsize=4096)
def count(text: str, model: str = "") -> int:
    """Estimated o200k_base tokens in `text`: at least 1 for any text, and one per
    `MAX_CHARS_PER_TOKEN` characters (long runs of one character, which the patterns see as one
    word or one run, cost about that much)."""
    if not text:
        return 0
    weights = (weight for weight, _ in FEATURES)
    estimate = round(sum(w * n for w, n in zip(weights, features(text), strict=True)))
    return max(1, estimate, len(text) // MAX_CHARS_PER_TOKEN)


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
def _windows() -> dict[str, int]:
    """Model name -> input window, read once from the bundled table."""
    data = orjson.loads((files(__package__) / "tokens_data" / "windows.json").read_bytes())
    return {k: v for k, v in data.items() if isinstance(v, int) and v > 0}


@functools.lru_cache(maxsize=512)
def context_window(model: str, override: int | None = None) -> int:
    """The model's input window: the override, else the table (the exact name, then the part
    after the last "/"), else 128k."""
    if override:
        return override
    windows = _windows()
    return windows.get(model) or windows.get(model.rsplit("/", 1)[-1]) or DEFAULT_WINDOW

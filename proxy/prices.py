"""What tokens cost: USD per million input, cached-input and output tokens, by model.

Looked up in the operator's own YAML (`RECOVERY_PROXY_PRICES`) first, then in litellm's model
map when litellm is installed (its JSON file is read; litellm itself is never imported), then
in the bundled tokens_data/prices.yaml. Loaded on first use, which the response side does off
the critical path."""

from __future__ import annotations

import functools
import importlib.util
import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import orjson
import yaml

LITELLM_MAP = "model_prices_and_context_window_backup.json"
DATE_SUFFIX = re.compile(r"-(?:20\d{6}|\d{4}-\d{2}-\d{2})$")


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens."""

    input: float
    cached: float
    output: float

    def cost(self, input: int, cached: int, output: int) -> float:
        """USD for a response: uncached input, cached input, output."""
        fresh = max(0, input - cached)
        return (fresh * self.input + cached * self.cached + output * self.output) / 1e6


def _from_yaml(text: str) -> dict[str, Price]:
    data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ValueError("a price file maps model names to {input, cached, output}")
    out: dict[str, Price] = {}
    for model, entry in data.items():
        if not isinstance(entry, dict) or "input" not in entry or "output" not in entry:
            raise ValueError(f"price of {model!r}: needs input and output (USD per 1M tokens)")
        cached = entry.get("cached", entry["input"])
        out[str(model)] = Price(float(entry["input"]), float(cached), float(entry["output"]))
    return out


@functools.cache
def _from_litellm() -> dict[str, Price]:
    """litellm's model map, read from its package without importing litellm ({} if absent);
    once per process."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations))) / LITELLM_MAP
    if not path.is_file():
        return {}
    out: dict[str, Price] = {}
    for model, entry in orjson.loads(path.read_bytes()).items():
        if not isinstance(entry, dict):
            continue
        per_in, per_out = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if isinstance(per_in, int | float) and isinstance(per_out, int | float):
            cached = entry.get("cache_read_input_token_cost")
            cached = cached if isinstance(cached, int | float) else per_in
            out[model] = Price(per_in * 1e6, cached * 1e6, per_out * 1e6)
    return out


class Prices:
    """The price table: `find(model)` or None."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.table: dict[str, Price] | None = None

    def load(self) -> dict[str, Price]:
        if self.table is None:
            bundled = files("recovery_proxy.tokens_data").joinpath("prices.yaml").read_text()
            table = _from_yaml(bundled) | _from_litellm()
            if self.path is not None:
                table |= _from_yaml(self.path.read_text())
            self.table = table
        return self.table

    def find(self, model: str) -> Price | None:
        table = self.load()
        for name in candidates(model):
            if name in table:
                return table[name]
        return None


def candidates(model: str) -> list[str]:
    """`models/gemini-2.5-pro`, `anthropic/claude-sonnet-4-5-20250929`: the name as sent,
    without its prefix, without a date suffix."""
    names = [model]
    bare = model.removeprefix("models/").rpartition("/")[2]
    names.append(bare)
    names.append(DATE_SUFFIX.sub("", bare))
    return list(dict.fromkeys(n for n in names if n))


def check_file(path: Path | None) -> None:
    """At start-up: a ValueError, in one line naming the file, if the price file cannot be
    used."""
    if path is None:
        return
    try:
        _from_yaml(path.read_text())
    except OSError as exc:
        raise ValueError(f"prices file {path}: {exc.strerror or exc}") from None
    except (ValueError, TypeError, yaml.YAMLError) as exc:
        raise ValueError(f"prices file {path}: {str(exc).splitlines()[0]}") from None

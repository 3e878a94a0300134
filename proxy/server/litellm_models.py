"""The `--models` file: LiteLLM's own `model_list` YAML, validated once at start-up.

    model_list:
      - model_name: claude-sonnet              # what clients send as "model"
        litellm_params:
          model: anthropic/claude-sonnet-4-5
          api_key: os.environ/ANTHROPIC_API_KEY  # secrets only from the environment
          api_base: https://api.anthropic.com    # optional

A string `os.environ/NAME` anywhere in `litellm_params` is read from the environment at load;
a missing variable is an error naming the file and the field. litellm itself is an extra
(`recovery-proxy[litellm]`): without it the file is refused at start-up in one line. Nothing
here imports litellm (importing it takes seconds).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from recovery_proxy.rules.load import yaml_problem

ENV_PREFIX = "os.environ/"
LITELLM_MISSING = "--models needs litellm: pip install 'recovery-proxy[litellm]'"


class ModelsError(ValueError):
    """The models file is unusable; the message names the file and the field."""


def load_models(path: Path, environ: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """`model_name` -> `litellm_params` (secrets resolved) from a LiteLLM `model_list` file."""
    if not litellm_installed():
        raise ModelsError(LITELLM_MISSING)
    env = os.environ if environ is None else environ
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ModelsError(yaml_problem(path, exc)) from None
    entries = data.get("model_list") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ModelsError(f"{path}: model_list: expected a non-empty list of models")
    models: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(entries):
        where = f"{path}: model_list[{i}]"
        if not isinstance(entry, dict):
            raise ModelsError(f"{where}: expected a mapping with model_name and litellm_params")
        name = entry.get("model_name")
        if not isinstance(name, str) or not name:
            raise ModelsError(f"{where}.model_name: expected a non-empty string")
        if name in models:
            raise ModelsError(f"{where}.model_name: {name!r} is listed twice")
        params = entry.get("litellm_params")
        if not isinstance(params, dict):
            raise ModelsError(f"{where}.litellm_params: expected a mapping")
        if not isinstance(params.get("model"), str) or not params["model"]:
            raise ModelsError(f"{where}.litellm_params.model: expected a string like anthropic/...")
        models[name] = {
            key: _resolve(value, f"{where}.litellm_params.{key}", env)
            for key, value in params.items()
        }
    return models


def litellm_installed() -> bool:
    """Whether litellm can be imported, found without importing it."""
    try:
        return importlib.util.find_spec("litellm") is not None
    except (ImportError, ValueError):
        return False


def _resolve(value: Any, field: str, env: Mapping[str, str]) -> Any:
    """A value with `os.environ/NAME` read from the environment."""
    if isinstance(value, str) and value.startswith(ENV_PREFIX):
        name = value[len(ENV_PREFIX) :]
        if name not in env:
            raise ModelsError(f"{field}: environment variable {name} is not set")
        return env[name]
    if isinstance(value, dict):
        return {k: _resolve(v, f"{field}.{k}", env) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, f"{field}[{i}]", env) for i, v in enumerate(value)]
    return value

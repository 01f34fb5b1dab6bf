#!/usr/bin/env bash
# The Python binding's tests: a venv at target/venv-python with maturin
# and pytest (PyPI), the abi3 wheel built with maturin and installed, then
# pytest on bindings/python/tests. Fails loudly if anything cannot be
# installed: the tests are never skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
VENV="$ROOT/target/venv-python"
WHEELS="$ROOT/target/wheels-python"

fail() {
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
    echo "FAILED: $*" >&2
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
    exit 1
}

if ! command -v python3 >/dev/null 2>&1; then
    echo "python3 is missing: installing it (apt-get)"
    { apt-get update -qq && apt-get install -y -qq python3 >/dev/null; } \
        || fail "cannot install python3 (apt-get)"
fi
if ! "$VENV/bin/python" -c "import pytest" >/dev/null 2>&1 \
    || [ ! -x "$VENV/bin/maturin" ]; then
    rm -rf "$VENV"
    if ! python3 -m venv "$VENV" 2>/dev/null; then
        echo "python3 -m venv failed: installing python3-venv (apt-get)"
        rm -rf "$VENV"
        { apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null \
            && python3 -m venv "$VENV"; } \
            || fail "cannot create a Python venv at $VENV (python3-venv)"
    fi
    "$VENV/bin/pip" install -q --upgrade pip >/dev/null 2>&1 || true
    "$VENV/bin/pip" install -q maturin pytest \
        || fail "cannot install maturin and pytest from PyPI into $VENV"
fi

# A debug wheel for the tests; HERALD_PY_RELEASE=1: a release one (for
# bench.py, see the README).
rm -rf "$WHEELS"
(cd bindings/python && "$VENV/bin/maturin" build ${HERALD_PY_RELEASE:+--release} -o "$WHEELS") \
    || fail "maturin could not build the herald wheel"
"$VENV/bin/pip" install -q --force-reinstall --no-deps "$WHEELS"/herald-*.whl \
    || fail "cannot install the herald wheel"
"$VENV/bin/python" -m pytest -q bindings/python/tests "$@"

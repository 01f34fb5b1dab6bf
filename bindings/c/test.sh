#!/usr/bin/env bash
# The C ABI from C: builds libherald_c, compiles tests/c/test_api.c and
# examples/epoll_server.c against include/herald.h, and runs the test
# plainly, under AddressSanitizer (+ UBSan), and under valgrind when it is
# installed (this script installs it when it can); all on a library
# built without mimalloc (below). Called by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/target/c-tests
mkdir -p "$out"

have() { command -v "$1" >/dev/null 2>&1; }
if ! have cc; then
    echo "bindings/c: no C compiler (cc): installing build-essential" >&2
    (apt-get update -qq && apt-get install -y -qq build-essential) >&2 ||
        { echo "bindings/c: FAILED: no C compiler and none could be installed" >&2; exit 1; }
fi
if ! have valgrind; then
    (apt-get install -y -qq valgrind >/dev/null 2>&1 ||
        (apt-get update -qq && apt-get install -y -qq valgrind >/dev/null 2>&1)) || true
fi

# The C library's malloc, not mimalloc (the default feature): ASan and
# valgrind see only what goes through it, and the lease test relies on
# ASan seeing a use after free of the engine's memory.
cargo build -q -p herald-c --no-default-features
lib=$root/target/debug
flags=(-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -I bindings/c/include)

echo "== C ABI: test_api (dynamic library)"
cc "${flags[@]}" -O1 bindings/c/tests/c/test_api.c -o "$out/test_api" \
    -L "$lib" -lherald_c -lpthread -Wl,-rpath,"$lib"
"$out/test_api"

echo "== C ABI: test_api under AddressSanitizer and UBSan (static library)"
cc "${flags[@]}" -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
    bindings/c/tests/c/test_api.c -o "$out/test_api_asan" \
    "$lib/libherald_c.a" -lpthread -ldl -lm
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1 \
    "$out/test_api_asan"

if have valgrind; then
    echo "== C ABI: test_api under valgrind"
    valgrind -q --error-exitcode=3 --leak-check=full --show-possibly-lost=no --errors-for-leak-kinds=definite \
        "$out/test_api"
else
    echo "bindings/c: WARNING: valgrind is not installed and could not be; skipped it (ASan ran)" >&2
fi

echo "== C ABI: the epoll example serves 1,000 watches"
cc "${flags[@]}" -O2 bindings/c/examples/epoll_server.c -o "$out/epoll_server" \
    -L "$lib" -lherald_c -lpthread -Wl,-rpath,"$lib"
"$out/epoll_server" --watches 1000 --changes 2000

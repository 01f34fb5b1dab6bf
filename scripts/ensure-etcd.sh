#!/usr/bin/env bash
# Installs the etcd server builds Herald's etcd tests and benchmarks run,
# into target/tools/ of the repository, without changing the system's state
# (no dpkg -i, nothing written under /etc/apt):
#
#   target/tools/etcd-3.5/usr/bin/etcd   etcd >= 3.5.13, Debian trixie's
#                                        etcd-server
#   target/tools/etcd-3.4/usr/bin/etcd   etcd 3.4.x, Debian bookworm's
#                                        etcd-server; it has etcd bug #15220
#                                        (progress notifications that can
#                                        skip events), which one test needs
#
# Each comes from a private apt tree under target/tools/apt-<suite>/ (its own
# sources file, lists, cache and an empty dpkg status), fetched with
# `apt-get download` and unpacked with `dpkg-deb -x`. It also makes sure
# `protoc` is installed (etcd-client's build needs it); that one is a system
# package (apt-get install protobuf-compiler).
#
# Idempotent: a build already unpacked that runs `--version` is kept.
#
# Usage:   eval "$(scripts/ensure-etcd.sh)"
#          (in a `set -e` script, `exports="$(scripts/ensure-etcd.sh)"` then
#          `eval "$exports"`: a failure inside `eval "$(...)"` is not seen)
# stdout:  only `export HERALD_ETCD=...` and `export HERALD_ETCD_OLD=...`
#          lines; all other output goes to stderr.
# On any failure: a `FAILED: ...` message on stderr and a non-zero exit.
set -euo pipefail

readonly MIN_VERSION="3.5.13"

fail() {
    {
        echo
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo "FAILED: $*"
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    } >&2
    exit 1
}
say() { echo "ensure-etcd: $*" >&2; }

trap 'fail "scripts/ensure-etcd.sh: command failed (line $LINENO): $BASH_COMMAND"' ERR

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/target/tools"
mkdir -p "$TOOLS" || fail "cannot create $TOOLS"

# The main Debian archive's URI and keyring, from the machine's own sources
# (the security and updates suites are left out: only one package is fetched).
SYSTEM_SOURCES=/etc/apt/sources.list.d/debian.sources
URIS="http://deb.debian.org/debian"
SIGNED_BY="/usr/share/keyrings/debian-archive-keyring.gpg"
if [[ -r "$SYSTEM_SOURCES" ]]; then
    # The first stanza whose URIs are not the security archive.
    read -r found_uris found_signed_by < <(awk '
        function flush() {
            if (uris != "" && uris !~ /security/ && !done) {
                print uris, (signed == "" ? "-" : signed); done = 1
            }
            uris = ""; signed = ""
        }
        /^[[:space:]]*$/ { flush(); next }
        /^URIs:/      { uris = $2 }
        /^Signed-By:/ { signed = $2 }
        END { flush() }
    ' "$SYSTEM_SOURCES") || true
    if [[ -n "${found_uris:-}" ]]; then
        URIS="$found_uris"
        if [[ "${found_signed_by:-}" != "-" ]]; then
            SIGNED_BY="$found_signed_by"
        fi
    fi
fi

# runs_version <binary>: true when the binary exists and runs `--version`.
runs_version() {
    [[ -x "$1" ]] && "$1" --version >/dev/null 2>&1
}

# version_of <binary>: "X.Y.Z" from `etcd --version` ("etcd Version: 3.5.16").
version_of() {
    "$1" --version 2>/dev/null | sed -n 's/^etcd Version: *\([0-9][0-9]*\.[0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n1
}

# version_ge A B: true when dotted version A >= B.
version_ge() {
    [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]
}

# fetch_etcd <suite> <destination dir>: downloads the suite's etcd-server .deb
# through a private apt tree and unpacks it into the destination.
fetch_etcd() {
    local suite="$1" dest="$2"
    local apt="$TOOLS/apt-$suite"
    rm -rf "$apt"
    mkdir -p "$apt/sources.list.d" "$apt/lists/partial" "$apt/cache/archives/partial" \
        "$apt/download" || fail "cannot create the private apt tree $apt"
    : >"$apt/status"
    cat >"$apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $URIS
Suites: $suite
Components: main
Signed-By: $SIGNED_BY
EOF
    local -a opts=(
        -o "Dir::Etc::SourceList=/dev/null"
        -o "Dir::Etc::SourceParts=$apt/sources.list.d"
        -o "Dir::State::Lists=$apt/lists"
        -o "Dir::State::status=$apt/status"
        -o "Dir::Cache=$apt/cache"
        -o "Dir::Cache::pkgcache="
        -o "Dir::Cache::srcpkgcache="
        -o "APT::Sandbox::User=root"
    )
    say "apt-get update ($suite, private tree $apt)"
    apt-get -q "${opts[@]}" update >&2 \
        || fail "apt-get update of Debian $suite (private tree $apt)"
    say "apt-get download etcd-server ($suite)"
    (cd "$apt/download" && apt-get -q "${opts[@]}" download etcd-server) >&2 \
        || fail "apt-get download etcd-server from Debian $suite"
    local deb
    deb="$(ls "$apt/download"/etcd-server_*.deb 2>/dev/null | head -n1 || true)"
    [[ -n "$deb" ]] || fail "no etcd-server .deb was downloaded from Debian $suite"
    rm -rf "$dest"
    mkdir -p "$dest"
    dpkg-deb -x "$deb" "$dest" || fail "dpkg-deb -x $deb $dest"
    say "unpacked $(basename "$deb") into $dest"
}

# ensure <suite> <destination dir>: the binary, downloaded if needed.
ensure() {
    local suite="$1" dest="$2"
    local bin="$dest/usr/bin/etcd"
    if runs_version "$bin"; then
        say "$bin is present ($(version_of "$bin"))"
    else
        fetch_etcd "$suite" "$dest"
        runs_version "$bin" || fail "$bin (from Debian $suite) does not run \`--version\`"
    fi
}

# protoc (a system package).
if ! command -v protoc >/dev/null 2>&1; then
    say "protoc is missing: installing protobuf-compiler (apt-get)"
    { apt-get update -qq && apt-get install -y -qq protobuf-compiler; } >&2 \
        || fail "apt-get install protobuf-compiler (protoc is needed to build etcd-client)"
    command -v protoc >/dev/null 2>&1 || fail "protoc is still missing after installing protobuf-compiler"
fi

ETCD="$TOOLS/etcd-3.5/usr/bin/etcd"
ETCD_OLD="$TOOLS/etcd-3.4/usr/bin/etcd"

ensure trixie "$TOOLS/etcd-3.5"
version="$(version_of "$ETCD")"
[[ -n "$version" ]] || fail "cannot parse the version of $ETCD from \`etcd --version\`"
if ! version_ge "$version" "$MIN_VERSION"; then
    fail "$ETCD is etcd $version; Herald needs etcd >= $MIN_VERSION (delete $TOOLS/etcd-3.5 and rerun)"
fi

ensure bookworm "$TOOLS/etcd-3.4"
old_version="$(version_of "$ETCD_OLD")"
case "$old_version" in
    3.4.*) ;;
    *) fail "$ETCD_OLD is etcd '${old_version}', expected 3.4.x (delete $TOOLS/etcd-3.4 and rerun)" ;;
esac

say "etcd $version: $ETCD"
say "etcd $old_version: $ETCD_OLD"
printf 'export HERALD_ETCD=%q\n' "$ETCD"
printf 'export HERALD_ETCD_OLD=%q\n' "$ETCD_OLD"

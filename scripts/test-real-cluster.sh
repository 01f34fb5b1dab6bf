#!/usr/bin/env bash
# The differential test against the real kube-apiserver (testkit/client-go):
# gets etcd (scripts/ensure-etcd.sh) and kube-apiserver v1.37.2
# (scripts/ensure-kube-apiserver.sh, built from source on first use: ~7 min
# cold), builds herald-server (release), then runs the Go test, which starts
# its own etcd, apiserver and herald-server on loopback and compares what
# Herald serves with what the apiserver serves (testkit/client-go/README.md),
# once for each upstream in HERALD_DIFF_UPSTREAMS (default "etcd apiserver":
# herald-server reading the apiserver's etcd, then herald-server in front of
# the apiserver itself, --kubeconfig).
#
# Usage:   scripts/test-real-cluster.sh [extra `go test` flags, e.g. -run X]
# Needs:   go (>= 1.26), kubectl on PATH, cargo, and what ensure-etcd.sh
#          installs (protoc). HERALD_DIFF_ENCRYPTION=1 encrypts secrets at
#          rest (see the README).
# Exits non-zero on any failure, with a FAILED: line saying what.
set -euo pipefail

fail() {
    {
        echo
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo "FAILED: $*"
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    } >&2
    exit 1
}
say() { echo "test-real-cluster: $*" >&2; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

command -v go >/dev/null || fail "no go on PATH: the test is a Go module (go >= 1.26)"
command -v kubectl >/dev/null || fail "no kubectl on PATH: the test compares kubectl's output against both servers"
command -v cargo >/dev/null || fail "no cargo on PATH: herald-server is built from this tree"

exports="$(scripts/ensure-etcd.sh)" || fail "could not get etcd (scripts/ensure-etcd.sh, see above)"
eval "$exports"
exports="$(scripts/ensure-kube-apiserver.sh)" || fail "could not get kube-apiserver (scripts/ensure-kube-apiserver.sh, see above)"
eval "$exports"
[[ -x "${HERALD_ETCD:-}" ]] || fail "HERALD_ETCD is not an executable after scripts/ensure-etcd.sh"
[[ -x "${HERALD_KUBE_APISERVER:-}" ]] || fail "HERALD_KUBE_APISERVER is not an executable after scripts/ensure-kube-apiserver.sh"

if [[ -n "${HERALD_SERVER:-}" ]]; then
    # The test command passes the debug build it already made.
    say "herald-server given: $HERALD_SERVER"
else
    say "building herald-server (cargo build --release -p herald-server --bin herald-server)"
    cargo build --release -p herald-server --bin herald-server >&2 ||
        fail "cargo build --release -p herald-server --bin herald-server (see above)"
    target_dir="$(cargo metadata --format-version 1 --no-deps | grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)" ||
        fail "cargo metadata: cannot find the target directory"
    export HERALD_SERVER="$target_dir/release/herald-server"
fi
[[ -x "$HERALD_SERVER" ]] || fail "no herald-server at $HERALD_SERVER after the build"

# The fleet test's kube-rs watchers (server/examples/fleet_watchers.rs).
if [[ -z "${HERALD_FLEET_WATCHERS:-}" ]]; then
    # The test command's `cargo test --workspace` builds it (examples are
    # built with the tests); the same selection here rebuilds nothing.
    # Cargo unifies features over the targets selected: `-p herald-server
    # --example fleet_watchers` compiled tokio, syn and their dependents
    # again (94 s of a warm run).
    say "building the fleet test's kube-rs watchers (cargo test --workspace --no-run)"
    cargo test --workspace --no-run >&2 ||
        fail "cargo test --workspace --no-run (see above)"
    target_dir="$(cargo metadata --format-version 1 --no-deps | grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)" ||
        fail "cargo metadata: cannot find the target directory"
    export HERALD_FLEET_WATCHERS="$target_dir/debug/examples/fleet_watchers"
fi
[[ -x "$HERALD_FLEET_WATCHERS" ]] || fail "no fleet_watchers at $HERALD_FLEET_WATCHERS after the build"
command -v haproxy >/dev/null 2>&1 || fail "haproxy is not on PATH (apt-get install haproxy): the fleet test needs it"

say "etcd: $HERALD_ETCD"
say "kube-apiserver: $HERALD_KUBE_APISERVER"
say "herald-server: $HERALD_SERVER"
say "fleet_watchers: $HERALD_FLEET_WATCHERS"
say "haproxy: $(command -v haproxy)"
say "kubectl: $(command -v kubectl)"
# The upstreams' runs at once (each its own cluster on free ports): the
# apiserver's mostly waits on the apiserver's bookmarks, not on the CPU.
(cd testkit/client-go && go vet ./... && go test -count=1 -run XXX ./... >/dev/null) ||
    fail "the differential test does not build (go vet / go test -run XXX in testkit/client-go)"
logs="$(mktemp -d)"
declare -A pids
for upstream in ${HERALD_DIFF_UPSTREAMS:-etcd apiserver}; do
    say "HERALD_DIFF_UPSTREAM=$upstream go test -count=1 -timeout 15m -v ./... in testkit/client-go (log: $logs/$upstream.log)"
    (cd testkit/client-go && HERALD_DIFF_UPSTREAM="$upstream" go test -count=1 -timeout 15m -v ./... "$@") >"$logs/$upstream.log" 2>&1 &
    pids[$upstream]=$!
done
start=$(date +%s)
failed=()
for upstream in "${!pids[@]}"; do
    if wait "${pids[$upstream]}"; then
        say "herald-server reading $upstream: passed ($(($(date +%s) - start)) s since the runs began)"
    else
        failed+=("$upstream")
    fi
done
for upstream in ${HERALD_DIFF_UPSTREAMS:-etcd apiserver}; do
    echo "===== herald-server reading $upstream: testkit/client-go's output ====="
    cat "$logs/$upstream.log"
done
rm -rf "$logs"
((${#failed[@]} == 0)) ||
    fail "the differential test against the real kube-apiserver failed with herald-server reading: ${failed[*]} (the DIFF lines above list what differs)"
say "passed in $(($(date +%s) - start)) s"

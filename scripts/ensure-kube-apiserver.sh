#!/usr/bin/env bash
# Builds the real kube-apiserver the differential tests run against, from the
# k8s.io/kubernetes Go module, into target/tools/ of the repository:
#
#   target/tools/kube-apiserver-<version>   (version: KUBE_VERSION below)
#
# k8s.io/kubernetes replaces each of its k8s.io/* staging modules with a
# ./staging path, so `go install k8s.io/kubernetes/cmd/kube-apiserver@v1.x`
# fails. testkit/kube-apiserver is a module of ours that requires it and pins
# every staging module by `replace` to its published v0.x version; this
# script runs `go build` in it. Go's module and build caches stay where the
# machine keeps them (`go env GOMODCACHE GOCACHE`).
#
# Cold (empty module and build caches): 12 s of module downloads, then
# 828 CPU-seconds of compiling (720 user + 107 system, measured
# 2026-11-27 with GOCACHE and GOMODCACHE empty): about 7 minutes on 2 idle
# cores (16 min measured on 2 cores shared with a load of 10-20). Cached:
# a binary that answers --version is kept, in seconds.
#
# Runs are serialized by a lock (target/tools/kube-apiserver.lock): .ci/run
# starts one early, niced, in the background, and the test command's own
# run waits for it and finds the binary built.
#
# Usage:   eval "$(scripts/ensure-kube-apiserver.sh)"
# stdout:  only `export HERALD_KUBE_APISERVER=...`; all else on stderr.
# On any failure: a `FAILED: ...` message on stderr and a non-zero exit.
set -euo pipefail

readonly KUBE_VERSION="v1.37.2"

fail() {
    {
        echo
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo "FAILED: $*"
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    } >&2
    exit 1
}
say() { echo "ensure-kube-apiserver: $*" >&2; }

root="$(cd "$(dirname "$0")/.." && pwd)"
module="$root/testkit/kube-apiserver"
tools="$root/target/tools"
bin="$tools/kube-apiserver-$KUBE_VERSION"

grep -q "k8s.io/kubernetes $KUBE_VERSION" "$module/go.mod" ||
    fail "$module/go.mod does not require k8s.io/kubernetes $KUBE_VERSION"
command -v go >/dev/null || fail "no go on PATH (the polyglot machine kind has Go 1.26)"

mkdir -p "$tools"
exec 9>"$tools/kube-apiserver.lock"
flock 9

if [[ -x "$bin" ]] && "$bin" --version 2>/dev/null | grep -q "$KUBE_VERSION"; then
    say "kept $bin"
else
    mkdir -p "$tools"
    say "building kube-apiserver $KUBE_VERSION from the k8s.io/kubernetes module (cold: ~7 min on 2 cores)"
    start=$(date +%s)
    minor="${KUBE_VERSION#v1.}"
    minor="${minor%%.*}"
    pkg=k8s.io/component-base/version
    ldflags="-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
    (cd "$module" && go build -trimpath -ldflags "$ldflags" -o "$bin.tmp" k8s.io/kubernetes/cmd/kube-apiserver) >&2 ||
        fail "go build of k8s.io/kubernetes/cmd/kube-apiserver $KUBE_VERSION in $module (see above)"
    mv "$bin.tmp" "$bin"
    say "built $bin in $(($(date +%s) - start)) s"
fi
"$bin" --version 2>/dev/null | grep -q "$KUBE_VERSION" || fail "$bin --version does not say $KUBE_VERSION"
echo "export HERALD_KUBE_APISERVER=$bin"

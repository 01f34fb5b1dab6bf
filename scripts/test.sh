#!/usr/bin/env bash
# Every test: the engine's layout check; the workspace's unit, integration,
# property, differential and stress tests and doctests, the etcd upstream's
# against real etcd servers and a 3-member cluster (installed first by
# scripts/ensure-etcd.sh, with protoc), the HTTP front's against kube-rs,
# kubectl and hostile clients; the Python kubernetes client against
# herald-server (pytest, in a venv this creates); the C ABI's test
# program from C (plainly, under AddressSanitizer and valgrind, which it
# installs) and its epoll example; the Go binding's tests under -race
# (bindings/go/test.sh, which gets a Go toolchain); the Python binding's
# pytest suite (bindings/python/test.sh: a maturin wheel in
# target/venv-python); the differential test against the real
# kube-apiserver (built from the k8s.io/kubernetes module by
# scripts/ensure-kube-apiserver.sh) with kubectl and client-go
# (scripts/test-real-cluster.sh), access control against its decisions,
# perf's apiserver-fanout and fleet-restart (HAProxy, installed from
# Debian's packages) at their smoke sizes; the loom models;
# miri on the engine's concurrent modules (when the nightly miri component
# can be had).
# `.ci/run` calls this after its format and lint gates.
#
# `scripts/test.sh fast`: the edit-compile-test loop's tier: the layout
# gates (the engine's layers, circles, long files), the engine's and the
# Kubernetes shape's (herald-kube) tests, offline, nothing installed, no
# protoc (a few minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = fast ]; then
    echo "== [$(date -u +%T)] fast tier: layout, the engine's and the Kubernetes shape's tests"
    python3 scripts/check-layout.py
    python3 scripts/check-crates.py
    cargo test -p herald -p herald-kube
    exit 0
fi

# Every Go build below compiles as the kube-apiserver's does (-trimpath,
# scripts/ensure-kube-apiserver.sh): the flags are part of Go's cache key,
# so client-go, apimachinery and k8s.io/api (the same versions in
# testkit/client-go and testkit/kube-apiserver) are compiled once, by the
# apiserver's build, rather than again for the identity tool and the
# differential test (whose build took 250 s of a cold run without it).
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"

echo "== [$(date -u +%T)] engine, object-manager and HTTP front layout (the engine's map of layers, engine/README.md: no upward import; no import circle between files, none over 900 lines)"
if ! command -v python3 >/dev/null 2>&1; then
    echo "python3 is missing: installing it (apt-get)"
    { apt-get update -qq && apt-get install -y -qq python3 >/dev/null; } \
        || { echo "FAILED to install python3: the layout check cannot run" >&2; exit 1; }
fi
python3 scripts/check-layout.py --self-test
python3 scripts/check-layout.py
python3 scripts/check-layout.py kubelet/src
python3 scripts/check-layout.py server/src
# Every crate: the layout above, and dependencies pointing inward (the
# debts it still lets through are named, each with what removes it).
python3 scripts/check-crates.py --self-test
python3 scripts/check-crates.py

echo "== [$(date -u +%T)] etcd and protoc for the etcd upstream's tests (scripts/ensure-etcd.sh)"
# Fails loudly if it cannot install them: the etcd tests are never skipped.
exports="$(scripts/ensure-etcd.sh)"
eval "$exports"
echo "etcd: $HERALD_ETCD ($("$HERALD_ETCD" --version | head -1)); old: $HERALD_ETCD_OLD"

echo "== [$(date -u +%T)] the real kube-apiserver, built in the background (scripts/ensure-kube-apiserver.sh, log: target/tools/kube-apiserver-build.log)"
# Go's build of k8s.io/kubernetes takes minutes cold: it runs niced beside
# the cargo tests below (which wait on servers much of the time), then the
# schema generator checks kube/schema/ against the real k8s.io/api types.
# Both are waited for, and their failures fail this script, before the
# differential test uses them.
mkdir -p target/tools
( nice -n 10 scripts/ensure-kube-apiserver.sh > target/tools/kube-apiserver.env \
    && (cd kube/schema/gen && nice -n 10 go run .) > target/tools/schema-now.json ) \
    > target/tools/kube-apiserver-build.log 2>&1 &
kube_build=$!

echo "== [$(date -u +%T)] cargo test --workspace (the etcd tests start their own servers on 127.0.0.1)"
if ! command -v kubectl >/dev/null 2>&1; then
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
    echo "kubectl IS NOT ON THE PATH: herald-server's kubectl tests will not run" >&2
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
fi
cargo test --workspace

echo "== [$(date -u +%T)] the Python kubernetes client against herald-server (pytest, in target/venv-http)"
VENV=target/venv-http
if ! "$VENV/bin/python" -c "import kubernetes, pytest" >/dev/null 2>&1; then
    { python3 -m venv "$VENV" \
        || { apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null && python3 -m venv "$VENV"; }; } \
        || { echo "FAILED to create a Python venv for the client tests" >&2; exit 1; }
    "$VENV/bin/pip" install -q kubernetes pytest \
        || { echo "FAILED to install the Python kubernetes client and pytest (PyPI)" >&2; exit 1; }
fi
# `cargo test` above built target/debug/herald-server (the test profile:
# optimised, debug assertions on); this only makes sure of it, with the
# same selection, which rebuilds nothing. Cargo unifies features over the
# targets selected: `cargo build -p herald-server --bin herald-server`
# compiled the dependencies again (3.5 minutes of a cold run).
cargo test -q --workspace --no-run
HERALD_SERVER="$PWD/target/debug/herald-server" "$VENV/bin/python" -m pytest -q server/tests/python

echo "== [$(date -u +%T)] the C ABI from C: its test program plainly, under ASan+UBSan and valgrind; the epoll example"
bindings/c/test.sh

echo "== [$(date -u +%T)] the Go binding (cgo over the C ABI): go vet and go test -race (Go installed if missing)"
bindings/go/test.sh

echo "== [$(date -u +%T)] the Python binding (maturin wheel, pytest, in target/venv-python)"
bindings/python/test.sh

# The ignored suites below run from the build `cargo test --workspace`
# made: `ignored NAME` runs integration test NAME's binary itself, with
# --ignored, in its package's directory, as cargo would. Cargo unifies
# features over the targets selected, so `cargo test --test NAME` (or
# `-p PACKAGE`) compiled k8s-openapi, tokio and their dependents again for
# each suite (200 of real.rs's 282 s in a cold run).
ignored() {
    local name=$1 found exe dir
    shift
    found=$(cargo test -q --workspace --no-run --message-format=json | python3 -c '
import json, os, sys
name = sys.argv[1]
for line in sys.stdin:
    m = json.loads(line)
    t = m.get("target") or {}
    if m.get("reason") == "compiler-artifact" and t.get("name") == name \
            and t.get("kind") == ["test"] and m.get("executable"):
        print(m["executable"], os.path.dirname(m["manifest_path"]))
' "$name") || { echo "FAILED: cargo test --workspace --no-run (for $name)" >&2; exit 1; }
    if [ -z "$found" ]; then
        echo "FAILED: no integration test named $name in the workspace's build" >&2
        exit 1
    fi
    if [ "$(wc -l <<<"$found")" -gt 1 ]; then
        echo "FAILED: more than one integration test is named $name; name them apart:" >&2
        echo "$found" >&2
        exit 1
    fi
    read -r exe dir <<<"$found"
    (cd "$dir" && CARGO_MANIFEST_DIR="$dir" "$exe" --ignored "$@")
}

echo "== [$(date -u +%T)] the real kube-apiserver: its build, and kube/schema/ against the real k8s.io/api types"
if ! wait "$kube_build"; then
    cat target/tools/kube-apiserver-build.log >&2
    echo "FAILED: the kube-apiserver build or the schema generator (log above)" >&2
    exit 1
fi
eval "$(cat target/tools/kube-apiserver.env)"
if ! cmp -s target/tools/schema-now.json kube/schema/k8s-v1.37.2.json; then
    echo "FAILED: kube/schema/k8s-v1.37.2.json is not what kube/schema/gen prints for the real types" >&2
    echo "        (regenerate: cd kube/schema/gen && go run . > ../k8s-v1.37.2.json)" >&2
    exit 1
fi
echo "kube-apiserver: $HERALD_KUBE_APISERVER; schema: as generated"

echo "== [$(date -u +%T)] kube/schema/served-v1.37.2.json against what the real kube-apiserver serves (kube/schema/served: etcd + the apiserver, discovery, tables, field labels, key prefixes)"
# Its build reuses the apiserver's compiled packages (-trimpath above);
# about 10 s warm. Its log (the timing at the end) is shown either way.
if ! { time (cd kube/schema/served \
        && go run . -apiserver "$HERALD_KUBE_APISERVER" -etcd "$HERALD_ETCD") \
        > target/tools/served-now.json; } 2> target/tools/served-gen.log; then
    cat target/tools/served-gen.log >&2
    echo "FAILED: the served-resources generator kube/schema/served (log above)" >&2
    exit 1
fi
cat target/tools/served-gen.log
if ! cmp -s target/tools/served-now.json kube/schema/served-v1.37.2.json; then
    diff -u kube/schema/served-v1.37.2.json target/tools/served-now.json | head -60 >&2 || true
    echo "FAILED: kube/schema/served-v1.37.2.json is not what kube/schema/served reads from the real kube-apiserver (diff above)" >&2
    echo "        (regenerate: cd kube/schema/served && go run . -apiserver \"\$HERALD_KUBE_APISERVER\" -etcd \"\$HERALD_ETCD\" > ../served-v1.37.2.json)" >&2
    exit 1
fi
echo "served resources: as generated"

echo "== [$(date -u +%T)] the apiserver upstream against the real kube-apiserver: restart, token rotation, compaction; a first list reaching back into its watch cache (herald-apiserver tests/real.rs)"
# Ignored by the workspace run above, which runs while the build goes on.
ignored real

echo "== [$(date -u +%T)] access control against the real kube-apiserver: 135 decisions on a Herald deciding itself and on one delegating to the apiserver (TokenReview, SubjectAccessReview), each equal to its SubjectAccessReview and its 403s; refused credentials, a revoked watch, kubectl and client-go per identity, audit events equal to its own; 700 generated requests and issue 49's cases on three Heralds (etcd, delegating, apiserver with its own RBAC), none answered more than the apiserver; service-account tokens through their objects' lifecycles (herald-server tests/access_real.rs; builds testkit/client-go/cmd/identity with go)"
ignored access_real

echo "== [$(date -u +%T)] custom resources at each served version against the real kube-apiserver: a CRD of v1 and v2 with objects under each storage version; discovery, lists, GETs and watches of a Herald on its etcd and of one in front of it equal to the apiserver's (herald-server tests/crd_real.rs)"
ignored crd_real

echo "== [$(date -u +%T)] perf's apiserver-fanout at the smoke size: N watchers on the real kube-apiserver and on herald-server in front of it (herald-perf tests/apiserver.rs)"
HERALD_SERVER="$PWD/target/debug/herald-server" ignored apiserver

echo "== [$(date -u +%T)] HAProxy for the fleet test (Debian's package)"
if ! command -v haproxy >/dev/null 2>&1; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; } \
        || { echo "FAILED to install haproxy (apt-get): the fleet test cannot run" >&2; exit 1; }
fi
echo "haproxy: $(command -v haproxy) ($(haproxy -v | head -1))"

echo "== [$(date -u +%T)] perf's fleet-restart at the smoke size: 200 watchers through HAProxy in front of three herald-server replicas on etcd, two rolling restarts, no re-list (herald-perf tests/fleet.rs)"
HERALD_SERVER="$PWD/target/debug/herald-server" ignored fleet

echo "== [$(date -u +%T)] the differential test and the fleet: etcd + the real kube-apiserver + herald-server, with kubectl and client-go; three replicas behind HAProxy through a SIGKILL and a rolling restart (scripts/test-real-cluster.sh)"
# Twice at once: herald-server reading the apiserver's etcd, and in front
# of the apiserver itself (--kubeconfig).
HERALD_SERVER="$PWD/target/debug/herald-server" scripts/test-real-cluster.sh

echo "== [$(date -u +%T)] loom models (--cfg herald_loom, LOOM_MAX_PREEMPTIONS=2)"
# Release with debug assertions, in its own target directory (the cfg
# changes every crate's flags).
RUSTFLAGS="--cfg herald_loom -C debug-assertions" LOOM_MAX_PREEMPTIONS=2 \
    CARGO_TARGET_DIR=target/loom \
    cargo test -p herald-loom-tests --release
# The readiness set behind the C and Python bindings' watch sets (its
# wake protocol, bindings/ready).
RUSTFLAGS="--cfg herald_loom -C debug-assertions" LOOM_MAX_PREEMPTIONS=2 \
    CARGO_TARGET_DIR=target/loom \
    cargo test -p herald-ready --test loom_set --release

echo "== [$(date -u +%T)] miri (unit tests of the ring, queue, histogram, clock, wheel, budget)"
# Miri drives its own rustc: not the stable clippy driver `.ci/run` lints with.
unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
if { cargo +nightly miri --version >/dev/null 2>&1 \
        || rustup component add miri rust-src --toolchain nightly >/dev/null 2>&1; } \
    && cargo +nightly miri setup >/dev/null 2>&1; then
    CARGO_TARGET_DIR=target/miri cargo +nightly miri test -p herald --lib -- \
        queue:: ring:: histogram:: clock:: bookmarks:: time_budget::
else
    echo "miri is not available here (cargo +nightly miri): skipped"
fi

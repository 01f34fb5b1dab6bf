#!/usr/bin/env bash
# The main job: herald-perf's quick profile (every scenario at one size, 5
# interleaved rounds; a few minutes on 2 cores, after a build of a few
# minutes), a result table per scenario, the targets, then the headline
# table (one line per scenario). `scripts/perf.sh --full` runs the whole
# default suite (about 35 minutes on 2 cores, and pod-memory's apiserver
# starts on top).
# Installs what it needs first: protoc (the etcd upstream's gRPC client is
# built from .proto files) and an etcd server for the etcd-fanout scenario.
# Without etcd, that scenario says why it skipped and the rest runs.
# Arguments go to herald-perf (`scripts/perf.sh --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
if exports="$(scripts/ensure-etcd.sh)"; then
    eval "$exports"
else
    if ! command -v protoc >/dev/null 2>&1; then
        echo "FAILED: protoc is missing and could not be installed: herald-perf cannot be built" >&2
        exit 1
    fi
    echo "perf: no etcd could be installed; the etcd-fanout scenario will skip" >&2
fi
# pod-memory (the default and full profiles, or named) runs the release
# herald-server beside herald-perf and the real kube-apiserver (built by
# scripts/ensure-kube-apiserver.sh: minutes, once); without them it says
# why it skipped.
case " $* " in
*" --full "* | *"--profile default"* | *"--profile full"* | *"--profile=default"* | *"--profile=full"* | *pod-memory*)
    cargo build --release -p herald-server --bin herald-server
    if [[ -z "${HERALD_KUBE_APISERVER:-}" ]]; then
        if exports="$(scripts/ensure-kube-apiserver.sh)"; then
            eval "$exports"
        else
            echo "perf: no kube-apiserver could be built; pod-memory will skip" >&2
        fi
    fi
    ;;
esac
exec cargo run --release -p herald-perf -- "$@"

#!/usr/bin/env python3
"""Captures test vectors from a real kube-apiserver: for every object of the
corpus, the value the apiserver stored in etcd (protobuf or JSON) with its key
and mod_revision, and the JSON the apiserver serves for it. herald-kube's
vector test (kube/tests/vectors.rs) decodes each stored value and requires the
served JSON, field for field.

    capture.py --etcd http://127.0.0.1:2379 --kubeconfig F --out DIR

It reads etcd through its JSON gateway (/v3/kv/range) and the apiserver with
kubectl (`kubectl get --raw PATH`).
"""
import argparse, base64, json, os, subprocess, sys, urllib.request

# The apiserver's key layout: etcd prefix -> API path prefix (namespaced
# resources take `namespaces/<ns>/` before the plural).
LAYOUT = [
    ("/registry/pods/", "/api/v1", "pods", True),
    ("/registry/minions/", "/api/v1", "nodes", False),
    ("/registry/namespaces/", "/api/v1", "namespaces", False),
    ("/registry/configmaps/", "/api/v1", "configmaps", True),
    ("/registry/secrets/", "/api/v1", "secrets", True),
    ("/registry/serviceaccounts/", "/api/v1", "serviceaccounts", True),
    ("/registry/services/specs/", "/api/v1", "services", True),
    ("/registry/services/endpoints/", "/api/v1", "endpoints", True),
    ("/registry/events/", "/api/v1", "events", True),
    ("/registry/endpointslices/", "/apis/discovery.k8s.io/v1", "endpointslices", True),
    ("/registry/leases/", "/apis/coordination.k8s.io/v1", "leases", True),
    ("/registry/deployments/", "/apis/apps/v1", "deployments", True),
    ("/registry/replicasets/", "/apis/apps/v1", "replicasets", True),
    ("/registry/daemonsets/", "/apis/apps/v1", "daemonsets", True),
    ("/registry/statefulsets/", "/apis/apps/v1", "statefulsets", True),
    ("/registry/jobs/", "/apis/batch/v1", "jobs", True),
    ("/registry/roles/", "/apis/rbac.authorization.k8s.io/v1", "roles", True),
    ("/registry/rolebindings/", "/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    ("/registry/clusterroles/", "/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    ("/registry/clusterrolebindings/", "/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    ("/registry/apiextensions.k8s.io/customresourcedefinitions/", "/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", False),
    ("/registry/herald.dev/widgets/", "/apis/herald.dev/v1", "widgets", True),
]


def etcd_range(url, key, end):
    b64 = lambda b: base64.b64encode(b).decode()
    req = urllib.request.Request(url + "/v3/kv/range", data=json.dumps({"key": b64(key), "range_end": b64(end)}).encode())
    return json.load(urllib.request.urlopen(req)).get("kvs", [])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--etcd", required=True)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--match", default="diff", help="keep keys containing this, or a corpus name")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    n = 0
    for prefix, group, plural, namespaced in LAYOUT:
        for kv in etcd_range(a.etcd, prefix.encode(), prefix[:-1].encode() + b"0"):
            key = base64.b64decode(kv["key"]).decode()
            rest = key[len(prefix):]
            if a.match not in rest and not rest.startswith(("node-a", "widgets.", "herald-diff")):
                continue
            if namespaced:
                ns, name = rest.split("/", 1)
                path = f"{group}/namespaces/{ns}/{plural}/{name}"
            else:
                path = f"{group}/{plural}/{rest}"
            served = subprocess.run(["kubectl", "--kubeconfig", a.kubeconfig, "get", "--raw", path],
                                    check=True, capture_output=True).stdout
            vector = {
                "key": key, "prefix": prefix, "path": path, "mod_revision": int(kv["mod_revision"]),
                "value": kv["value"], "served": json.loads(served),
            }
            with open(os.path.join(a.out, f"{plural}-{rest.replace('/', '-')}.json"), "w") as f:
                json.dump(vector, f, indent=1, sort_keys=True)
                f.write("\n")
            n += 1
    print(f"captured {n} vectors into {a.out}", file=sys.stderr)
    if n == 0:
        sys.exit("no vectors: is the corpus applied?")


main()

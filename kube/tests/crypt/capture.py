#!/usr/bin/env python3
"""Captures encryption-at-rest vectors from a real kube-apiserver: for each
object below, the value the apiserver stored in etcd (`k8s:enc:...` or
plain), its key and mod_revision, and the JSON the apiserver serves for it,
with the EncryptionConfiguration the apiserver read (YAML, and the same in
JSON). herald-kube's test kube/tests/crypt.rs decrypts and decodes each
stored value and requires the served JSON.

    capture.py --etcd http://127.0.0.1:24790 --kubeconfig F \
               --config c3.yaml --config-json c3.json --out DIR

The objects were written under three configurations in turn, the
apiserver restarted between them (etcd kept), so that every provider and
key size is in the stored values:

1. secrets: aesgcm [key1 (32 bytes), key0 (16)], identity; configmaps:
   aescbc [cbc1 (32)], identity; leases.coordination.k8s.io: aesgcm
   [gcm24 (24)], identity; *.apps: secretbox [box1], identity; *.:
   aescbc [cbc16 (16)], identity. Then: kubectl create namespace crypt;
   create secret generic s-gcm32 (and label it); create configmap
   cm-cbc32; create deployment web; create serviceaccount sa-wild; apply
   a Lease crypt/leader.
2. The same, but secrets' aesgcm keys in the order [key0, key1], and
   configmaps' providers secretbox [box2], aescbc [cbc1], identity. Then:
   create secret generic s-gcm16; create configmap cm-box.
3. The same, but secrets' providers identity, aesgcm [key0, key1]: the
   configuration in every vector. Then: create secret generic s-plain,
   and this capture (the apiserver restarted on the JSON form gave the
   same vectors).
"""
import argparse, base64, json, os, subprocess, sys, urllib.request

# (etcd key, key prefix, resource as the config names it, API path)
OBJECTS = [
    ("/registry/secrets/crypt/s-gcm32", "/registry/secrets/", "secrets", "/api/v1/namespaces/crypt/secrets/s-gcm32"),
    ("/registry/secrets/crypt/s-gcm16", "/registry/secrets/", "secrets", "/api/v1/namespaces/crypt/secrets/s-gcm16"),
    ("/registry/secrets/crypt/s-plain", "/registry/secrets/", "secrets", "/api/v1/namespaces/crypt/secrets/s-plain"),
    ("/registry/configmaps/crypt/cm-cbc32", "/registry/configmaps/", "configmaps", "/api/v1/namespaces/crypt/configmaps/cm-cbc32"),
    ("/registry/configmaps/crypt/cm-box", "/registry/configmaps/", "configmaps", "/api/v1/namespaces/crypt/configmaps/cm-box"),
    ("/registry/configmaps/kube-system/kube-apiserver-legacy-service-account-token-tracking", "/registry/configmaps/", "configmaps",
     "/api/v1/namespaces/kube-system/configmaps/kube-apiserver-legacy-service-account-token-tracking"),
    ("/registry/leases/crypt/leader", "/registry/leases/", "leases.coordination.k8s.io", "/apis/coordination.k8s.io/v1/namespaces/crypt/leases/leader"),
    ("/registry/deployments/crypt/web", "/registry/deployments/", "deployments.apps", "/apis/apps/v1/namespaces/crypt/deployments/web"),
    ("/registry/serviceaccounts/crypt/sa-wild", "/registry/serviceaccounts/", "serviceaccounts", "/api/v1/namespaces/crypt/serviceaccounts/sa-wild"),
    ("/registry/namespaces/crypt", "/registry/namespaces/", "namespaces", "/api/v1/namespaces/crypt"),
    ("/registry/services/specs/default/kubernetes", "/registry/services/specs/", "services", "/api/v1/namespaces/default/services/kubernetes"),
    ("/registry/clusterroles/view", "/registry/clusterroles/", "clusterroles.rbac.authorization.k8s.io", "/apis/rbac.authorization.k8s.io/v1/clusterroles/view"),
]


def etcd_get(url, key):
    b64 = lambda b: base64.b64encode(b).decode()
    req = urllib.request.Request(url + "/v3/kv/range", data=json.dumps({"key": b64(key)}).encode())
    kvs = json.load(urllib.request.urlopen(req)).get("kvs", [])
    if len(kvs) != 1:
        sys.exit(f"{key!r}: {len(kvs)} values in etcd")
    return kvs[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--etcd", required=True)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--config", required=True, help="the YAML the apiserver read")
    ap.add_argument("--config-json", required=True, help="the same configuration as JSON")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    config = open(a.config).read()
    config_json = open(a.config_json).read()
    os.makedirs(a.out, exist_ok=True)
    for key, prefix, resource, path in OBJECTS:
        before = etcd_get(a.etcd, key.encode())
        served = subprocess.run(["kubectl", "--kubeconfig", a.kubeconfig, "get", "--raw", path],
                                check=True, capture_output=True).stdout
        after = etcd_get(a.etcd, key.encode())
        if before["mod_revision"] != after["mod_revision"]:
            sys.exit(f"{key}: written while captured")
        value = base64.b64decode(after["value"])
        stored_as = value.split(b":")[2].decode() + ":" + value.split(b":")[4].decode() if value.startswith(b"k8s:enc:") else "identity"
        vector = {
            "key": key, "prefix": prefix, "resource": resource, "path": path,
            "mod_revision": int(after["mod_revision"]), "value": after["value"], "stored_as": stored_as,
            "served": json.loads(served), "config": config, "config_json": config_json,
        }
        name = key[len("/registry/"):].replace("/", "-")
        with open(os.path.join(a.out, f"{name}.json"), "w") as f:
            json.dump(vector, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"{name}: {stored_as}", file=sys.stderr)


if __name__ == "__main__":
    main()

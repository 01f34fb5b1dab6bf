#!/usr/bin/env python3
"""Captures more table vectors from a real kube-apiserver, as
capture_tables.py does (see there), for the kinds tables-more.yaml holds:
CronJob, Ingress, NetworkPolicy, PodDisruptionBudget, PriorityClass,
StorageClass, LimitRange, ResourceQuota, PersistentVolumeClaim and
PersistentVolume. It applies tables-more.yaml (namespace `more`), sets the
statuses below, deletes a claim and a volume that finalizers keep, and
writes one vector per object and per list.

    capture_tables_more.py --server https://127.0.0.1:9443 --token T \
        --kubeconfig F --out kube/tests/tables

It needs no other corpus file.
"""
import argparse, email.utils, json, os, ssl, subprocess, sys, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
NS = "more"

# (API prefix, plural, kind, namespaced)
KINDS = [
    ("/apis/batch/v1", "cronjobs", "CronJob", True),
    ("/apis/networking.k8s.io/v1", "ingresses", "Ingress", True),
    ("/apis/networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", True),
    ("/apis/policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    ("/apis/scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", False),
    ("/apis/storage.k8s.io/v1", "storageclasses", "StorageClass", False),
    ("/api/v1", "limitranges", "LimitRange", True),
    ("/api/v1", "resourcequotas", "ResourceQuota", True),
    ("/api/v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    ("/api/v1", "persistentvolumes", "PersistentVolume", False),
]

# Cluster-scoped objects to capture one by one (their lists are captured whole).
CLUSTER_OBJECTS = {"t-high", "t-batch", "system-node-critical", "t-fast", "t-plain",
                   "t-pv-bound", "t-pv-old", "t-pv-free"}

JOB = {"kind": "Job", "apiVersion": "batch/v1", "namespace": NS}

# Statuses a create cannot set: (kubectl resource, namespace, name, status).
STATUS = [
    ("cronjob", NS, "nightly", {
        "active": [dict(JOB, name="nightly-29000001", uid="00000000-0000-0000-0000-000000000001"),
                   dict(JOB, name="nightly-29000002", uid="00000000-0000-0000-0000-000000000002")],
        "lastScheduleTime": "2026-11-27T03:00:00Z"}),
    ("ingress", NS, "web", {"loadBalancer": {"ingress": [
        {"ip": "198.51.100.7"}, {"hostname": "lb.example.com"}, {"ip": "198.51.100.2"}, {"ip": "198.51.100.7"}]}}),
    ("ingress", NS, "three", {"loadBalancer": {"ingress": [{"hostname": "a-very-long-load-balancer.example.com"}]}}),
    ("poddisruptionbudget", NS, "half", {"disruptionsAllowed": 2, "currentHealthy": 4, "desiredHealthy": 2,
                                         "expectedPods": 4, "observedGeneration": 1}),
    ("resourcequota", NS, "compute", {
        "hard": {"requests.cpu": "2", "requests.memory": "4Gi", "limits.cpu": "4", "limits.memory": "8Gi", "pods": "10"},
        "used": {"requests.cpu": "500m", "requests.memory": "1Gi", "limits.cpu": "1", "pods": "3"}}),
    ("resourcequota", NS, "objects", {
        "hard": {"count/cronjobs.batch": "5", "persistentvolumeclaims": "4", "services.loadbalancers": "0"},
        "used": {"count/cronjobs.batch": "2", "persistentvolumeclaims": "4", "services.loadbalancers": "0"}}),
    ("persistentvolume", None, "t-pv-bound", {"phase": "Bound"}),
    ("persistentvolume", None, "t-pv-old", {"phase": "Released", "reason": "ClaimDeleted"}),
    ("persistentvolume", None, "t-pv-free", {"phase": "Available"}),
    ("persistentvolumeclaim", NS, "data", {
        "phase": "Bound", "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteMany"]}),
    ("persistentvolumeclaim", NS, "pending", {"phase": "Pending"}),
    ("persistentvolumeclaim", NS, "legacy", {"phase": "Lost", "accessModes": ["ReadOnlyMany"]}),
    ("persistentvolumeclaim", NS, "doomed", {"phase": "Bound", "capacity": {"storage": "1Gi"}}),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE

    def kubectl(*args):
        subprocess.run(["kubectl", "--kubeconfig", a.kubeconfig, *args], check=True)

    def get(path, accept="application/json"):
        req = urllib.request.Request(a.server + path, headers={"Authorization": "Bearer " + a.token, "Accept": accept})
        with urllib.request.urlopen(req, context=ctx) as r:
            date = email.utils.parsedate_to_datetime(r.headers["Date"])
            return json.load(r), date.strftime("%Y-%m-%dT%H:%M:%SZ")

    kubectl("apply", "-f", os.path.join(HERE, "tables-more.yaml"))
    for resource, ns, name, status in STATUS:
        kubectl(*(["-n", ns] if ns else []), "patch", resource, name, "--subresource=status", "--type=merge",
                "-p", json.dumps({"status": status}))
    # A claim and a volume being deleted (their finalizers keep them).
    kubectl("-n", NS, "delete", "pvc", "doomed", "--wait=false")
    kubectl("delete", "pv", "t-pv-free", "--wait=false")
    time.sleep(1)
    os.makedirs(a.out, exist_ok=True)
    n = 0

    def capture(file, path, kind, is_list):
        nonlocal n
        served, _ = get(path)
        sep = "&" if "?" in path else "?"
        table, date = get(path, TABLE)
        table_none, date_none = get(path + sep + "includeObject=None", TABLE)
        vector = {"path": path, "kind": kind, "list": is_list, "served": served,
                  "table": table, "date": date, "table_none": table_none, "date_none": date_none}
        with open(os.path.join(a.out, file + ".json"), "w") as f:
            json.dump(vector, f, indent=1, sort_keys=True)
            f.write("\n")
        n += 1

    for prefix, plural, kind, namespaced in KINDS:
        base = f"{prefix}/namespaces/{NS}/{plural}" if namespaced else f"{prefix}/{plural}"
        listed, _ = get(base)
        capture(f"{plural}-list", base, kind, True)
        for item in listed["items"]:
            name = item["metadata"]["name"]
            if namespaced:
                capture(f"{plural}-{NS}-{name}", f"{base}/{name}", kind, False)
            elif name in CLUSTER_OBJECTS:
                capture(f"{plural}-{name}", f"{base}/{name}", kind, False)
    print(f"captured {n} table vectors into {a.out}", file=sys.stderr)


main()

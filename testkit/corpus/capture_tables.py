#!/usr/bin/env python3
"""Captures table vectors from a real kube-apiserver: for every object of the
corpus (corpus.yaml, widgets.yaml, then tables.yaml and tables-crs.yaml, which
this script applies, with the statuses below) and for every list of its kinds,
the JSON the apiserver serves and the `meta.k8s.io/v1` Table it serves for
`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, with the default
includeObject (Metadata) and with includeObject=None, each with the response's
`Date` (the second the apiserver's "now" was in). herald-kube's table test
(kube/tests/tables.rs) builds Herald's table from the served JSON and requires
the same columns and cells.

    capture_tables.py --server https://127.0.0.1:8443 --token T \
        --kubeconfig F --out kube/tests/tables

Run it after applying corpus.yaml and widgets.yaml.
"""
import argparse, email.utils, json, os, ssl, subprocess, sys, time, urllib.error, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"

# (API prefix, plural, kind, namespaced)
KINDS = [
    ("/api/v1", "pods", "Pod", True),
    ("/api/v1", "nodes", "Node", False),
    ("/api/v1", "namespaces", "Namespace", False),
    ("/api/v1", "configmaps", "ConfigMap", True),
    ("/api/v1", "secrets", "Secret", True),
    ("/api/v1", "services", "Service", True),
    ("/api/v1", "endpoints", "Endpoints", True),
    ("/apis/discovery.k8s.io/v1", "endpointslices", "EndpointSlice", True),
    ("/api/v1", "events", "Event", True),
    ("/apis/coordination.k8s.io/v1", "leases", "Lease", True),
    ("/api/v1", "serviceaccounts", "ServiceAccount", True),
    ("/apis/apps/v1", "deployments", "Deployment", True),
    ("/apis/apps/v1", "replicasets", "ReplicaSet", True),
    ("/apis/apps/v1", "daemonsets", "DaemonSet", True),
    ("/apis/apps/v1", "statefulsets", "StatefulSet", True),
    ("/apis/batch/v1", "jobs", "Job", True),
    ("/apis/rbac.authorization.k8s.io/v1", "roles", "Role", True),
    ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", True),
    ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", False),
    ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", False),
    ("/apis/apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition", False),
    ("/apis/herald.dev/v1", "widgets", "Widget", True),
    ("/apis/herald.dev/v1", "gadgets", "Gadget", True),
    ("/apis/herald.dev/v1", "plains", "Plain", False),
]

# The CRD that defines each custom resource kind.
CRDS = {"Widget": "widgets.herald.dev", "Gadget": "gadgets.herald.dev", "Plain": "plains.herald.dev"}

# Cluster-scoped objects to capture one by one (their lists are captured whole).
CLUSTER_OBJECTS = {"node-a", "node-t", "diff", "herald-diff-viewer", "widgets.herald.dev",
                   "gadgets.herald.dev", "plains.herald.dev", "p1", "system:basic-user"}

# Statuses a create cannot set: (kubectl resource, namespace, name, status).
STATUS = [
    ("node", None, "node-t", {
        "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
        "addresses": [{"type": "Hostname", "address": "node-t"}, {"type": "InternalIP", "address": "10.1.0.5"},
                      {"type": "ExternalIP", "address": "203.0.113.5"}],
        "nodeInfo": {"kubeletVersion": "v1.37.2", "osImage": "Debian GNU/Linux 13", "kernelVersion": "6.12.0",
                     "containerRuntimeVersion": "containerd://2.1.0", "architecture": "amd64",
                     "operatingSystem": "linux", "machineID": "m", "systemUUID": "s", "bootID": "b",
                     "kubeProxyVersion": ""}}),
    ("node", None, "node-a", {"conditions": [{"type": "Ready", "status": "Unknown"}]}),
    ("pod", "diff", "t-running", {
        "phase": "Running", "podIP": "10.244.1.5", "podIPs": [{"ip": "10.244.1.5"}], "nominatedNodeName": "node-a",
        "conditions": [{"type": "example.com/gate", "status": "True"}, {"type": "Ready", "status": "False"},
                       {"type": "Initialized", "status": "True"}],
        "initContainerStatuses": [
            {"name": "init", "image": "busybox:1.36", "imageID": "", "ready": False, "restartCount": 0,
             "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            {"name": "sidecar", "image": "envoy:1", "imageID": "", "ready": True, "started": True, "restartCount": 1,
             "state": {"running": {"startedAt": "2026-11-27T20:00:01Z"}},
             "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-11-27T20:00:00Z"}}}],
        "containerStatuses": [
            {"name": "app", "image": "nginx:1.27", "imageID": "", "ready": True, "restartCount": 2,
             "state": {"running": {"startedAt": "2026-11-27T20:59:00Z"}},
             "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-11-27T21:00:00Z"}}},
            {"name": "crash", "image": "busybox:1.36", "imageID": "", "ready": False, "restartCount": 5,
             "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}),
    ("pod", "diff", "t-init", {
        "phase": "Pending",
        "initContainerStatuses": [
            {"name": "init", "image": "busybox:1.36", "imageID": "", "ready": False, "restartCount": 3,
             "state": {"terminated": {"exitCode": 0}},
             "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-11-27T19:00:00Z"}}},
            {"name": "init2", "image": "busybox:1.36", "imageID": "", "ready": False, "restartCount": 0,
             "state": {"running": {}}}],
        "containerStatuses": [
            {"name": "app", "image": "nginx:1.27", "imageID": "", "ready": False, "restartCount": 0,
             "state": {"waiting": {"reason": "PodInitializing"}}}]}),
    ("pod", "diff", "t-done", {
        "phase": "Succeeded",
        "containerStatuses": [
            {"name": "app", "image": "busybox:1.36", "imageID": "", "ready": False, "restartCount": 0,
             "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}),
    ("pod", "diff", "t-failed", {
        "phase": "Failed", "reason": "Evicted",
        "containerStatuses": [
            {"name": "app", "image": "busybox:1.36", "imageID": "", "ready": False, "restartCount": 0,
             "state": {"terminated": {"exitCode": 1, "signal": 9}}},
            {"name": "b", "image": "busybox:1.36", "imageID": "", "ready": False, "restartCount": 0,
             "state": {"terminated": {"exitCode": 2}}}]}),
    ("service", "diff", "t-lb", {"loadBalancer": {"ingress": [{"ip": "198.51.100.1"}, {"hostname": "lb.example.com"}]}}),
    ("deployment", "diff", "web", {"replicas": 3, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1}),
    ("replicaset", "diff", "web-5d4f", {"replicas": 2, "readyReplicas": 1, "availableReplicas": 1}),
    ("daemonset", "diff", "t-sel", {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1,
                                    "updatedNumberScheduled": 2, "numberAvailable": 1, "numberMisscheduled": 0}),
    ("statefulset", "diff", "db", {"replicas": 1, "readyReplicas": 1, "currentReplicas": 1}),
    ("job", "diff", "migrate", {"startTime": "2026-11-27T21:00:00Z", "active": 1}),
    ("job", "diff", "t-done", {
        "startTime": "2026-11-27T20:00:00Z", "completionTime": "2026-11-27T20:03:25Z", "succeeded": 3,
        "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}),
    ("job", "diff", "t-wide", {"conditions": [{"type": "Suspended", "status": "True"}]}),
    ("gadget", "diff", "g1", {"conditions": [{"type": "Synced", "status": "True"}, {"type": "Ready", "status": "False"}]}),
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

    kubectl("apply", "-f", os.path.join(HERE, "tables.yaml"))
    kubectl("wait", "--for=condition=Established", "crd/gadgets.herald.dev", "crd/plains.herald.dev")
    time.sleep(2)
    kubectl("apply", "-f", os.path.join(HERE, "tables-crs.yaml"))
    for resource, ns, name, status in STATUS:
        kubectl(*(["-n", ns] if ns else []), "patch", resource, name, "--subresource=status", "--type=merge",
                "-p", json.dumps({"status": status}))

    # Null values, which kubectl apply would drop.
    g6 = {"apiVersion": "herald.dev/v1", "kind": "Gadget", "metadata": {"name": "g6"},
          "spec": {"color": None, "weight": None, "on": None, "since": None, "tags": [None]}}
    req = urllib.request.Request(a.server + "/apis/herald.dev/v1/namespaces/diff/gadgets", method="POST",
                                 data=json.dumps(g6).encode(),
                                 headers={"Authorization": "Bearer " + a.token, "Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, context=ctx).close()
    except urllib.error.HTTPError as e:
        if e.code != 409:
            raise
    # A pod and a job being deleted (their finalizers keep them).
    kubectl("-n", "diff", "delete", "pod", "t-gone", "--wait=false")
    kubectl("-n", "diff", "patch", "job", "t-wide", "--type=merge", "-p",
            json.dumps({"metadata": {"finalizers": ["example.com/keep"]}}))
    kubectl("-n", "diff", "delete", "job", "t-wide", "--wait=false", "--cascade=orphan")
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
        if kind in CRDS:
            vector["crd"] = CRDS[kind]
        with open(os.path.join(a.out, file + ".json"), "w") as f:
            json.dump(vector, f, indent=1, sort_keys=True)
            f.write("\n")
        n += 1

    for prefix, plural, kind, namespaced in KINDS:
        base = f"{prefix}/namespaces/diff/{plural}" if namespaced else f"{prefix}/{plural}"
        listed, _ = get(base)
        capture(f"{plural}-list", base, kind, True)
        for item in listed["items"]:
            name = item["metadata"]["name"]
            if namespaced:
                capture(f"{plural}-diff-{name}", f"{base}/{name}", kind, False)
            elif name in CLUSTER_OBJECTS:
                capture(f"{plural}-{name.replace(':', '_')}", f"{base}/{name}", kind, False)
    print(f"captured {n} table vectors into {a.out}", file=sys.stderr)


main()

#!/usr/bin/env python3
"""Captures table vectors from a real kube-apiserver, as capture_tables.py
does (see there), for the kinds served by default that tables-kinds.yaml
holds (namespace `kinds`, and cluster-scoped objects named `t-...`): pod
templates, replication controllers, controller revisions, ingress classes,
autoscalers, CSI and DRA kinds, flow control, service CIDRs and IP
addresses, admission webhooks and policies, certificates, storage version
migrations, API services and component statuses. Each vector also keeps the
table served with includeObject=Object (`table_object`, `date_object`),
except component statuses': the apiserver probes them anew for each request,
in an order that varies.

    capture_tables_kinds.py --server https://127.0.0.1:19443 --token T \
        --kubeconfig F --out kube/tests/tables

It needs no other corpus file.
"""
import argparse, email.utils, json, os, ssl, subprocess, sys, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
NS = "kinds"

# (API prefix, plural, kind, namespaced)
KINDS = [
    ("/api/v1", "podtemplates", "PodTemplate", True),
    ("/api/v1", "replicationcontrollers", "ReplicationController", True),
    ("/api/v1", "componentstatuses", "ComponentStatus", False),
    ("/apis/apps/v1", "controllerrevisions", "ControllerRevision", True),
    ("/apis/networking.k8s.io/v1", "ingressclasses", "IngressClass", False),
    ("/apis/networking.k8s.io/v1", "servicecidrs", "ServiceCIDR", False),
    ("/apis/networking.k8s.io/v1", "ipaddresses", "IPAddress", False),
    ("/apis/autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True),
    ("/apis/storage.k8s.io/v1", "csidrivers", "CSIDriver", False),
    ("/apis/storage.k8s.io/v1", "csinodes", "CSINode", False),
    ("/apis/storage.k8s.io/v1", "csistoragecapacities", "CSIStorageCapacity", True),
    ("/apis/storage.k8s.io/v1", "volumeattachments", "VolumeAttachment", False),
    ("/apis/storage.k8s.io/v1", "volumeattributesclasses", "VolumeAttributesClass", False),
    ("/apis/node.k8s.io/v1", "runtimeclasses", "RuntimeClass", False),
    ("/apis/resource.k8s.io/v1", "deviceclasses", "DeviceClass", False),
    ("/apis/resource.k8s.io/v1", "resourceclaims", "ResourceClaim", True),
    ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", "ResourceClaimTemplate", True),
    ("/apis/resource.k8s.io/v1", "resourceslices", "ResourceSlice", False),
    ("/apis/resource.k8s.io/v1", "devicetaintrules", "DeviceTaintRule", False),
    ("/apis/flowcontrol.apiserver.k8s.io/v1", "flowschemas", "FlowSchema", False),
    ("/apis/flowcontrol.apiserver.k8s.io/v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", False),
    ("/apis/admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False),
    ("/apis/admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", False),
    ("/apis/admissionregistration.k8s.io/v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False),
    ("/apis/admissionregistration.k8s.io/v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", False),
    ("/apis/admissionregistration.k8s.io/v1", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", False),
    ("/apis/admissionregistration.k8s.io/v1", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", False),
    ("/apis/certificates.k8s.io/v1", "certificatesigningrequests", "CertificateSigningRequest", False),
    ("/apis/certificates.k8s.io/v1", "clustertrustbundles", "ClusterTrustBundle", False),
    ("/apis/storagemigration.k8s.io/v1", "storageversionmigrations", "StorageVersionMigration", False),
    ("/apis/apiregistration.k8s.io/v1", "apiservices", "APIService", False),
    # events.k8s.io's Events, printed as core Events (one storage): the
    # files are named `eventsv1-...`.
    ("/apis/events.k8s.io/v1", "events", "Event", True),
]

# Cluster-scoped objects captured one by one besides those named `t-...`
# (their lists are captured whole).
CLUSTER_OBJECTS = {"node-a", "node-a-gpu", "all-nodes-net", "10.100.0.7", "10.96.0.1", "kubernetes",
                   "exempt", "catch-all", "global-default", "example.com:serving:roots",
                   "v1beta1.metrics.example.com", "v1.apps", "v1."}

# Statuses a create cannot set: (kubectl resource, namespace, name, status).
STATUS = [
    ("replicationcontroller", NS, "legacy", {"replicas": 3, "readyReplicas": 2, "availableReplicas": 2}),
    ("horizontalpodautoscaler", NS, "web", {
        "currentReplicas": 4, "desiredReplicas": 4,
        "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45, "averageValue": "120m"}}},
            {"type": "Resource", "resource": {"name": "memory", "current": {"averageValue": "300Mi"}}},
            {"type": "Pods", "pods": {"metric": {"name": "packets-per-second"}, "current": {"averageValue": "800"}}}]}),
    ("horizontalpodautoscaler", NS, "ext", {
        "currentReplicas": 2, "desiredReplicas": 2,
        "currentMetrics": [
            {"type": "External", "external": {"metric": {"name": "queue_depth"}, "current": {"averageValue": "12"}}}]}),
    ("volumeattachment", None, "t-va", {"attached": True}),
    ("resourceclaim", NS, "allocated", {
        "allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "00000000-0000-0000-0000-0000000000b1"}]}),
    ("storageversionmigration", None, "t-secrets", {"conditions": [
        {"type": "Succeeded", "status": "True", "lastTransitionTime": "2026-11-27T20:01:00Z", "reason": "r", "message": "m"}]}),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", help="capture only these API prefixes' kinds (e.g. /apis/events.k8s.io/v1)")
    a = ap.parse_args()
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE

    def kubectl(*args, check=True):
        subprocess.run(["kubectl", "--kubeconfig", a.kubeconfig, *args], check=check)

    def get(path, accept="application/json"):
        req = urllib.request.Request(a.server + path, headers={"Authorization": "Bearer " + a.token, "Accept": accept})
        with urllib.request.urlopen(req, context=ctx) as r:
            date = email.utils.parsedate_to_datetime(r.headers["Date"])
            return json.load(r), date.strftime("%Y-%m-%dT%H:%M:%SZ")

    kubectl("apply", "-f", os.path.join(HERE, "tables-kinds.yaml"))
    for resource, ns, name, status in STATUS if not a.only else []:
        kubectl(*(["-n", ns] if ns else []), "patch", resource, name, "--subresource=status", "--type=merge",
                "-p", json.dumps({"status": status}))
    if not a.only:
        kubectl("certificate", "approve", "t-approved")
        kubectl("certificate", "deny", "t-denied")
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
        if kind != "ComponentStatus":
            table_object, date_object = get(path + sep + "includeObject=Object", TABLE)
            vector.update(table_object=table_object, date_object=date_object)
        with open(os.path.join(a.out, file.replace(":", "_") + ".json"), "w") as f:
            json.dump(vector, f, indent=1, sort_keys=True)
            f.write("\n")
        n += 1

    for prefix, plural, kind, namespaced in KINDS:
        if a.only and prefix not in a.only:
            continue
        base = f"{prefix}/namespaces/{NS}/{plural}" if namespaced else f"{prefix}/{plural}"
        if prefix == "/apis/events.k8s.io/v1":
            plural = "eventsv1"
        listed, _ = get(base)
        capture(f"{plural}-list", base, kind, True)
        for item in listed["items"]:
            name = item["metadata"]["name"]
            if namespaced:
                capture(f"{plural}-{NS}-{name}", f"{base}/{name}", kind, False)
            elif name in CLUSTER_OBJECTS or name.startswith("t-"):
                capture(f"{plural}-{name}", f"{base}/{name}", kind, False)
    print(f"captured {n} table vectors into {a.out}", file=sys.stderr)


main()

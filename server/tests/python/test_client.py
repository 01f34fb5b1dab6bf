"""The Python `kubernetes` client against herald-server (--demo).

Run by scripts/test.sh in a venv it creates: HERALD_SERVER names the
herald-server binary. Each test talks to a server of 200 demo pods that
change at 200 changes per second.
"""

import os
import socket
import subprocess
import time
import urllib.request

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException


@pytest.fixture(scope="module")
def v1():
    binary = os.environ["HERALD_SERVER"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [binary, "--listen", f"127.0.0.1:{port}", "--demo", "200", "--demo-rate", "200"],
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        assert server.poll() is None, server.stderr.read().decode()
        assert time.time() < deadline, "herald-server did not become ready"
        time.sleep(0.05)
    config = client.Configuration()
    config.host = url
    yield client.CoreV1Api(client.ApiClient(config))
    server.terminate()
    server.wait(timeout=10)


def test_list_then_watch_in_order_from_the_lists_version(v1):
    listed = v1.list_namespaced_pod("demo-3")
    assert len(listed.items) == 20
    assert all(p.metadata.namespace == "demo-3" for p in listed.items)
    rv = int(listed.metadata.resource_version)
    w = watch.Watch()
    seen = []
    for event in w.stream(
        v1.list_namespaced_pod,
        "demo-3",
        resource_version=str(rv),
        timeout_seconds=10,
    ):
        assert event["type"] == "MODIFIED", event["type"]
        pod = event["object"]
        assert pod.metadata.namespace == "demo-3"
        seen.append(int(pod.metadata.resource_version))
        if len(seen) == 10:
            w.stop()
    assert len(seen) == 10
    assert seen == sorted(set(seen)), seen
    assert seen[0] > rv


def test_selectors(v1):
    by_label = v1.list_pod_for_all_namespaces(label_selector="app=app-1")
    assert by_label.items
    assert all(p.metadata.labels["app"] == "app-1" for p in by_label.items)
    not_in = v1.list_pod_for_all_namespaces(label_selector="app notin (app-1,app-2)")
    assert len(not_in.items) + len(by_label.items) < 200
    assert all(p.metadata.labels["app"] not in ("app-1", "app-2") for p in not_in.items)
    by_node = v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=node-3")
    assert len(by_node.items) == 4
    assert all(p.spec.node_name == "node-3" for p in by_node.items)


def test_pages_list_one_version(v1):
    first = v1.list_pod_for_all_namespaces(limit=70)
    assert len(first.items) == 70 and first.metadata._continue
    names = [p.metadata.name for p in first.items]
    token = first.metadata._continue
    while token:
        page = v1.list_pod_for_all_namespaces(limit=70, _continue=token)
        assert page.metadata.resource_version == first.metadata.resource_version
        names += [p.metadata.name for p in page.items]
        token = page.metadata._continue
    assert sorted(names) == sorted(set(names)) and len(names) == 200


def test_a_watch_from_a_version_too_old_is_410(v1):
    w = watch.Watch()
    with pytest.raises(ApiException) as e:
        for _ in w.stream(v1.list_namespaced_pod, "demo-1", resource_version="1", timeout_seconds=5):
            pass
    assert e.value.status == 410
    assert "Expired" in e.value.reason


def test_bad_input_is_400_and_missing_is_404(v1):
    with pytest.raises(ApiException) as e:
        v1.list_pod_for_all_namespaces(label_selector="app in (x")
    assert e.value.status == 400
    assert "unable to parse requirement" in e.value.body
    with pytest.raises(ApiException) as e:
        v1.read_namespaced_pod("nope", "demo-1")
    assert e.value.status == 404
    pod = v1.read_namespaced_pod("pod-00001", "demo-1")
    assert pod.metadata.name == "pod-00001" and pod.spec.node_name == "node-1"

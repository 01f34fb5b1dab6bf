#!/usr/bin/env python3
"""The workspace's crate gate: every crate keeps the engine's house, and
the crates' dependencies point inward.

1. Each crate's source folders (`src/`, and `benches/` of the bench crate)
   pass `scripts/check-layout.py`: no import circle between files, no file
   over 900 lines, and, in a crate whose README maps its layers (the
   engine's), no import from a lower layer to a higher one.
2. Each crate stands in a ring, and its dependencies on the workspace's
   own crates (normal and build dependencies; dev-dependencies are tests,
   which may use anything) go to a lower ring only:

   0 the engine (`herald`): depends on nothing of ours;
   1 Kubernetes shape: objects, codecs, the resource table; and beside
     it the sources' async-to-sync seam (`herald-bridge`: a tokio
     runtime and a blocking call into it, nothing of ours);
   2 sources and access: upstreams that feed an engine (etcd,
     kube-apiserver); who may read what (`herald-auth`);
   3 fronts and their plumbing: what serves an engine to clients (the
     HTTP server; the readiness set the bindings share);
   4 bindings and managers built on those (C, Python, the kubelet's
     object manager);
   5 dev-only fixtures (`herald-testkit`: the local etcd launcher, object
     builders, waiting helpers);
   6 perf, benches, loom models, fuzz targets: anything.

   A crate that is in no ring, or an edge that points outward or sideways,
   fails the gate.

Usage: scripts/check-crates.py [--self-test]. Exits 1 and names each
problem.
"""

import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

RINGS = {
    "herald": 0,
    "herald-kube": 1,
    "herald-bridge": 1,
    "herald-etcd": 2,
    "herald-apiserver": 2,
    "herald-auth": 2,
    "herald-server": 3,
    "herald-ready": 3,
    "herald-c": 4,
    "herald-python": 4,
    "herald-kubelet": 4,
    "herald-testkit": 5,
    "herald-perf": 6,
    "herald-benches": 6,
    "herald-loom-tests": 6,
    "herald-fuzz": 6,
}

# Edges the gate still lets through, each with the change that removes it.
KNOWN = {
}

# Layout debts the gate still lets through (crate, the problem's first
# words), each with the change that removes it; any other circle or long
# file fails.
KNOWN_LAYOUT = {
}


def members(root):
    """The workspace members' folders, from the root Cargo.toml."""
    text = open(os.path.join(root, "Cargo.toml")).read()
    block = re.search(r"members\s*=\s*\[(.*?)\]", text, re.S)
    return re.findall(r'"([^"]+)"', block.group(1)) if block else []


def manifest(path):
    """(name, {section: [path dependency folders]}) of one Cargo.toml."""
    name, section, deps = None, None, {}
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        header = re.match(r"\[([^\]]+)\]", line)
        if header:
            section = header.group(1)
            continue
        if section == "package" and name is None:
            m = re.match(r'name\s*=\s*"([^"]+)"', line)
            if m:
                name = m.group(1)
        m = re.match(r'([A-Za-z0-9_-]+)\s*=\s*\{.*\bpath\s*=\s*"([^"]+)"', line)
        if m and section in ("dependencies", "build-dependencies", "dev-dependencies"):
            deps.setdefault(section, []).append(
                os.path.normpath(os.path.join(os.path.dirname(path), m.group(2))))
    return name, deps


def crates(root, folders):
    """{folder: (name, deps)} of the workspace's crates (and fuzz/)."""
    out = {}
    for f in folders:
        p = os.path.join(root, f, "Cargo.toml")
        if os.path.exists(p):
            out[os.path.normpath(os.path.join(root, f))] = manifest(p)
    return out


# The known debts met in this run.
DEBTS = []


def check_edges(found):
    problems = []
    names = {folder: name for folder, (name, _) in found.items()}
    for folder, (name, deps) in sorted(found.items()):
        if name not in RINGS:
            problems.append(f"crate {name} ({os.path.relpath(folder, ROOT)}) stands in no ring")
            continue
        for section in ("dependencies", "build-dependencies"):
            for dep in deps.get(section, []):
                other = names.get(dep)
                if other is None:
                    continue
                if RINGS.get(other, 99) < RINGS[name]:
                    continue
                why = KNOWN.get((name, other))
                if why:
                    DEBTS.append(name)
                    print(f"crates: known edge {name} -> {other} (ring {RINGS[name]} -> {RINGS.get(other)}): {why}")
                    continue
                problems.append(
                    f"{name} (ring {RINGS[name]}) depends on {other} (ring {RINGS.get(other)}): "
                    f"dependencies point inward")
    return problems


def check_layout(root, found):
    problems = []
    layout = os.path.join(root, "scripts", "check-layout.py")
    for folder, (name, _) in sorted(found.items()):
        for sub in ("src", "benches"):
            src = os.path.join(folder, sub)
            if not os.path.isdir(src) or not any(f.endswith(".rs") for _, _, fs in os.walk(src) for f in fs):
                continue
            r = subprocess.run([sys.executable, layout, src], capture_output=True, text=True)
            for line in r.stdout.splitlines():
                if not line.startswith("layout: ") or r.returncode == 0:
                    continue
                text = line[len("layout: "):]
                why = next((w for (c, start), w in KNOWN_LAYOUT.items()
                            if c == name and text.startswith(start)), None)
                if why:
                    DEBTS.append(name)
                    print(f"crates: known debt in {name}: {text[:120]} ({why})")
                else:
                    problems.append(f"{name}: {text}")
    return problems


def self_test():
    """The edge rule on small workspaces: an inward edge passes, an outward
    or sideways one fails, a dev-dependency may point anywhere."""
    cases = {
        "inward": ({"a": ("herald", {}), "b": ("herald-etcd", {"dependencies": ["a"]})}, 0),
        "outward": ({"a": ("herald", {"dependencies": ["b"]}), "b": ("herald-etcd", {})}, 1),
        "sideways": ({"a": ("herald-c", {}), "b": ("herald-kubelet", {"dependencies": ["a"]})}, 1),
        "dev": ({"a": ("herald", {"dev-dependencies": ["b"]}), "b": ("herald-server", {})}, 0),
        "unranked": ({"a": ("herald-new", {})}, 1),
        "fixtures for tests": ({"a": ("herald-testkit", {}), "b": ("herald-etcd", {"dev-dependencies": ["a"]})}, 0),
        "fixtures in a library": ({"a": ("herald-testkit", {}), "b": ("herald-etcd", {"dependencies": ["a"]})}, 1),
        "fixtures for perf": ({"a": ("herald-testkit", {}), "b": ("herald-perf", {"dependencies": ["a"]})}, 0),
    }
    failed = False
    for case, (tree, expected) in cases.items():
        found = {k: (n, {s: list(v) for s, v in d.items()}) for k, (n, d) in tree.items()}
        got = check_edges(found)
        if len(got) != expected:
            failed = True
            print(f"self-test {case}: expected {expected} problem(s), got {got}")
    print("crates self-test:", "FAILED" if failed else "ok")
    return not failed


def main():
    if sys.argv[1:] == ["--self-test"]:
        return 0 if self_test() else 1
    found = crates(ROOT, members(ROOT) + ["fuzz"])
    problems = check_edges(found) + check_layout(ROOT, found)
    for p in problems:
        print("crates:", p)
    if problems:
        return 1
    if DEBTS:
        print(f"crates: {len(found)} crates: no new outward edge, import circle or long file; "
              f"{len(DEBTS)} known debts above")
    else:
        print(f"crates: {len(found)} crates, dependencies inward, no import circle, none over 900 lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())

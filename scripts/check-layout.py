#!/usr/bin/env python3
"""A crate's layout check: no import circle between the files of its
`src/`, no file there over 900 lines, and, for a crate whose README holds
a map of layers, no import from a lower layer to a higher one.

A file depends on another when its code names an item that the other file
defines: through a `use` declaration or a path in the code (`crate::a::f()`,
`super::b::T`, a macro's `$crate::`), after following re-exports (`pub use`,
and private `use` where a child names its parent's import) to the file that
defines the item. Doc comments and strings are not code: an intra-doc link
is not a dependency. Declaring a module (`mod a;`) is not one either, but
re-exporting from it (`pub use a::T;`) is, so a folder's `mod.rs` that
re-exports its children must define nothing they use.

The map of layers is the first Markdown table of the crate's `README.md`
(next to `src/`) whose header row is `| layer | module | holds |`:

    | layer | module | holds |
    | --- | --- | --- |
    | primitives | `sync.rs` | the sync types behind one shim |
    | primitives | `queue.rs` | the SPSC queue |
    | state | `shared.rs` | the state every thread shares |
    | facade | `lib.rs` | crate docs, the public modules |

One row per top-level module of `src/`: a file (`name.rs`, the crate root
`lib.rs` or `main.rs`) or a folder (`name/`, with every file under it). The
layers are named in the first column and listed from the ground up: the
rows of one layer are consecutive, and a layer's first row comes after
every row of the layers below it. A module may use any module of its own
layer or of a lower one (the circle check still holds between files); a
use of a higher layer's module fails, named with the file and line that
makes it, as do a module the map does not place and a row naming no
module. A crate without such a table gets the circle and length checks
only.

Usage: scripts/check-layout.py [SRC_DIR] (default engine/src), or
--self-test to check the checker on small trees with and without a circle
or an upward import. `--graph` also prints who uses whom. Exits 1 and names
every circle (with the lines that make it), every upward import (and
their count), every unplaced module and every long file.
"""

import os
import re
import sys
import tempfile

MAX_LINES = 900

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip(src):
    """The source with comments and string and char literals blanked
    (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        nxt = src[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 40]) and not re.match(
            r"[A-Za-z0-9_]", src[i - 1] if i else " "
        ):
            hashes = re.match(r"r(#*)\"", src[i:]).group(1)
            end = src.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "'" and (
            (i + 2 < n and src[i + 2] == "'") or (nxt == "\\")
        ):
            j = i + 1
            while j < n and src[j] != "'":
                j += 2 if src[j] == "\\" else 1
            j += 1
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use(tree):
    """`a::{b, c::{d, e as f}, g::*}` -> [(path, alias)]: alias None for a
    glob, the last segment (or the `as` name) otherwise."""
    tree = re.sub(r"\s+as\s+", "@", tree)
    tree = re.sub(r"\s+", "", tree)
    results = []

    def walk(prefix, t):
        # Split the top level of a brace group on commas.
        if t.startswith("{") and t.endswith("}"):
            depth, start = 0, 1
            for k in range(1, len(t) - 1):
                ch = t[k]
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                elif ch == "," and depth == 0:
                    if t[start:k]:
                        walk(prefix, t[start:k])
                    start = k + 1
            if t[start:-1]:
                walk(prefix, t[start:-1])
            return
        brace = t.find("{")
        if brace >= 0:
            head = [s for s in t[:brace].split("::") if s]
            walk(prefix + head, t[brace:])
            return
        alias = None
        if "@" in t:
            t, alias = t.split("@")
        segs = [s for s in t.split("::") if s]
        if segs == ["self"]:
            results.append((prefix, alias or (prefix[-1] if prefix else None)))
        elif segs and segs[-1] == "*":
            results.append((prefix + segs, None))
        else:
            results.append((prefix + segs, alias or segs[-1]))

    walk([], tree)
    return results


class Module:
    def __init__(self, path, file):
        self.path = path  # tuple of segments below the crate root
        self.file = file
        self.children = set()  # child module names
        self.uses = {}  # name -> (absolute path, line)
        self.refs = []  # (absolute path, line)


def module_path(src_dir, file):
    rel = os.path.relpath(file, src_dir)[:-3].split(os.sep)
    if rel[-1] in ("lib", "mod"):
        rel = rel[:-1]
    return tuple(rel)


def absolute(segs, here, modules):
    """A path as written in module `here` -> absolute segments, or None
    for a path outside this crate (std, a dependency, a local name)."""
    if not segs:
        return None
    base = list(here)
    if segs[0] in modules[here].children:
        return tuple(base + segs)
    if segs[0] in ("crate", "$crate"):
        base, segs = [], segs[1:]
    elif segs[0] == "self":
        segs = segs[1:]
    elif segs[0] == "super":
        while segs and segs[0] == "super":
            base, segs = base[:-1], segs[1:]
    else:
        return None
    return tuple(base + segs)


def parse(src_dir):
    modules = {}
    for root, _, files in os.walk(src_dir):
        for f in sorted(files):
            if f.endswith(".rs"):
                file = os.path.join(root, f)
                modules[module_path(src_dir, file)] = Module(
                    module_path(src_dir, file), file
                )
    for path in list(modules):
        if path:
            parent = modules.get(path[:-1])
            if parent:
                parent.children.add(path[-1])
    for m in list(modules.values()):
        code = strip(open(m.file, encoding="utf-8").read())
        # Inline modules (`mod tests { ... }`): their own paths, same file.
        spans = []  # (start, end, path)
        for mm in re.finditer(r"\bmod\s+(" + IDENT + r")\s*\{", code):
            depth, j = 1, mm.end()
            while j < len(code) and depth:
                depth += {"{": 1, "}": -1}.get(code[j], 0)
                j += 1
            spans.append((mm.start(), j, mm.group(1)))

        def here(pos):
            path = m.path
            for s, e, name in spans:
                if s <= pos < e:
                    path = path + (name,)
            return path

        for s, e, name in spans:
            inner = here(s)  # its own span holds its start
            if inner not in modules:
                sub = Module(inner, m.file)
                sub.inline = True
                modules[inner] = sub
                modules[inner[:-1]].children.add(name)
        line_of = lambda pos: code.count("\n", 0, pos) + 1
        use_spans = []
        for u in re.finditer(r"\buse\s+([^;]+);", code):
            use_spans.append((u.start(), u.end()))
            owner = modules[here(u.start())]
            for segs, alias in expand_use(u.group(1)):
                target = absolute(segs, owner.path, modules)
                if target is None:
                    continue
                owner.refs.append((target, line_of(u.start())))
                if alias:
                    owner.uses[alias] = (target, line_of(u.start()))
        for p in re.finditer(
            r"(?<![A-Za-z0-9_:])(\$?crate|super|self)((?:::" + IDENT + r")+)!?", code
        ):
            if any(s <= p.start() < e for s, e in use_spans):
                continue
            segs = [p.group(1)] + [s for s in p.group(2).split("::") if s]
            target = absolute(segs, here(p.start()), modules)
            if target is not None:
                modules[here(p.start())].refs.append((target, line_of(p.start())))
    return modules


def resolve(modules, path, seen=None):
    """The file that defines the item at `path` (following re-exports)."""
    seen = seen or set()
    if path in seen:
        return None
    seen.add(path)
    cur = ()
    for k, seg in enumerate(path):
        if seg in modules[cur].children:
            cur = cur + (seg,)
            continue
        if seg == "*":
            return modules[cur].file
        use = modules[cur].uses.get(seg)
        if use is not None:
            return resolve(modules, use[0] + tuple(path[k + 1:]), seen)
        return modules[cur].file
    return modules[cur].file


def find_circles(modules):
    files = sorted({m.file for m in modules.values()})
    edges = {f: {} for f in files}
    for m in modules.values():
        for target, line in m.refs:
            t = resolve(modules, target)
            if t and t != m.file:
                edges[m.file].setdefault(t, line)
    # Tarjan's strongly connected components.
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]

    def connect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for f in files:
        if f not in index:
            connect(f)
    return edges, sccs


def cycle_in(edges, comp):
    """One cycle through the component, as a list of files."""
    comp = set(comp)
    start = min(comp)
    parent, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in edges[v]:
            if w == start:
                path = [v]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return list(reversed(path)) + [start]
            if w in comp and w not in parent:
                parent[w] = v
                queue.append(w)
    return [start]


MAP_HEADER = ["layer", "module", "holds"]


def read_map(src_dir):
    """The crate's map of layers: (readme, [layer names, ground first],
    {module: (layer index, readme line, `.rs` or `/`)}, problems), or None
    when its README holds no map."""
    readme = os.path.join(os.path.dirname(os.path.abspath(src_dir)), "README.md")
    if not os.path.isfile(readme):
        return None
    lines = open(readme, encoding="utf-8").read().split("\n")
    cells = lambda row: [c.strip() for c in row.strip().strip("|").split("|")]
    start = next(
        (k for k, row in enumerate(lines)
         if row.strip().startswith("|") and [c.lower() for c in cells(row)] == MAP_HEADER),
        None,
    )
    if start is None:
        return None
    layers, placed, problems = [], {}, []
    where = lambda k: f"{os.path.relpath(readme)}:{k + 1}"
    for k in range(start + 2, len(lines)):
        row = lines[k].strip()
        if not row.startswith("|"):
            break
        c = cells(row)
        if len(c) != 3 or not c[0]:
            problems.append(f"{where(k)}: a map row is `| layer | module | holds |`: {row}")
            continue
        layer, module = c[0], c[1]
        m = re.fullmatch(r"`(" + IDENT + r")(\.rs|/)`", module)
        if not m:
            problems.append(
                f"{where(k)}: the module column names one file (`name.rs`) or folder (`name/`): {module}")
            continue
        if not layers or layers[-1] != layer:
            if layer in layers:
                problems.append(
                    f"{where(k)}: layer `{layer}` again after `{layers[-1]}`: a layer's rows are consecutive")
                continue
            layers.append(layer)
        name, kind = m.group(1), m.group(2)
        if name in placed:
            problems.append(f"{where(k)}: module `{name}` is placed twice")
            continue
        placed[name] = (len(layers) - 1, k + 1, kind)
    return readme, layers, placed, problems


def top_module(src_dir, file):
    """The top-level module a file belongs to, as the map spells it:
    `a.rs` for src/a.rs, `a/` for anything under src/a/."""
    rel = os.path.relpath(file, src_dir).split(os.sep)
    return (rel[0][:-3], ".rs") if len(rel) == 1 else (rel[0], "/")


def check_layers(src_dir, edges, layer_map):
    """Upward imports, unplaced modules and stale rows: (problems, the
    upward imports as (file, line, target))."""
    readme, layers, placed, problems = layer_map
    problems = list(problems)
    rel = lambda f: os.path.relpath(f, src_dir)
    files = sorted(edges)
    present = {}
    for f in files:
        name, kind = top_module(src_dir, f)
        present.setdefault(name, (kind, f))
    for name, (kind, f) in sorted(present.items()):
        if name not in placed:
            problems.append(
                f"{rel(f)}: module `{name}{kind}` is not placed in the map of layers "
                f"({os.path.relpath(readme)})")
        elif placed[name][2] != kind:
            problems.append(
                f"{os.path.relpath(readme)}:{placed[name][1]}: module `{name}` is a "
                f"{'folder' if kind == '/' else 'file'}: write `{name}{kind}`")
    for name, (_, line, kind) in sorted(placed.items()):
        if name not in present:
            problems.append(
                f"{os.path.relpath(readme)}:{line}: the map places `{name}{kind}`, "
                f"which is not a module of {src_dir}")
    upward = []
    for f in files:
        a = placed.get(top_module(src_dir, f)[0])
        for t, line in sorted(edges[f].items(), key=lambda e: e[1]):
            b = placed.get(top_module(src_dir, t)[0])
            if a is not None and b is not None and b[0] > a[0]:
                upward.append((f, line, t))
                problems.append(
                    f"{rel(f)}:{line}: upward import: `{top_module(src_dir, f)[0]}` "
                    f"(layer {layers[a[0]]}) uses {rel(t)} (layer {layers[b[0]]})")
    return problems, upward


def check(src_dir):
    """Every problem of the tree, its import graph, and its map's verdict:
    None without a map, else (layers, upward imports)."""
    problems = []
    modules = parse(src_dir)
    edges, sccs = find_circles(modules)
    rel = lambda f: os.path.relpath(f, src_dir)
    for comp in sccs:
        cyc = cycle_in(edges, comp)
        steps = ", ".join(
            f"{rel(a)}:{edges[a][b]} -> {rel(b)}" for a, b in zip(cyc, cyc[1:])
        )
        problems.append(
            f"import circle among {len(comp)} files ({', '.join(map(rel, comp))}); "
            f"one cycle: {steps}"
        )
    layered = None
    layer_map = read_map(src_dir)
    if layer_map is not None:
        found, upward = check_layers(src_dir, edges, layer_map)
        problems += found
        layered = (layer_map[1], upward)
        if upward:
            n = len(upward)
            problems.append(f"{n} upward import{'' if n == 1 else 's'} (listed above)")
    for f in sorted({m.file for m in modules.values()}):
        lines = sum(1 for _ in open(f, encoding="utf-8"))
        if lines > MAX_LINES:
            problems.append(f"{rel(f)} has {lines} lines (at most {MAX_LINES})")
    return problems, edges, layered


MAP = "| layer | module | holds |\n| --- | --- | --- |\n"


def self_test():
    """The checker finds a circle (direct, through a chain, through a
    re-export, through a path in code), ignores doc links, strings and
    child modules, and flags a long file; with a map of layers, it flags
    an import from a lower layer to a higher one (directly, through a
    re-export, from a folder's file), a module the map does not place, a
    row naming no module and a layer split in two, and lets a module use
    its own layer or a lower one."""
    layered = lambda rows: MAP + "".join(f"| {l} | `{m}` | x |\n" for l, m in rows)
    base = [("low", "a.rs"), ("low", "b.rs"), ("high", "c.rs"), ("high", "lib.rs")]
    cases = {
        "direct": ({"lib.rs": "mod a; mod b;", "a.rs": "use crate::b::B; pub struct A;",
                    "b.rs": "use crate::a::A; pub struct B;"}, 1),
        "chain": ({"lib.rs": "mod a; mod b; mod c;", "a.rs": "use crate::b::B; pub struct A;",
                   "b.rs": "use crate::c::C; pub struct B;",
                   "c.rs": "fn f() { crate::a::A; } pub struct C;"}, 1),
        "re-export": ({"lib.rs": "mod a; mod b; pub use a::A; pub use b::B;",
                       "a.rs": "use crate::{B}; pub struct A;",
                       "b.rs": "use crate::A as Alias; pub struct B;"}, 1),
        "folder": ({"lib.rs": "mod w; pub use w::{R, S};", "w/mod.rs": "mod r; mod s; pub use r::R; pub use s::S; pub struct Hub;",
                    "w/r.rs": "use super::Hub; pub struct R;", "w/s.rs": "pub struct S;"}, 1),
        "macro": ({"lib.rs": "mod a; mod b;", "a.rs": "crate::b::m!(); pub struct A;",
                   "b.rs": "fn g() { let _ = $crate::a::A; }"}, 1),
        "clean": ({"lib.rs": "mod a; mod b; mod w; pub use a::A; pub use w::R;",
                   "a.rs": "/// [`B`](crate::b::B)\nuse crate::w::R; pub struct A; const S: &str = \"crate::b::B\";",
                   "b.rs": "pub struct B; #[cfg(test)] mod tests { use super::*; }",
                   "w/mod.rs": "mod r; pub use r::R;", "w/r.rs": "use super::super::b::B; pub struct R;"}, 0),
        "long": ({"lib.rs": "mod a;", "a.rs": "\n" * (MAX_LINES + 1)}, 1),
        "layers kept": ({"../README.md": "# c\n\n" + layered(base),
                         "lib.rs": "mod a; mod b; mod c; pub use c::C;",
                         "a.rs": "pub struct A;", "b.rs": "use crate::a::A; pub struct B;",
                         "c.rs": "use crate::b::B; pub struct C; fn f() { crate::a::A; }"}, 0),
        "no map, no layers": ({"../README.md": "| layer | files |\n| --- | --- |\n| x | `a.rs` |\n",
                               "lib.rs": "mod a; mod b;", "a.rs": "use crate::b::B; pub struct A;",
                               "b.rs": "pub struct B;"}, 0),
        "upward": ({"../README.md": layered(base), "lib.rs": "mod a; mod b; mod c;",
                    "a.rs": "use crate::c::C; pub struct A;", "b.rs": "pub struct B;",
                    "c.rs": "pub struct C;"}, 2),
        "upward in code, through the root": (
            {"../README.md": layered(base), "lib.rs": "mod a; mod b; mod c; pub use c::C;",
             "a.rs": "pub struct A;", "b.rs": "fn f() -> crate::C { todo!() }",
             "c.rs": "pub struct C;"}, 2),
        "upward from a folder": (
            {"../README.md": layered([("low", "w/"), ("low", "b.rs"), ("high", "c.rs"), ("high", "lib.rs")]),
             "lib.rs": "mod w; mod b; mod c;", "w/mod.rs": "mod r;",
             "w/r.rs": "use crate::c::C;", "b.rs": "", "c.rs": "pub struct C;"}, 2),
        "unplaced": ({"../README.md": layered(base), "lib.rs": "mod a; mod b; mod c; mod d;",
                      "a.rs": "", "b.rs": "", "c.rs": "", "d.rs": ""}, 1),
        "stale row": ({"../README.md": layered(base + [("high", "gone.rs")]),
                       "lib.rs": "mod a; mod b; mod c;", "a.rs": "", "b.rs": "", "c.rs": ""}, 1),
        "folder written as a file": (
            {"../README.md": layered([("low", "a.rs"), ("low", "b.rs"), ("high", "c.rs"), ("high", "lib.rs")]),
             "lib.rs": "mod a; mod b; mod c;", "a/mod.rs": "", "b.rs": "", "c.rs": ""}, 1),
        "layer split": ({"../README.md": layered([("low", "a.rs"), ("high", "c.rs"), ("low", "b.rs"), ("high", "lib.rs")]),
                         "lib.rs": "mod a; mod b; mod c;", "a.rs": "", "b.rs": "", "c.rs": ""}, 2),
    }
    failed = False
    for name, (tree, expected) in cases.items():
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "src")
            for path, text in tree.items():
                full = os.path.normpath(os.path.join(src, path))
                os.makedirs(os.path.dirname(full), exist_ok=True)
                with open(full, "w") as out:
                    out.write(text + "\n")
            problems, _, _ = check(src)
            if len(problems) != expected:
                failed = True
                print(f"self-test {name}: expected {expected} problem(s), got {problems}")
    print("layout self-test:", "FAILED" if failed else "ok")
    return not failed


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return 0 if self_test() else 1
    paths = [a for a in args if not a.startswith("--")]
    src = paths[0] if paths else os.path.join(os.path.dirname(__file__), "..", "engine", "src")
    src = os.path.normpath(src)
    problems, edges, layered = check(src)
    if "--graph" in args:
        for f in sorted(edges):
            print(os.path.relpath(f, src), "->", ", ".join(sorted(os.path.relpath(t, src) for t in edges[f])))
    for p in problems:
        print("layout:", p)
    if problems:
        return 1
    layers = ""
    if layered is not None:
        names, upward = layered
        layers = f"{len(names)} layers ({', '.join(names)}), {len(upward)} upward imports; "
    print(f"layout: {src}: {layers}no import circle between files, none over {MAX_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())

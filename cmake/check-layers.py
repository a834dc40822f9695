#!/usr/bin/env python3
"""cmake/check-layers.py — the include layers, enforced by the build (target `layers`, part
of `all`): a file may include its own layer and those below it, never one above.

    base      nothing of the project's (dynbuf, clock, errfmt, log, strmap, backoff)
    kube      base                      (REST, watch, exec, kubeconfig, Events)
    runtime   base, kube                (informer, queue, leader election, probe server)
    sandbox   base, kube, runtime       (the controller's decisions and its reconcile pass)
    cmd, cli  any of the above (cli also its own files)

Prints each wrong-way include as file:line and exits 1.

With --archive LIB (run after the library is built): the same order, and no circle, in
what the code really calls. Each object file of LIB is one module (controller/<layer>/X.c);
a module that uses a symbol another defines depends on it. A call up the stack, or any
circle of modules that depend on each other (a header is no way around it: a side-door
header declaring functions of several files shows up here), fails the build."""
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOWED = {
    "controller/base": {"base"},
    "controller/kube": {"base", "kube"},
    "controller/runtime": {"base", "kube", "runtime"},
    "controller/sandbox": {"base", "kube", "runtime", "sandbox"},
    "controller/cmd": {"base", "kube", "runtime", "sandbox"},
    "cli": {"base", "kube", "runtime", "sandbox", "cli"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z]+)/')


LAYER_ORDER = ["base", "kube", "runtime", "sandbox", "cmd"]


def module_layers():
    """Object name (X.c.o) -> its layer, from the source tree."""
    layers = {}
    for layer in LAYER_ORDER:
        d = os.path.join(ROOT, "controller", layer)
        for name in os.listdir(d):
            if name.endswith(".c"):
                layers[name + ".o"] = layer
    return layers


def link_graph(archive):
    """module -> set of modules whose symbols it uses, from nm."""
    out = subprocess.run(["nm", "-A", archive], capture_output=True, text=True, check=True).stdout
    defined, used = {}, collections.defaultdict(set)
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        obj = parts[0].split(":")[1]
        if parts[1] == "U":
            used[obj].add(parts[2])
        elif parts[1] in "TDBR":
            defined[parts[2]] = obj
    graph = collections.defaultdict(set)
    for obj, syms in used.items():
        for sym in syms:
            if sym in defined and defined[sym] != obj:
                graph[obj].add(defined[sym])
    return graph


def circles(graph):
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def check_archive(archive):
    layers = module_layers()
    graph = link_graph(archive)
    bad = 0
    for obj in sorted(graph):
        for dep in sorted(graph[obj]):
            a, b = layers.get(obj), layers.get(dep)
            if a and b and LAYER_ORDER.index(b) > LAYER_ORDER.index(a):
                bad += 1
                print("%s/%s calls %s/%s, a layer above it" % (a, obj[:-2], b, dep[:-2]))
    for comp in circles(graph):
        bad += 1
        inner = {m: sorted(d for d in graph[m] if d in comp) for m in comp}
        print("circle of %d modules: %s" % (len(comp), "; ".join(
            "%s -> %s" % (m[:-4], ", ".join(d[:-4] for d in inner[m])) for m in comp)))
    if bad:
        print("%d wrong-way calls or circles in %s" % (bad, os.path.basename(archive)))
        return 1
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--archive":
        return check_archive(sys.argv[2])
    bad = checked = 0
    for folder, allowed in ALLOWED.items():
        d = os.path.join(ROOT, folder)
        for name in sorted(os.listdir(d)):
            if not name.endswith((".c", ".h")):
                continue
            checked += 1
            path = os.path.join(d, name)
            for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                m = INCLUDE.match(line)
                if m and m.group(1) not in allowed:
                    bad += 1
                    print("%s/%s:%d: %s/ is above %s/ (allowed: %s)" % (folder, name, n, m.group(1),
                          folder.split("/")[-1], ", ".join(sorted(allowed))))
    if bad:
        print("%d wrong-way includes in %d files" % (bad, checked))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""cmake/check-layers.py — the include layers, enforced by the build (target `layers`, part
of `all`): a file may include its own layer and those below it, never one above.

    base      nothing of the project's (dynbuf, clock, errfmt, log, strmap, backoff)
    kube      base                      (REST, watch, exec, kubeconfig, Events)
    runtime   base, kube                (informer, queue, leader election, probe server)
    sandbox   base, kube, runtime       (the controller's decisions and its reconcile pass)
    cmd, cli  any of the above (cli also its own files)

Inside sandbox/ the same holds for its floors, one folder each, by include:

    model/    base, kube/kjson.h, other model files (spec, builders, naming, quantity, the
              typed views, objects, netpol, selector, oneshot, records, starts, terminating,
              termination, workspacecopy, warmbinder, workkey): what a Sandbox and its
              objects are
    decide/   the above, runtime/leaseview.h, other decide files (<concern>_decide,
              reconcile_observe, shapes): pure decisions, no I/O header
    io/       anything below (the subsystems handed struct sbx_deps)
    manager/  anything: the manager (controller.c, settings.c) and the pass it runs
              (reconcile.c, pass.h)

and only the manager (controller.c, and its settings) includes the controller's API
(reconcile.h), only it and the pass (reconcile.c) include the pass's environment (pass.h);
no file of io/ includes one of manager/; a file in sandbox/ itself, outside the four, fails.
KNOWN_FLOOR_EXCEPTIONS would name a wrong-way include let through, with what it takes
from above (none now). The CLI may use sandbox/'s model and decide files, never the rest.

Outside the typed views (PATH_READ_VIEWS), a field read by dotted path ("status.podIP")
fails too; KNOWN_PATH_READS could let a file through with a count that may only go down
(none now).

Prints each wrong-way include or read as file:line and exits 1.

With --archive LIB (run after each library is built: libyaocore, and libyaocli, whose
modules have no layers of their own but may not form a circle): the same order, and no
circle, in what the code really calls. Each object file of LIB is one module (controller/<layer>/X.c);
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

# The floors inside sandbox/: its folders, lowest first (see the docstring).
SANDBOX_FLOORS = ["model", "decide", "io", "manager"]
PURE_BELOW = {"kube/kjson.h"}
# Wrong-way includes let through, each with what it takes from the floor above: none now
# (the eight found when the floors were first checked, 2026-12-06, were fixed the same day:
# label names into spec.h, the metadata stripping into kube/kjson, the termination of a
# container into its own model file). An entry may only leave: one fixed fails the build
# until it is removed.
KNOWN_FLOOR_EXCEPTIONS = {
}
INCLUDE_PATH = re.compile(r'^\s*#\s*include\s+"([a-z_]+(?:/[a-z_0-9]+)+\.h)"')


def header_floor(inc):
    """The floor of an included header: (layer, floor or None); "sandbox/io/warm.h" is
    ("sandbox", "io"), a header of sandbox/ outside the floors ("sandbox", "?")."""
    parts = inc.split("/")
    if parts[0] != "sandbox":
        return parts[0], None
    return "sandbox", parts[1] if len(parts) == 3 and parts[1] in SANDBOX_FLOORS else "?"


def include_allowed(floor, inc):
    """May a file of sandbox floor `floor` (or "cli") include inc?"""
    layer, hf = header_floor(inc)
    if hf == "?":
        return False
    if floor == "manager":
        return True
    if floor == "io":
        return hf != "manager"
    if layer == "base" or inc in PURE_BELOW:
        return True
    if floor == "decide" and inc == "runtime/leaseview.h":
        return True
    if layer != "sandbox":
        return floor == "cli"   # the CLI's own kube/runtime use is the folder rule's
    return hf == "model" or (hf == "decide" and floor in ("decide", "cli"))


def sandbox_sources():
    """(folder, file name, floor) of every .c/.h under controller/sandbox/ and cli/; a file
    of sandbox/ outside its floor folders has floor "?"."""
    out = []
    top = os.path.join(ROOT, "controller/sandbox")
    for entry in sorted(os.listdir(top)):
        path = os.path.join(top, entry)
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                out.append(("controller/sandbox/" + entry, name, entry if entry in SANDBOX_FLOORS else "?"))
        else:
            out.append(("controller/sandbox", entry, "?"))
    out += [("cli", n, "cli") for n in sorted(os.listdir(os.path.join(ROOT, "cli")))]
    return [x for x in out if x[1].endswith((".c", ".h"))]


def check_floors():
    """The floors inside sandbox/ and the CLI's use of sandbox/. Number of wrong includes."""
    bad = 0
    seen_known = set()
    for folder, name, floor in sandbox_sources():
        stem = name[:-2]
        if floor == "?":
            bad += 1
            print("%s/%s: sandbox/'s files live in its floor folders (%s)" % (folder, name, ", ".join(SANDBOX_FLOORS)))
            continue
        for n, line in enumerate(open(os.path.join(ROOT, folder, name), encoding="utf-8", errors="replace"), 1):
            m = INCLUDE_PATH.match(line)
            if not m:
                continue
            inc = m.group(1)
            if folder != "cli" and inc == "sandbox/%s/%s.h" % (floor, stem):
                continue   # its own header
            why = None
            known = (folder + "/" + name, inc) in KNOWN_FLOOR_EXCEPTIONS
            if known:
                seen_known.add((folder + "/" + name, inc))
            if inc == "sandbox/manager/reconcile.h" and folder != "cli" and stem not in ("controller", "settings"):
                why = "only the manager (controller.c) and its settings include the controller's API"
            elif inc == "sandbox/manager/pass.h" and folder != "cli" and stem not in ("controller", "reconcile"):
                why = "only controller.c and reconcile.c include the pass's environment"
            elif floor == "cli" and inc.startswith("sandbox/") and header_floor(inc)[1] not in ("model", "decide"):
                why = "the CLI uses sandbox/'s model and decide files, never the rest"
            elif floor != "cli" and not include_allowed(floor, inc) and not known:
                hf = header_floor(inc)[1]
                why = "a %s file includes %s, %s" % (floor, inc, "a file of a floor above" if hf else "of a layer above")
            if why:
                bad += 1
                print("%s/%s:%d: %s" % (folder, name, n, why))
    for gone in sorted(set(KNOWN_FLOOR_EXCEPTIONS) - seen_known):
        bad += 1
        print("%s: no longer includes %s: remove it from KNOWN_FLOOR_EXCEPTIONS" % gone)
    return bad


# Reading an object's fields by dotted path ("status.podIP") belongs to the typed views, where
# each kind's fields are read once with their rules: the Sandbox (sandboxview.c), its claim
# (claimview.c), a pod as the pass observes it (reconcile_observe.c), any object's metadata
# (objects.c: struct sbx_meta, labels and annotations by key), a Lease (runtime/leaseview.c),
# and kube/kjson.c that implements the reads. Everywhere else in the controller and the CLI
# a dotted read fails the build, but for the counts below: reads made before the rule, per
# file, which may only go down (a file with fewer fails until its count is lowered).
PATH_READ = re.compile(r'\bkj_\w+\([^;]*?"([A-Za-z]\w*\.[A-Za-z][\w.]*)"')
PATH_READ_VIEWS = {"controller/sandbox/model/sandboxview.c", "controller/sandbox/model/claimview.c",
                   "controller/sandbox/decide/reconcile_observe.c", "controller/sandbox/model/objects.c",
                   "controller/sandbox/model/podmetrics.c", "controller/runtime/leaseview.c",
                   "controller/kube/kjson.c", "controller/kube/eventview.c"}
KNOWN_PATH_READS = {}


def check_path_reads():
    """Dotted path reads outside the views. Number of files over (or under) their count."""
    bad = 0
    for folder in ("controller/base", "controller/kube", "controller/runtime", "controller/sandbox",
                   "controller/cmd", "cli"):
        for rel in source_files(folder):
            if rel in PATH_READ_VIEWS:
                continue
            reads = []
            for n, line in enumerate(open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace"), 1):
                reads += ["%s:%d: reads %s" % (rel, n, m.group(1)) for m in PATH_READ.finditer(line)]
            known = KNOWN_PATH_READS.get(rel, 0)
            if len(reads) > known:
                bad += 1
                print("\n".join(reads))
                print("%s: %d dotted path reads outside the typed views (allowed %d): read the field through "
                      "the kind's view (sandboxview, claimview, reconcile_observe, objects' sbx_meta, leaseview)"
                      % (rel, len(reads), known))
            elif len(reads) < known:
                bad += 1
                print("%s: %d dotted path reads, fewer than the %d in KNOWN_PATH_READS: lower the count"
                      % (rel, len(reads), known))
    return bad


def source_files(folder):
    """The .c and .h files under folder (relative to the root; sandbox/'s floor folders
    included), sorted."""
    out = []
    for d, subdirs, names in os.walk(os.path.join(ROOT, folder)):
        subdirs.sort()
        out += [os.path.relpath(os.path.join(d, n), ROOT) for n in sorted(names) if n.endswith((".c", ".h"))]
    return out


def module_layers():
    """Object name (X.c.o) -> its layer, from the source tree."""
    layers = {}
    for layer in LAYER_ORDER:
        for rel in source_files("controller/" + layer):
            if rel.endswith(".c"):
                layers[os.path.basename(rel) + ".o"] = layer
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
        for rel in source_files(folder):
            checked += 1
            name = rel[len(folder) + 1:]
            path = os.path.join(ROOT, rel)
            for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                m = INCLUDE.match(line)
                if m and m.group(1) not in allowed:
                    bad += 1
                    print("%s/%s:%d: %s/ is above %s/ (allowed: %s)" % (folder, name, n, m.group(1),
                          folder.split("/")[-1], ", ".join(sorted(allowed))))
    bad += check_floors()
    bad += check_path_reads()
    if bad:
        print("%d wrong-way includes or dotted path reads in %d files" % (bad, checked))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

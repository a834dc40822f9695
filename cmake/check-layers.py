#!/usr/bin/env python3
"""cmake/check-layers.py — the include layers, enforced by the build (target `layers`, part
of `all`): a file may include its own layer and those below it, never one above.

    base      nothing of the project's (dynbuf, clock, errfmt, log, strmap, backoff)
    kube      base                      (REST, watch, exec, kubeconfig, Events)
    runtime   base, kube                (informer, queue, leader election, probe server)
    sandbox   base, kube, runtime       (the controller's decisions and its reconcile pass)
    cmd, cli  any of the above (cli also its own files)

Prints each wrong-way include as file:line and exits 1."""
import os
import re
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


def main():
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

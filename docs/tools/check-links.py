#!/usr/bin/env python3
"""docs/tools/check-links.py — every Markdown link in the README, docs/ and the chart's
README points inside the repository at something that exists (a file, a directory, and for
a #fragment a heading of that file), or is an absolute http(s) URL. A link out of the
repository by a relative path (../shared/..., a sibling checkout) is refused: readers of a
clone do not have it. Exit 1 with one line per broken link."""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path):
    """GitHub's anchors of a Markdown file's headings."""
    out = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            a = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(a)
    return out


def main():
    files = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "charts/yao-sandbox/README.md")]
    files += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    bad, n = [], 0
    for f in files:
        in_code = False
        for lineno, line in enumerate(open(f, encoding="utf-8"), 1):
            if line.lstrip().startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):   # not in code spans
                n += 1
                where = "%s:%d" % (os.path.relpath(f, ROOT), lineno)
                if re.match(r"^[a-z]+://", target) or target.startswith("mailto:"):
                    continue
                path, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
                if not (dest + os.sep).startswith(ROOT + os.sep) and dest != ROOT:
                    bad.append("%s: %s leaves the repository" % (where, target))
                elif not os.path.exists(dest):
                    bad.append("%s: %s does not exist" % (where, target))
                elif frag and dest.endswith(".md") and frag not in anchors(dest):
                    bad.append("%s: %s has no heading #%s" % (where, target, frag))
    for b in bad:
        print(b)
    print("%d links in %d files: %d broken" % (n, len(files), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""bench/report.py RESULTS.json [DOC.md] — print the benchmark's tables as Markdown; with DOC,
replace the block between the markers <!-- bench:results:begin --> and
<!-- bench:results:end --> in DOC with them (the rest of the document is left alone)."""
import json
import os
import sys

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import KEYS, exec_table, fmt, table  # noqa: E402

BEGIN, END = "<!-- bench:results:begin -->", "<!-- bench:results:end -->"


def spread_table(doc):
    lines = ["| spread (min – max over rounds) | floor | yao-sandbox | agent-sandbox |", "|---|---|---|---|"]
    for k in ("ready_p99_ms", "all_ready_s", "all_gone_s", "rss_peak_kib", "cpu_s", "requests_per_sandbox",
              "idle_cpu_pct"):
        cells = []
        for w in ("floor", "ours", "agent_sandbox"):
            sp = (doc[w].get("spread") or {}).get(k)
            cells.append(f"{fmt(sp[0])} – {fmt(sp[1])}" if sp else "–")
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def profile_table(doc):
    stages = ["pvc_exists", "pvc_bound", "pod_exists", "pod_scheduled", "pod_ready", "sandbox_ready"]
    lines = ["| create → … p50 / p99 (ms), first round | " + " | ".join(stages) + " |",
             "|---|" + "---|" * len(stages)]
    for w, label in (("floor", "floor"), ("ours", "yao-sandbox"), ("agent_sandbox", "agent-sandbox")):
        runs = doc[w].get("runs") or []
        prof = runs[0].get("profile") if runs else None
        if not prof:
            continue
        lines.append(f"| {label} | " + " | ".join(f"{fmt(prof[s]['p50_ms'])} / {fmt(prof[s]['p99_ms'])}"
                                                  for s in stages) + " |")
    return "\n".join(lines)


def requests_table(doc):
    rows = []
    for w, label in (("ours", "yao-sandbox"), ("agent_sandbox", "agent-sandbox")):
        tr = next((r.get("traced_requests") for r in doc[w].get("runs") or [] if r.get("traced_requests")), None)
        if tr:
            rows.append(f"| {label} | " + ", ".join(f"{k} {fmt(v)}" for k, v in tr.items()) + " |")
    if not rows:
        return ""
    return "\n".join(["| requests per sandbox by verb and resource (--trace) | |", "|---|---|"] + rows)


def render(doc):
    m = doc.get("machine") or {}
    out = [f"Run {doc.get('date', '?')} on {m.get('nproc', '?')} cores, {m.get('mem_gib', '?')} GiB, "
           f"{m.get('cpu', '?')} (load average at start {' '.join(m.get('loadavg_at_start', []))}).",
           f"Command: `{doc.get('command', '')}`; settings: `{json.dumps(doc.get('settings', {}))}`.", "",
           table(doc), "", spread_table(doc), "", profile_table(doc), ""]
    rq = requests_table(doc)
    if rq:
        out += [rq, ""]
    for n, v in sorted((doc.get("smaller_n") or {}).items(), key=lambda kv: int(kv[0])):
        small = {"n": int(n), "rounds": doc.get("rounds"), **{w: v[w] for w in ("floor", "ours", "agent_sandbox")}}
        out += [table(small), ""]
    out += [exec_table(doc.get("exec") or {}), ""]
    out += ["| target (largest N) | ours / reference | met |", "|---|---|---|"]
    for t in doc.get("targets", []):
        out.append(f"| {t['target']} | {fmt(t['ratio'])}{'×' if t['ratio'] is not None else ''} | "
                   f"{'–' if t['met'] is None else 'yes' if t['met'] else 'no'} |")
    return "\n".join(out)


def main():
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    for w in ("floor", "ours", "agent_sandbox"):
        for k in KEYS:
            doc[w].setdefault(k, None)
    text = render(doc)
    if len(sys.argv) < 3:
        print(text)
        return
    path = sys.argv[2]
    with open(path) as f:
        md = f.read()
    if BEGIN not in md or END not in md:
        sys.exit(f"{path}: no {BEGIN} ... {END} block")
    head, rest = md.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path + ".tmp", "w") as f:
        f.write(head + BEGIN + "\n" + text + "\n" + END + tail)
    os.replace(path + ".tmp", path)
    print(f"updated {path}", file=sys.stderr)


if __name__ == "__main__":
    main()

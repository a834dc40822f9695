#!/usr/bin/env python3
"""bench/report.py RESULTS.json [DOC.md] — print the benchmark's tables as Markdown; with DOC,
replace the block between the markers <!-- bench:results:begin --> and
<!-- bench:results:end --> in DOC with them (the rest of the document is left alone)."""
import json
import os
import sys

sys.dont_write_bytecode = True     # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import KEYS, exec_table, fmt, rnd, scenario_targets, single_table, table  # noqa: E402

BEGIN, END = "<!-- bench:results:begin -->", "<!-- bench:results:end -->"


SCENARIO_ORDER = ["immediate", "wffc", "slow-provisioning", "real-node", "warm-pool", "scale-10k",
                  "real-node-single", "real-node-local-path"]
LETTER = {"immediate": "a", "wffc": "b", "slow-provisioning": "c", "real-node": "d", "warm-pool": "e", "scale-10k": "f",
          "real-node-single": "g", "real-node-local-path": "h"}


def scale_scenario(path):
    """bench/scale.py's result (bench/results/scale.json): either a document with a
    `scenarios` object or one scenario with floor / ours / agent_sandbox at its top."""
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return None
    if isinstance(d.get("scenarios"), dict):
        d = d["scenarios"].get("scale-10k") or next(iter(d["scenarios"].values()), None) or {}
    if not all(isinstance(d.get(w), dict) for w in ("floor", "ours", "agent_sandbox")):
        return None
    d = dict(d)
    d.setdefault("status", "ok")
    d.setdefault("targets", scenario_targets(d))
    d.setdefault("source", os.path.relpath(path, os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    return d


def ratio_cell(o, p):
    return f"{fmt(rnd(o / p, 2))}×" if isinstance(o, (int, float)) and isinstance(p, (int, float)) and p else "–"


def scenarios_table(doc):
    """One row per scenario: the numbers of each config and the ratios against the round-2
    targets (ready p99 and all-ready ≤ 0.5× peer, all-ready ≤ 1.15× floor, requests/sandbox ≤
    peer; warm-pool: ready p50 ≤ 0.3× the peer's claim with a workspace). A miss is marked ✗."""
    sc = dict(doc.get("scenarios") or {})
    lines = ["| scenario | N | class | ready p50 / p99 (ms): floor · ours · peer | all Ready (s): floor · ours · peer "
             "| req/sandbox: ours · peer | ready p99 ours/peer (≤ 0.5) | all-ready ours/peer (≤ 0.5) "
             "| all-ready ours/floor (≤ 1.15) | req ours/peer (≤ 1) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    notes = []

    def mark(ok):
        return "" if ok is None else (" ✓" if ok else " ✗")

    for name in SCENARIO_ORDER + [k for k in sc if k not in SCENARIO_ORDER]:
        s = sc.get(name)
        if not s:
            continue
        label = f"{LETTER.get(name, '?')} {name}"
        if s.get("status", "ok") != "ok":
            lines.append(f"| {label} | {s.get('n', '–')} | {s.get('storage_class', '–')} | {s['status']} | | | | | | |")
            continue
        f, o, p = s["floor"], s["ours"], s["agent_sandbox"]
        if s.get("kinds"):   # real-node-single: p50 of each kind, ours / floor (≤ 1.1)
            cells = []
            for kind, kd in s["kinds"].items():
                fl, ou = (kd.get("floor") or {}).get("ready_p50_ms"), (kd.get("ours") or {}).get("ready_p50_ms")
                cells.append(f"{kind} {fmt(fl)} · {fmt(ou)}: {ratio_cell(ou, fl)}{mark(kd.get('met'))}")
            lines.append(f"| {label} | K = {s.get('k')} | {s.get('storage_class', '–')} | ready p50 (ms) floor · ours, "
                         f"ours/floor (≤ 1.1): {'; '.join(cells)} | | | | | | |")
            for w in ("ours", "agent_sandbox"):
                if (s.get(w) or {}).get("status", "ok") not in ("ok", "not run (--only)"):
                    notes.append(f"{name}: {w} {s[w]['status']}")
            if s.get("duration_s") is not None:
                notes.append(f"{name}: took {fmt(s['duration_s'])} s")
            if s.get("date") and s.get("date") != doc.get("date"):
                notes.append(f"{name}: measured {s['date']} (`{s.get('command', '')}`)")
            continue

        def trio(k):
            return " · ".join(fmt(x.get(k)) for x in (f, o, p))

        t = {x["target"]: x for x in s.get("targets") or scenario_targets(s)}

        def tcell(key, a, b):
            x = t.get(key)
            return ratio_cell(a, b) + mark(x["met"] if x else None)

        lines.append(
            f"| {label} | {s.get('n')} | {s.get('storage_class', '–')} "
            f"| {fmt(f.get('ready_p50_ms'))} / {fmt(f.get('ready_p99_ms'))} · {fmt(o.get('ready_p50_ms'))} / "
            f"{fmt(o.get('ready_p99_ms'))} · {fmt(p.get('ready_p50_ms'))} / {fmt(p.get('ready_p99_ms'))} "
            f"| {trio('all_ready_s')} | {fmt(o.get('requests_per_sandbox'))} · {fmt(p.get('requests_per_sandbox'))} "
            f"| {tcell('ready p99 ≤ 0.5× peer', o.get('ready_p99_ms'), p.get('ready_p99_ms'))} "
            f"| {tcell('all-ready ≤ 0.5× peer', o.get('all_ready_s'), p.get('all_ready_s'))} "
            f"| {tcell('all-ready ≤ 1.15× floor', o.get('all_ready_s'), f.get('all_ready_s'))} "
            f"| {tcell('requests/sandbox ≤ peer', o.get('requests_per_sandbox'), p.get('requests_per_sandbox'))} |")
        if o.get("status", "ok") != "ok":
            notes.append(f"{name}: ours {o['status']}")
        for w in ("floor", "agent_sandbox", "agent_sandbox_warm"):
            st = (s.get(w) or {}).get("status", "ok")
            if st != "ok":
                notes.append(f"{name}: {w} {st}")
        if "agent_sandbox_warm" in s:
            w = s["agent_sandbox_warm"]
            x = t.get("ready p50 ≤ 0.3× peer claim with workspace")
            notes.append(f"{name}: ready p50 ours {fmt(o.get('ready_p50_ms'))} ms vs the peer's claim with a workspace "
                         f"{fmt(p.get('ready_p50_ms'))} ms: {ratio_cell(o.get('ready_p50_ms'), p.get('ready_p50_ms'))}"
                         f" (target ≤ 0.3×){mark(x['met'] if x else None)}; the peer's warm claim without a workspace "
                         f"{fmt(w.get('ready_p50_ms'))} ms (ours / it: "
                         f"{ratio_cell(o.get('ready_p50_ms'), w.get('ready_p50_ms'))}); pools filled in: ours "
                         f"{fmt(o.get('pool_fill_s'))} s, peer {fmt(p.get('pool_fill_s'))} / {fmt(w.get('pool_fill_s'))} s")
        if name == "real-node-local-path":
            x, y = t.get("ready p50 ≤ 0.3× floor"), t.get("ready p50 ≤ peer warm pool")
            notes.append(f"{name}: ready p50 ours {fmt(o.get('ready_p50_ms'))} ms, floor {fmt(f.get('ready_p50_ms'))} ms: "
                         f"{ratio_cell(o.get('ready_p50_ms'), f.get('ready_p50_ms'))} (target ≤ 0.3×)"
                         f"{mark(x['met'] if x else None)}; the peer's warm pool (template with a workspace) "
                         f"{fmt(p.get('ready_p50_ms'))} ms: {ratio_cell(o.get('ready_p50_ms'), p.get('ready_p50_ms'))}"
                         f" (target ≤ 1×){mark(y['met'] if y else None)}; pools filled in: ours "
                         f"{fmt(o.get('pool_fill_s'))} s, peer {fmt(p.get('pool_fill_s'))} s")
            fb = s.get("floor_bound")
            if fb and fb.get("status", "ok") == "ok":
                z = t.get("all-ready ≤ 1.1× floor on bound claims")
                notes.append(f"{name}: all {s.get('n')} Ready ours {fmt(o.get('all_ready_s'))} s, bare pods on claims "
                             f"bound before the burst {fmt(fb.get('all_ready_s'))} s (ready p50 "
                             f"{fmt(fb.get('ready_p50_ms'))} ms): {ratio_cell(o.get('all_ready_s'), fb.get('all_ready_s'))}"
                             f" (target ≤ 1.1×){mark(z['met'] if z else None)}; its claims bound in "
                             f"{fmt(fb.get('pool_fill_s'))} s")
            elif fb:
                notes.append(f"{name}: floor_bound {fb.get('status')}")
        if s.get("duration_s") is not None:
            notes.append(f"{name}: took {fmt(s['duration_s'])} s ({s.get('rounds', '?')} round(s))")
        if s.get("date") and s.get("date") != doc.get("date"):
            notes.append(f"{name}: measured {s['date']} (`{s.get('command', '')}`)")
        if s.get("source"):
            notes.append(f"{name}: from {s['source']}")
    out = "\n".join(lines)
    if notes:
        out += "\n\n" + "\n".join(f"- {x}" for x in notes)
    return out


def stages_table(doc):
    """Per scenario, for ours and the peer: p50 / p99 of the intervals between watch events
    (first round)."""
    from bench import INTERVALS
    labels = [x[0] for x in INTERVALS]
    lines = ["| stage p50 / p99 (ms), first round | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for name, s in (doc.get("scenarios") or {}).items():
        for w, who in (("floor", "floor"), ("ours", "yao-sandbox"), ("agent_sandbox", "agent-sandbox"),
                       ("agent_sandbox_warm", "agent-sandbox warm")):
            runs = (s.get(w) or {}).get("runs") or []
            st = runs[0].get("stages") if runs else None
            if not st:
                continue
            lines.append(f"| {name}: {who} | " + " | ".join(
                f"{fmt(st[k]['p50_ms'])} / {fmt(st[k]['p99_ms'])}" if st.get(k) and st[k]["count"] else "–"
                for k in labels) + " |")
    return "\n".join(lines) if len(lines) > 2 else ""


def memory_table(doc):
    lines = ["| memory (KiB), largest N | RSS peak | PSS peak | USS peak | RSS at rest | PSS at rest | USS at rest |",
             "|---|---|---|---|---|---|---|"]
    for name, s in (doc.get("scenarios") or {}).items():
        for w, who in (("ours", "yao-sandbox"), ("agent_sandbox", "agent-sandbox")):
            o = s.get(w) or {}
            if o.get("rss_peak_kib") is None:
                continue
            lines.append(f"| {name}: {who} | " + " | ".join(fmt(o.get(k)) for k in (
                "rss_peak_kib", "pss_peak_kib", "uss_peak_kib", "rss_rest_kib", "pss_rest_kib", "uss_rest_kib")) + " |")
    return "\n".join(lines) if len(lines) > 2 else ""


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
    stages = ["sandbox_exists", "pvc_exists", "pvc_bound", "pod_exists", "pod_scheduled", "pod_ready", "sandbox_ready"]
    lines = ["| create → … p50 / p99 (ms), first round | " + " | ".join(stages) + " |",
             "|---|" + "---|" * len(stages)]
    for w, label in (("floor", "floor"), ("ours", "yao-sandbox"), ("agent_sandbox", "agent-sandbox")):
        runs = doc[w].get("runs") or []
        prof = runs[0].get("profile") if runs else None
        if not prof:
            continue
        lines.append(f"| {label} | " + " | ".join(f"{fmt(prof[s]['p50_ms'])} / {fmt(prof[s]['p99_ms'])}"
                                                  if s in prof else "–" for s in stages) + " |")
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
           f"{m.get('cpu', '?')} (load average at start {' '.join(m.get('loadavg_at_start', []))}"
           + (f", at end {' '.join(m['loadavg_at_end'])}" if m.get("loadavg_at_end") else "") + ").",
           f"Command: `{doc.get('command', '')}`; settings: `{json.dumps(doc.get('settings', {}))}`.", ""]
    if doc.get("scenarios"):
        out += ["**Scenarios** (agent-sandbox " + str(doc.get("peer_version") or "?") + "; ✓ target met, ✗ missed):", "",
                scenarios_table(doc), ""]
    if doc.get("scenarios"):
        out += [f"**Scenario {doc.get('scenario', 'immediate')}** in detail:", ""]
    out += [table(doc), "", spread_table(doc), "", profile_table(doc), ""]
    for name, s in (doc.get("scenarios") or {}).items():
        if name == doc.get("scenario") or s.get("status", "ok") != "ok" or s.get("source"):
            continue
        if s.get("kinds"):
            out += [f"Scenario {name} ({s.get('about', '')}; class {s.get('storage_class')}; stopped by: "
                    f"{s.get('stop', '–')}):", "", single_table(s), ""]
            continue
        out += [f"Scenario {name} ({s.get('about', '')}; class {s.get('storage_class')}):", "", table(s), ""]
        if s.get("exec"):
            out += [exec_table(s["exec"]), ""]
    for extra in (stages_table(doc), memory_table(doc)):
        if extra:
            out += [extra, ""]
    rq = requests_table(doc)
    if rq:
        out += [rq, ""]
    for n, v in sorted((doc.get("smaller_n") or {}).items(), key=lambda kv: int(kv[0])):
        small = {"n": int(n), "rounds": doc.get("rounds"), "peer_version": doc.get("peer_version"),
                 **{w: v[w] for w in ("floor", "ours", "agent_sandbox")}}
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
    scale = scale_scenario(os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "scale.json"))
    if scale and "scale-10k" not in (doc.get("scenarios") or {}):
        doc.setdefault("scenarios", {})["scale-10k"] = scale
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

"""results.json (every run, raw) and results.md (medians, ratios, scaling) from run.py's rows."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

Row = dict[str, Any]
LABELS = {
    ("simulate", ""): "simulate (simulator -> recorder -> embedded log)",
    ("append", ""): "append to the embedded log (2000-event batches, fsync each)",
    ("kafka_produce", ""): "produce to Kafka (KafkaLog.append, 2000-event batches, acks=all)",
    ("kafka_consume", ""): "consume from Kafka (KafkaLog.read)",
    ("floor", "floor"): "floor: bare fastavro per message + Arrow insert",
    ("project", "batch"): "project: pitlog projector (batch decode)",
    ("project", "batch_memory_limit"): "project: pitlog projector, DuckDB memory_limit set",
    ("project", "per_message"): "project: pitlog projector, previous per-message decode",
    ("replay", ""): "replay one shoe (replay.replay_shoe)",
    ("dispute", ""): "dispute lookup by table and time (dispute.dispute)",
    ("reconcile_day", ""): "reconcile a gaming day by table (reconcile.reconcile)",
}
LATENCY = {"replay", "dispute", "reconcile_day"}


def describe(name: str, r: Row) -> str:
    if name == "dispute_parts":
        return ", ".join(f"{k} {statistics.median(v) * 1000:.0f} ms" for k, v in r["parts"].items())
    if "latencies" in r:
        p50, p95 = percentiles(r["latencies"])
        return f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, peak {r['rss_peak_mb']:.0f} MB"
    if name == "decode_ideas":
        return "done"
    return (f"{r['events']:,} events in {r['seconds']:.1f} s = {r['events'] / r['seconds']:,.0f}"
            f"/s, peak {r['rss_peak_mb']:.0f} MB")


def percentiles(xs: list[float]) -> tuple[float, float]:
    s = sorted(xs)
    return statistics.median(s), s[min(len(s) - 1, max(0, round(0.95 * len(s)) - 1))]


def _key(r: Row) -> tuple[str, str, int]:
    """A projection's variant carries its batch size: ratios compare equal batch sizes."""
    variant = r.get("variant", "")
    if "batch_size" in r:
        variant = f"{variant}@{r['batch_size']}"
    return r["measure"], variant, r["size"]


def merge(old: list[Row], new: list[Row]) -> list[Row]:
    """Keep earlier rows of what this invocation did not measure (measure, variant, size)."""
    measured = {_key(r) for r in new}
    return [r for r in old if _key(r) not in measured] + new


def summarise(rows: list[Row]) -> dict[str, Any]:
    groups: dict[tuple[str, str, int], list[Row]] = defaultdict(list)
    for r in rows:
        if "error" not in r and (r.get("events") or "latencies" in r or "ideas" in r
                                 or "parts" in r):
            groups[_key(r)].append(r)
    lines = []
    order = [(m, v) for m, v in LABELS]
    for (measure, variant, size), rs in sorted(groups.items(), key=lambda kv: (
            kv[0][2], order.index(_base(kv[0])) if _base(kv[0]) in order else 99, kv[0][1])):
        if measure in ("decode_ideas", "dispute_parts"):
            continue
        line: Row = {"measure": measure, "variant": variant, "size": size, "runs": len(rs),
                     "events": rs[0]["events"] or size,  # a query's: the store's size
                     "rss_peak_mb": max(r["rss_peak_mb"] for r in rs),
                     "rss_base_mb": min(r["rss_base_mb"] for r in rs)}
        if measure in LATENCY:
            lat = [x for r in rs for x in r["latencies"]]
            p50, p95 = percentiles(lat)
            line |= {"lookups": len(lat), "p50_ms": p50 * 1000, "p95_ms": p95 * 1000,
                     "max_ms": max(lat) * 1000}
            asked = sum(r.get("asked", len(r["latencies"])) for r in rs)
            if asked > len(lat):
                line["cut"] = f" of {asked} asked: time budget spent"
        else:
            secs = statistics.median(r["seconds"] for r in rs)
            cpu = statistics.median(r["cpu_seconds"] for r in rs)
            line |= {"seconds": secs, "cpu_seconds": cpu,
                     "events_per_s": rs[0]["events"] / secs,
                     "all_seconds": [round(r["seconds"], 2) for r in rs]}
            line |= _phases(rs)
        lines.append(line)
    parts = []
    for r in rows:
        if r["measure"] == "dispute_parts" and "parts" in r:
            for name, xs in r["parts"].items():
                p50, p95 = percentiles(xs)
                parts.append({"size": r["size"], "part": name, "lookups": len(xs),
                              "p50_ms": p50 * 1000, "p95_ms": p95 * 1000})
    left_out = [f"{r['measure']} {r.get('variant', '')} at {r['size']:,}, run {r['repeat']}: "
                f"{r.get('error') or 'no events'}" for r in rows
                if "error" in r or r.get("events") == 0 and r["measure"] not in LATENCY
                and r["measure"] not in ("decode_ideas", "dispute_parts")]
    return {"lines": lines, "ratios": ratios(rows), "scaling": scaling(lines),
            "tenths": tenths(rows), "dispute_parts": parts, "left_out": left_out,
            "decode_ideas": [r for r in rows if r["measure"] == "decode_ideas" and "ideas" in r]}


def _phases(rs: list[Row]) -> Row:
    """The projector's two phases (measure.m_project): loading the log, then storing the
    anomaly rows; medians of seconds, the largest peak RSS of each."""
    if not all("load_seconds" in r for r in rs):
        return {}
    out = {"load_seconds": statistics.median(r["load_seconds"] for r in rs),
           "load_peak_mb": max(r["load_peak_mb"] for r in rs),
           "anomalies_seconds": statistics.median(r["anomalies_seconds"] for r in rs),
           "anomalies_peak_mb": max(r["anomalies_peak_mb"] for r in rs)}
    # Within one run (measure.m_project with first_tenth): the same phases at its first tenth.
    # The run with the median anomaly ratio stands for the line.
    paused = sorted((r for r in rs if "first_tenth_anomalies_seconds" in r and r.get("tenths")),
                    key=lambda r: r["anomalies_seconds"] / r["first_tenth_anomalies_seconds"])
    if paused:
        r = paused[len(paused) // 2]
        first_load = r["tenths"][0][0]
        out |= {"first_tenth_events": r["first_tenth_events"],
                "first_tenth_load_seconds": first_load,
                "first_tenth_load_peak_mb": r.get("first_tenth_load_peak_mb"),
                "first_tenth_anomalies_peak_mb": r.get("first_tenth_anomalies_peak_mb"),
                "run_load_peak_mb": r["load_peak_mb"],
                "run_anomalies_peak_mb": r["anomalies_peak_mb"],
                "first_tenth_anomalies_seconds": r["first_tenth_anomalies_seconds"],
                "anomalies_ratio_in_run": r["anomalies_seconds"]
                / r["first_tenth_anomalies_seconds"],
                "project_ratio_in_run": (r["load_seconds"] + r["anomalies_seconds"])
                / (first_load + r["first_tenth_anomalies_seconds"])}
    return out


def tenths(rows: list[Row]) -> list[Row]:
    """Per run with `tenths` (measure.Tenths), at the largest size measured: its whole cost
    against its first tenth (the 10M/1M ratio at 10M, within one run) and its dearest tenth
    against its cheapest. The run with the median whole/first ratio stands for its line."""
    biggest = max((r["size"] for r in rows if r.get("tenths")), default=None)
    by: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in rows:
        if r.get("tenths") and r["size"] == biggest and len(r["tenths"]) == 10:
            by[_key(r)[:2]].append(r)  # runs of different batch sizes are different lines
    out = []
    for (m, v), rs in sorted(by.items()):
        def whole_over_first(r: Row, i: int) -> float:
            return sum(t[i] for t in r["tenths"]) / r["tenths"][0][i]

        r = sorted(rs, key=lambda r: whole_over_first(r, 0))[len(rs) // 2]
        walls = [t[0] for t in r["tenths"]]
        out.append({"measure": m, "variant": v, "size": biggest, "runs": len(rs),
                    "first_tenth_s": walls[0], "whole_s": sum(walls),
                    "wall_ratio": whole_over_first(r, 0), "cpu_ratio": whole_over_first(r, 1),
                    "dearest_over_cheapest": max(walls) / min(walls),
                    "tenths_s": walls})
    return out


def _base(key: tuple[str, str, int]) -> tuple[str, str]:
    return key[0], key[1].split("@")[0]


def ratios(rows: list[Row]) -> list[Row]:
    """Per size, per repeat: floor seconds / projector seconds (a throughput ratio), then the
    median over the repeats: each ratio compares runs made in the same repeat."""
    by: dict[tuple[int, int, int], dict[str, Row]] = defaultdict(dict)
    for r in rows:
        if r["measure"] in ("floor", "project") and "error" not in r:
            by[(r["size"], r.get("batch_size", 0), r["repeat"])][r.get("variant", "")] = r
    out = []
    for size, batch in sorted({(s, b) for s, b, _ in by}):
        reps = [v for (s, b, _), v in sorted(by.items()) if (s, b) == (size, batch)]
        line: Row = {"size": size, "batch_size": batch}
        for variant in ("batch", "per_message"):
            wall = [v["floor"]["seconds"] / v[variant]["seconds"] for v in reps
                    if "floor" in v and variant in v]
            cpu = [v["floor"]["cpu_seconds"] / v[variant]["cpu_seconds"] for v in reps
                   if "floor" in v and variant in v]
            if wall:
                line[variant] = {"wall_ratio_median": statistics.median(wall),
                                 "cpu_ratio_median": statistics.median(cpu),
                                 "wall_ratios": [round(x, 3) for x in wall]}
        out.append(line)
    return out


def scaling(lines: list[Row]) -> list[Row]:
    """Largest size against the smallest, for every throughput measurement in both."""
    sizes = sorted({ln["size"] for ln in lines})
    if len(sizes) < 2:
        return []
    small, big = sizes[0], sizes[-1]
    at = {(ln["measure"], ln["variant"], ln["size"]): ln for ln in lines}
    out = []
    for (m, v, s), ln in at.items():
        other = at.get((m, v, big))
        if s != small or other is None or "seconds" not in ln:
            continue
        out.append({"measure": m, "variant": v, "events_ratio": other["events"] / ln["events"],
                    "time_ratio": other["seconds"] / ln["seconds"],
                    "cpu_ratio": other["cpu_seconds"] / ln["cpu_seconds"],
                    "rss_peak_mb": [ln["rss_peak_mb"], other["rss_peak_mb"]]})
    return out


def write(rows: list[Row], meta: Row, json_path: Path, md_path: Path, keep: bool) -> None:
    before = json.loads(json_path.read_text()) if keep and json_path.exists() else {}
    runs = merge(before.get("runs", []), rows)
    if rows:  # an invocation that ran something joins the list of those behind the numbers
        kept = {r["size"] for r in runs}
        old_meta = before.get("meta", {})
        earlier = old_meta.get("invocations") or ([{**old_meta, "sizes": sorted(
            {r["size"] for r in before.get("runs", [])})}] if old_meta else [])
        meta = {**meta, "invocations": [m for m in earlier if set(m.get("sizes", [])) & kept]
                + [{**{k: v for k, v in meta.items() if k != "invocations"},
                    "sizes": sorted({r["size"] for r in rows})}]}
    summary = summarise(runs)
    json_path.write_text(json.dumps({"meta": meta, "summary": summary, "runs": runs}, indent=1,
                                    default=str) + "\n")
    md_path.write_text(markdown(summary, meta))
    print(f"wrote {json_path} and {md_path}")


def _label(m: str, v: str) -> str:
    base, _, batch = v.partition("@")
    label = LABELS.get((m, base), f"{m} {base}".strip())
    return f"{label}, batches of {int(batch):,}" if batch else label


def markdown(s: dict[str, Any], meta: Row) -> str:
    runs = meta.get("invocations") or [meta]
    out = ["# pitlog benchmark results", "", "Measured by:", ""]
    out += [f"- `{m['command']}`, finished {m['finished']} ({m['minutes']:.0f} min)" for m in runs]
    out += ["", f"{meta['cpus']} CPUs, Python {meta['python']}. Medians over the runs; this "
            "machine is shared, so compare ratios taken in the same run, not absolute rates "
            "across runs. How to read this: benchmarks/README.md.", "",
           "| measurement | events | runs | rate or latency | CPU s | peak RSS MB |",
           "|---|---:|---:|---|---:|---:|"]
    for ln in s["lines"]:
        if "p50_ms" in ln:
            rate = (f"p50 {ln['p50_ms']:.0f} ms, p95 {ln['p95_ms']:.0f} ms "
                    f"({ln['lookups']} lookups{ln.get('cut', '')})")
            cpu = ""
        else:
            rate = f"{ln['events_per_s']:,.0f} events/s ({ln['seconds']:.1f} s)"
            cpu = f"{ln['cpu_seconds']:.1f}"
        out.append(f"| {_label(ln['measure'], ln['variant'])} | {ln['events']:,} | {ln['runs']} "
                   f"| {rate} | {cpu} | {ln['rss_peak_mb']:.0f} |")
    out += ["", "## Projection against the floor (throughput ratio, same repeat, median)", "",
            "| events | batch | pitlog projector / floor (wall) | (CPU) | per-repeat | previous "
            "per-message projector / floor (wall) | (CPU) |", "|---:|---:|---:|---:|---|---:|---:|"]
    for r in s["ratios"]:
        b, p = r.get("batch", {}), r.get("per_message", {})

        def num(d: Row, k: str) -> str:
            return f"{d[k]:.2f}" if k in d else "not measured"

        out.append(f"| {r['size']:,} | {r['batch_size']:,} | {num(b, 'wall_ratio_median')} | "
                   f"{num(b, 'cpu_ratio_median')} | {b.get('wall_ratios', '')} | "
                   f"{num(p, 'wall_ratio_median')} | {num(p, 'cpu_ratio_median')} |")
    if s["scaling"]:
        out += ["", "## Scaling (largest size against the smallest)", "",
                "| measurement | events ratio | wall time ratio | CPU time ratio | "
                "peak RSS MB (small, large) |", "|---|---:|---:|---:|---|"]
        for r in s["scaling"]:
            out.append(f"| {_label(r['measure'], r['variant'])} | {r['events_ratio']:.2f} | "
                       f"{r['time_ratio']:.2f} | {r['cpu_ratio']:.2f} | {r['rss_peak_mb'][0]:.0f}, "
                       f"{r['rss_peak_mb'][1]:.0f} |")
    if any("load_seconds" in ln for ln in s["lines"]):
        out += ["", "## The projection's two phases", "",
                "`project` above is both: loading the log (decode, insert, checkpoint), then "
                "storing the anomaly rows (every rule evaluated a table group at a time; with "
                "batches of 50,000, session 3's, over the whole store). Each "
                "phase has its own peak RSS; the projector's DuckDB memory_limit applies to both.",
                "", "| measurement | events | load s | load peak RSS MB | anomaly rows s | "
                "anomaly rows peak RSS MB |", "|---|---:|---:|---:|---:|---:|"]
        for ln in s["lines"]:
            if "load_seconds" in ln:
                out.append(f"| {_label(ln['measure'], ln['variant'])} | {ln['events']:,} | "
                           f"{ln['load_seconds']:.1f} | {ln['load_peak_mb']:.0f} | "
                           f"{ln['anomalies_seconds']:.1f} | {ln['anomalies_peak_mb']:.0f} |")
        paused = [ln for ln in s["lines"] if "first_tenth_anomalies_seconds" in ln]
        if paused:
            out += ["", "The same run also paused once its first tenth was loaded: a child "
                    "process loaded the first tenth and stored its anomaly rows, then the run "
                    "loaded the rest (measure.m_project, `first_tenth`; the child's anomaly rows "
                    "are not in the times above). Each phase at the whole log against the same "
                    "phase at its first tenth, and `pitlog project` as a whole, within one run "
                    "(the run with the median anomaly ratio).", "",
                    "| measurement | events | first tenth | load s, first tenth / whole | "
                    "load peak RSS MB, first tenth / whole | anomaly rows s, first tenth / "
                    "whole | anomaly rows peak RSS MB, first tenth / whole | anomaly rows "
                    "whole / first tenth | project whole / first tenth |",
                    "|---|---:|---:|---|---|---|---|---:|---:|"]

            def mb(x: float | None) -> str:
                return "?" if x is None else f"{x:.0f}"

            for ln in paused:
                out.append(f"| {_label(ln['measure'], ln['variant'])} | {ln['events']:,} | "
                           f"{ln['first_tenth_events']:,} | "
                           f"{ln['first_tenth_load_seconds']:.1f} / {ln['load_seconds']:.1f} | "
                           f"{mb(ln['first_tenth_load_peak_mb'])} / "
                           f"{mb(ln['run_load_peak_mb'])} | "
                           f"{ln['first_tenth_anomalies_seconds']:.1f} / "
                           f"{ln['anomalies_seconds']:.1f} | "
                           f"{mb(ln['first_tenth_anomalies_peak_mb'])} / "
                           f"{mb(ln['run_anomalies_peak_mb'])} | "
                           f"{ln['anomalies_ratio_in_run']:.2f} | "
                           f"{ln['project_ratio_in_run']:.2f} |")
    if s.get("tenths"):
        out += ["", "## Scaling within one run (each tenth of the largest run)", "",
                "At 10M events a tenth is 1M: `whole / first tenth` is the 10M/1M cost ratio "
                "measured inside one run, which the machine's load skews far less than two runs "
                "made minutes apart. A cost that grew with the log would make later tenths "
                "dearer. For `project` this is the load phase only.", "",
                "| measurement | events | runs | first tenth s | whole s | whole / first tenth "
                "(wall) | (CPU) | dearest / cheapest tenth | wall s per tenth |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in s["tenths"]:
            out.append(f"| {_label(r['measure'], r['variant'])} | {r['size']:,} | {r['runs']} | "
                       f"{r['first_tenth_s']:.1f} | {r['whole_s']:.1f} | {r['wall_ratio']:.2f} "
                       f"| {r['cpu_ratio']:.2f} | {r['dearest_over_cheapest']:.2f} | "
                       f"{', '.join(f'{x:.1f}' for x in r['tenths_s'])} |")
    if s["dispute_parts"]:
        out += ["", "## The dispute lookup's queries, one by one", "",
                "| events | query | lookups | p50 ms | p95 ms |", "|---:|---|---:|---:|---:|"]
        for r in s["dispute_parts"]:
            out.append(f"| {r['size']:,} | {r['part']} | {r['lookups']} | {r['p50_ms']:.0f} | "
                       f"{r['p95_ms']:.0f} |")
    for ideas in s["decode_ideas"]:
        i = ideas["ideas"]
        out += ["", f"## Decode paths on the same {i['messages']:,} messages (µs per message, "
                f"median of {i['rounds']} rounds, batches of {i['batch_size']})", "",
                "| path | CPU µs | wall µs |", "|---|---:|---:|"]
        for name, wall in i["us_per_message_wall"].items():
            cpu = i["us_per_message_cpu"].get(name)
            out.append(f"| {name} | {'' if cpu is None else f'{cpu:.2f}'} | {wall:.2f} |")
    if s.get("left_out"):
        out += ["", "## Runs left out", ""] + [f"- {x}" for x in s["left_out"]]
    return "\n".join(out) + "\n"

#!/usr/bin/env python3
"""bench/table.py RESULTS.jsonl BENCHMARKS.md: the tables of bench/compare.sh.

Reads one compare.sh run's results (one JSON object per engine, query and run) and the
settings compare.sh exports, writes that run's block (between "compare.sh:begin
mode=<SOURCE>" and "compare.sh:end mode=<SOURCE>") into the markdown file, then rebuilds the
summary table (between the compare.sh:summary markers) from every mode's block: each block
carries its medians in a "compare.sh:data" comment, so the summary shows the latest run of
every mode, one ratio column per mode. Exits 1 when result counts or event checksums differ.
"""
import json
import math
import os
import re
import statistics
import sys

MODES = [
    ("generator", "generator in the loop"),
    ("memory", "engine only (events from memory)"),
    ("kafka", "Kafka in, results to Kafka"),
]


def med(xs):
    return statistics.median(xs) if xs else None


def fmt_eps(v):
    if v is None:
        return "–"
    if v >= 1e6:
        return "%.2f M" % (v / 1e6)
    return "%.0f K" % (v / 1e3)


def fmt_mib(v):
    return "–" if v is None else "%.0f" % (v / 1048576)


# What a query's row says beside its name: the baseline, the queries whose results are not a
# discarding sink's count (q10), that read a file (q13), or that depend on the wall clock (q12).
LABELS = {
    "gen": " (source only)",
    "q10": " (file sink: rows committed)",
    "q12": " (processing time)",
    "q13": " (side input file)",
}


def order_dependent(q):
    # q18 and q19 emit when a bid becomes the newest or one of the ten highest of its key; a
    # few keys get bids from two generators, in an order that varies between runs
    # (weir/nexmark/queries.OrderDependent).
    return q in ("q18", "q19")


def mode_block(rows, E):
    """The markdown block of this run, and its medians for the summary."""
    queries = E["QUERIES"].split()
    runs = int(E["RUNS"])
    source = E["SOURCE"]
    flink_version = next((r.get("flink_version") for r in rows if r["engine"] == "flink"), "?")
    problems = []
    lines = [
        "| query | Weir events/s | Flink events/s | Weir / Flink | results Weir | results Flink | counts | "
        "Weir CPU s | Flink CPU s | CPU Flink / Weir | Weir peak RSS MiB | Flink peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    ratios, cpu_ratios, data, base = {}, {}, {}, {}
    missing = []
    sums = set()
    for q in queries:
        w = [r for r in rows if r["query_name"] == q and r["engine"] == "weir"]
        f = [r for r in rows if r["query_name"] == q and r["engine"] == "flink"]
        sums.update(r["events_checksum"] for r in w + f if r.get("events_checksum"))
        we, fe = med([r["events_per_second"] for r in w]), med([r["events_per_second"] for r in f])
        wres = sorted(set(r["results"] for r in w))
        fres = sorted(set(r["results"] for r in f))
        if not w and not f:
            missing.append(q)
            check = "not run"
        elif not w or not f:
            check = "weir n/a" if not w else "flink n/a"
        elif q == "q12":
            check = "n/a (processing time)"
        elif len(wres) == 1 and wres == fres:
            check = "match"
        elif order_dependent(q) and max(wres + fres) - min(wres + fres) <= 1e-3 * max(wres + fres):
            check = "within %d (arrival order)" % (max(wres + fres) - min(wres + fres))
        else:
            check = "**MISMATCH**"
            problems.append("%s: weir %s, flink %s" % (q, wres, fres))
        if we and fe and q != "gen":
            ratios[q] = we / fe
        if q in ("gen", "q0"):
            base[q] = (we, fe)
        data[q] = {"weir": we, "flink": fe}
        wc = med([r.get("cpu_seconds", 0) for r in w]) if w else None
        fc = med([r.get("cpu_seconds", 0) for r in f]) if f else None
        if wc and fc and q != "gen":
            cpu_ratios[q] = fc / wc

        def res(xs):
            return "–" if not xs else "/".join(str(x) for x in xs)

        label = q + LABELS.get(q, "")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            label, fmt_eps(we), fmt_eps(fe), "%.2f×" % (we / fe) if we and fe else "–",
            res(wres), res(fres), check,
            "–" if wc is None else "%.2f" % wc, "–" if fc is None else "%.2f" % fc,
            "%.2f×" % (fc / wc) if wc and fc else "–",
            fmt_mib(med([r.get("peak_rss_bytes", 0) for r in w])) if w else "–",
            fmt_mib(med([r.get("peak_rss_bytes", 0) for r in f])) if f else "–"))
    if source == "memory":
        if len(sums) == 1:
            checksum = "every run of both engines replayed events with checksum %s" % sums.pop()
        else:
            checksum = "**event checksums differ between runs or engines: %s**" % ", ".join(sorted(sums))
            problems.append("event checksums differ: %s" % ", ".join(sorted(sums)))
    out = ["<!-- compare.sh:begin mode=%s (written by bench/compare.sh; rerun it to refresh up to compare.sh:end) -->" % source, ""]
    if source == "memory":
        what = ("Engine only: each source subtask's events are generated into memory before the clock starts (Weir: "
                "`weir nexmark --source memory`, which holds them outside the Go heap so that its collector does not mark them, "
                "as G1's young collections do not trace Flink's old generation; Flink: the same in the module's "
                "`--source memory`), then replayed as fast "
                "as the engine takes them. Time runs from the first event read to the end of input at the last sink "
                "(Weir: to the end of the job; q10: to the last commit of its file sink), so generation, process, JVM "
                "and MiniCluster start-up are excluded. Flink runs each query's warm-up and measured runs in one JVM "
                "(`--serve`), each run a job submitted to the JVM's one MiniCluster, on events generated once (their "
                "checksum is taken again after every run).")
    elif source == "kafka":
        what = ("Kafka to Kafka: the events were written once to a topic of the broker (one partition per generator, "
                "one text line per event, `weir nexmark --source kafka`); each engine reads it with its own Kafka "
                "source (Weir: connector/kafka; Flink: flink-connector-kafka's KafkaSource) from the earliest to the "
                "latest offsets at start, and writes the results as JSON to a fresh topic of the same broker with its "
                "own Kafka sink (Weir: connector/kafka's Sink; Flink: KafkaSink), at-least-once, no compression. Time "
                "runs from the first record decoded to the last result acknowledged by the broker (Weir: the end of "
                "the job, after the sink's final flush; Flink: the end-of-input flush of the last sink subtask), so "
                "process, JVM and MiniCluster start-up and the topics' creation are excluded. The results are "
                "counted at the sink and in the results topic (which must agree, else the run fails), then the topic "
                "is deleted. The broker is shared with the other engineers' tests and runs on the same 2 cores, so "
                "its fetch and produce latency is part of every figure.")
    else:
        what = ("Generator in the loop: each source subtask runs its Nexmark generator. Time runs from the first event "
                "a source emits (Weir: from job start) to the end of input at the last sink (Weir: to the end of the "
                "job; q10: to the last commit of its file sink), so process, JVM and MiniCluster start-up are excluded.")
    out.append("Nexmark queries on Weir (`weir nexmark`) and on Apache Flink %s (DataStream API, local MiniCluster, "
               "`bench/flink`), same generator logic (identical events: same seed, ids, timestamps and strings), same "
               "events, rate and parallelism, on the same machine. %s Medians of %d run(s) per engine and query, Weir "
               "and Flink alternating. %s "
               "%s" % (
                   flink_version, what, runs,
                   ("Each engine serves all runs of a query from one process (Flink: one JVM, `--serve`; Weir: "
                    "`weir nexmark --serve`) after a warm-up run of the same query (Flink %s events, Weir %s), so "
                    "each engine's memory is as its warm-up and earlier runs left it." % (
                        "{:,}".format(int(E["WARMUP_EVENTS"])), "{:,}".format(int(E["WEIR_WARMUP"]))))
                   if E.get("WEIR_SERVE", "0") == "1" else
                   ("Flink runs a warm-up of the same query (%s events) in the same JVM first; Weir runs each run "
                    "in a new process, without warm-up." % "{:,}".format(int(E["WARMUP_EVENTS"]))),
                   "" if source == "kafka" else
                   "Results are counted in a discarding sink on both sides (q10: the rows committed to files)."))
    out.append("")
    loads = [r["load1"] for r in rows if r.get("load1") is not None]
    out.append("- Machine: %s cores (`nproc`), %s, %s; load average (1, 5, 15 min) %s before the runs, %s after%s" % (
        E["CORES"], E["CPU_MODEL"], E["MEM"], E["LOAD_BEFORE"], E["LOAD_AFTER"],
        "; 1-minute load at the end of each run %.1f-%.1f (median %.1f)" % (min(loads), max(loads), med(loads))
        if loads else ""))
    out.append("- Versions: %s; %s; Flink %s; Weir %s%s" % (
        E["GO_VERSION"], E["JAVA_VERSION"], flink_version, E["COMMIT"], E["DIRTY"]))
    out.append("- Workload: %s events, rate %s events/s of event time, parallelism %s (= generators), seed %s; "
               "Flink: hashmap state backend, object reuse on, no checkpoints, JVM flags `%s`; Weir: %s" % (
                   "{:,}".format(int(E["EVENTS"])), E["RATE"], E["PARALLELISM"], E["SEED"], E["FLINK_JAVA_OPTS"],
                   ", ".join("`%s=%s`" % (k, E[k]) for k in ("GOGC", "GOMEMLIMIT") if E.get(k))
                   or "Go's default collector settings (GOGC and GOMEMLIMIT unset)"))
    out.append("- Generator check: " + E["GEN_STATUS"] + ("; " + checksum if source == "memory" else ""))
    out.append("- Command: `%sSOURCE=%s EVENTS=%s RUNS=%s QUERIES=\"%s\" PARALLELISM=%s RATE=%s bench/compare.sh` "
               "(%d s in all; raw JSON per run in `bench/out/%s/`, not committed)" % (
                   "".join("%s=%s " % (k, E[k]) for k in ("GOGC", "GOMEMLIMIT") if E.get(k)), source, E["EVENTS"], E["RUNS"], E["QUERIES"], E["PARALLELISM"], E["RATE"],
                   int(E["T1"]) - int(E["T0"]), E["STAMP"]))
    if E.get("NOTE"):
        out.append("- Note: " + E["NOTE"])
    out.append("")
    out.extend(lines)
    out.append("")
    if missing:
        out.append("Not run (no result from either engine): %s." % ", ".join(missing))
        out.append("")
    if ratios:
        geo = math.exp(sum(math.log(v) for v in ratios.values()) / len(ratios))
        short = [q for q, v in ratios.items() if v < 5]
        out.append("Weir / Flink events/s: geometric mean %.2f× over %d queries; at least 5× on %d of %d%s." % (
            geo, len(ratios), len(ratios) - len(short), len(ratios),
            (" (below 5×: " + ", ".join(short) + ")") if short else ""))
        out.append("")
    if cpu_ratios:
        geo = math.exp(sum(math.log(v) for v in cpu_ratios.values()) / len(cpu_ratios))
        short = [q for q, v in cpu_ratios.items() if v < 5]
        out.append("CPU seconds, Flink / Weir (the same work; less sensitive to other tenants' load than wall "
                   "time): geometric mean %.2f× over %d queries; at least 5× on %d of %d%s." % (
                       geo, len(cpu_ratios), len(cpu_ratios) - len(short), len(cpu_ratios),
                       (" (below 5×: " + ", ".join(short) + ")") if short else ""))
        out.append("")
    cores = {e: [r["cpu_seconds"] / r["seconds"] for r in rows
                 if r["engine"] == e and r.get("cpu_seconds") and r.get("seconds") and r["query_name"] in queries]
             for e in ("weir", "flink")}
    if cores["weir"] and cores["flink"]:
        out.append("Cores used (CPU seconds / wall seconds of a run, of %s): Weir median %.2f (%.2f-%.2f), Flink "
                   "median %.2f (%.2f-%.2f). Well below the %s cores means the runs waited for a CPU: on a shared "
                   "machine the scheduler shares it per thread, and a JVM running tens of threads gets more of it "
                   "than a Go process with GOMAXPROCS threads, so under load the events/s ratio can understate "
                   "the CPU ratio." % (
                       E["CORES"], med(cores["weir"]), min(cores["weir"]), max(cores["weir"]),
                       med(cores["flink"]), min(cores["flink"]), max(cores["flink"]), E["CORES"]))
        out.append("")
    if "gen" in base and all(base["gen"]):
        wg, fg = base["gen"]
        line = ("`gen` is each engine's source alone into the %s (not a query; not in the mean): "
                "Weir %s, Flink %s events/s" % ("results topic" if source == "kafka" else "discarding sink",
                                               fmt_eps(wg), fmt_eps(fg)))
        if "q0" in base and all(base["q0"]):
            line += "; q0 runs at %.0f%% of its engine's source rate on Weir, %.0f%% on Flink" % (
                100 * base["q0"][0] / wg, 100 * base["q0"][1] / fg)
        out.append(line + ".")
        out.append("")
    if problems:
        out.append("**Not clean:** " + "; ".join(problems))
        out.append("")
    out.append("<!-- compare.sh:data %s -->" % json.dumps({"stamp": E["STAMP"], "commit": E["COMMIT"], "medians": data}))
    out.append("<!-- compare.sh:end mode=%s -->" % source)
    return "\n".join(out), lines, problems


def parse_eps(cell):
    cell = cell.strip()
    m = re.match(r"([\d.]+)\s*([MK])", cell)
    if not m:
        return None
    return float(m.group(1)) * (1e6 if m.group(2) == "M" else 1e3)


def block_medians(block):
    """A mode block's medians: its data comment, or (older blocks) its table's first columns."""
    m = re.search(r"<!-- compare\.sh:data (.*?) -->", block)
    if m:
        return json.loads(m.group(1))
    data = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 3 and re.match(r"^(gen|q\d+)\b", cells[0]):
            data[cells[0].split()[0]] = {"weir": parse_eps(cells[1]), "flink": parse_eps(cells[2])}
    return {"stamp": "", "commit": "", "medians": data}


def find_block(text, mode):
    """The match of mode's block in text, or None; a block written before the modes existed is the
    generator's."""
    m = re.search(r"<!-- compare\.sh:begin mode=%s.*?<!-- compare\.sh:end mode=%s -->" % (mode, mode), text, flags=re.S)
    if not m and mode == "generator":
        m = re.search(r"<!-- compare\.sh:begin \(.*?<!-- compare\.sh:end -->", text, flags=re.S)
    return m


def summary(text):
    blocks = {}
    for mode, _ in MODES:
        m = find_block(text, mode)
        if m:
            blocks[mode] = block_medians(m.group(0))
    order = ["gen"] + ["q%d" % i for i in range(24)]
    seen = {q for b in blocks.values() for q in b["medians"]}
    queries = [q for q in order if q in seen] + sorted(seen - set(order))
    head = "| query |"
    rule = "|---|"
    for mode, title in MODES:
        head += " %s: Weir | Flink | Weir / Flink |" % title
        rule += "---:|---:|---:|"
    rows = [head, rule]
    ratios = {mode: {} for mode, _ in MODES}
    for q in queries:
        row = "| %s |" % (q + (" (source only)" if q == "gen" else ""))
        for mode, _ in MODES:
            d = blocks.get(mode, {}).get("medians", {}).get(q)
            we, fe = (d or {}).get("weir"), (d or {}).get("flink")
            r = we / fe if we and fe else None
            if r and q != "gen":
                ratios[mode][q] = r
            row += " %s | %s | %s |" % (fmt_eps(we), fmt_eps(fe), "%.2f×" % r if r else "–")
        rows.append(row)
    foot = "| geometric mean (queries) |"
    for mode, _ in MODES:
        rs = ratios[mode]
        foot += " | | %s |" % ("%.2f× (%d)" % (math.exp(sum(map(math.log, rs.values())) / len(rs)), len(rs)) if rs else "–")
    rows.append(foot)
    runs = ", ".join("%s: %s%s" % (mode, blocks[mode].get("stamp") or "an earlier run",
                                   " at " + blocks[mode]["commit"] if blocks[mode].get("commit") else "")
                     for mode, _ in MODES if mode in blocks)
    out = ["<!-- compare.sh:summary:begin (rebuilt by bench/compare.sh from the mode blocks below) -->", "",
           "Events/s, medians of each mode's latest run (%s); the blocks below give each run's settings, result "
           "counts, CPU and memory. A mode not run yet shows –." % runs, ""]
    out.extend(rows)
    out += ["", "<!-- compare.sh:summary:end -->"]
    return "\n".join(out)


def main():
    results_path, out_path = sys.argv[1], sys.argv[2]
    rows = [json.loads(line) for line in open(results_path) if line.strip()]
    E = os.environ
    block, lines, problems = mode_block(rows, E)
    text = open(out_path).read() if os.path.exists(out_path) else "# Benchmarks\n"
    mode = E["SOURCE"]
    m = find_block(text, mode)
    if m:
        text = text[:m.start()] + block + text[m.end():]
    else:
        if "## Weir vs Flink" not in text:
            text = text.rstrip("\n") + "\n\n## Weir vs Flink\n"
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    s = summary(text)
    m = re.search(r"<!-- compare\.sh:summary:begin.*?<!-- compare\.sh:summary:end -->", text, flags=re.S)
    if m:
        text = text[:m.start()] + s + text[m.end():]
    else:
        # Right under the section's heading, else before the first block.
        head = re.search(r"^## Weir vs Flink\n", text, flags=re.M)
        at = head.end() if head else re.search(r"<!-- compare\.sh:begin", text).start()
        text = text[:at] + ("\n" if head else "") + s + "\n\n" + text[at:].lstrip("\n")
    open(out_path, "w").write(text)
    print("\n".join(lines))
    if problems:
        print("\n!!! NOT CLEAN: " + "; ".join(problems), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

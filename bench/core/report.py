#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the core benchmark and rewrites its region of docs/performance.md.

    python3 bench/core/report.py [--build build] [--quick] [--repetitions N]
    python3 bench/core/report.py --from-csv      # re-render from bench/results/

Runs build/bench/core/core_bench once per backend, size and repetition, each
in its own process (the memory workload in a process of its own too), the
idle workload for every backend at 1M timers (concurrently: it measures each
process's own CPU time), the idle-connections workload for every backend at
1M, and keyed_bench (TimingWheel against go-zero's keyed design). Writes bench/results/core_raw.csv (every figure),
core_medians.csv (medians over repetitions), PNG plots in docs/img/ (see
plots.py) and replaces what lies between <!-- BEGIN core-bench --> and
<!-- END core-bench --> in docs/performance.md (creating the region, first
in the file, if missing). Nothing outside the markers is touched.

Full: 10k, 100k and 1M timers for every backend, 10M for tickwheel and the
fastest peers, 3 repetitions, 10 s idle. --quick: up to 1M, 1 repetition,
2 s idle (a few minutes).
"""
import argparse
import csv
import datetime
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULTS = os.path.join(ROOT, "bench", "results")
BEGIN = "<!-- BEGIN core-bench -->"
END = "<!-- END core-bench -->"

BACKENDS = ["tickwheel", "go-zero-wheel", "go-zero-wheel-slab", "indexed-heap",
            "libevent", "libuv", "libev", "asio"]
PEERS = BACKENDS[1:]
# The peers the issue names. go-zero-wheel-slab is the same design as
# go-zero-wheel on faster storage, written here: the targets are judged
# against the named peers and the ratio to it is shown beside them.
LISTED_PEERS = [p for p in PEERS if p != "go-zero-wheel-slab"]
SLAB = "go-zero-wheel-slab"
# 10M only for tickwheel and the fastest peers (the others take minutes and
# gigabytes there and lose at 1M already).
BACKENDS_10M = ["tickwheel", "go-zero-wheel", "go-zero-wheel-slab", "indexed-heap", "libev"]
SIZES = [10_000, 100_000, 1_000_000, 10_000_000]
OP_METRICS = [("fill_ns", "fill", "ns per insert"),
              ("move_ns", "move", "ns per move"),
              ("cancel_ns", "cancel", "ns per cancel"),
              ("fire_cpu_ns", "fire", "CPU ns per fired timer")]


def log(*args):
    print("report.py:", *args, file=sys.stderr, flush=True)


LOADS = []  # the 1-minute load average when each benchmark process started


def run_rows(cmd):
    """Runs one benchmark process; returns its CSV rows (backend,n,metric,value)."""
    LOADS.append(os.getloadavg()[0])
    log(" ".join(cmd))
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    rows = []
    for line in out.splitlines():
        backend, n, metric, value = line.split(",")
        rows.append((backend, int(n), metric, float(value)))
    return rows


def run_core(binary, quick, repetitions):
    sizes = SIZES[:3] if quick else SIZES
    raw = []  # (backend, n, rep, metric, value)
    for rep in range(repetitions):
        for n in sizes:
            for backend in BACKENDS:
                if n == 10_000_000 and backend not in BACKENDS_10M:
                    continue
                seed = str(rep + 1)
                base = [binary, "--backend", backend, "--n", str(n), "--seed", seed]
                for workloads in ("memory", "fill,move,cancel,fire"):
                    for b, size, metric, value in run_rows(base + ["--workloads", workloads]):
                        raw.append((b, size, rep, metric, value))
    seconds = "2" if quick else "10"
    # The demo's idle connections, one backend after another (they use CPU).
    for backend in BACKENDS:
        cmd = [binary, "--backend", backend, "--n", "1000000", "--workloads", "conns",
               "--idle-seconds", seconds]
        for b, size, metric, value in run_rows(cmd):
            raw.append((b, size, 0, metric, value))
    # Keyed: TimingWheel against go-zero's queue-fed loop.
    keyed = os.path.join(os.path.dirname(binary), "keyed_bench")
    for rep in range(repetitions):
        for b, size, metric, value in run_rows([keyed, "--keys", "1000000"]):
            raw.append((b, size, rep, metric, value))
    # The machine's limits: random access and a clock read.
    probe = os.path.join(os.path.dirname(binary), "memory_probe")
    for b, size, metric, value in run_rows([probe]):
        raw.append((b, size, 0, metric, value))
    # Idle: every backend at once, each measuring its own process's CPU.
    procs = []
    for backend in BACKENDS:
        cmd = [binary, "--backend", backend, "--n", "1000000", "--workloads", "idle",
               "--idle-seconds", seconds]
        log(" ".join(cmd))
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True))
    for p in procs:
        out, _ = p.communicate()
        if p.returncode != 0:
            sys.exit(f"report.py: idle run failed ({p.args})")
        for line in out.splitlines():
            b, n, metric, value = line.split(",")
            raw.append((b, int(n), 0, metric, float(value)))
    return raw


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    log("wrote", os.path.relpath(path, ROOT))


def read_csv(path):
    with open(path) as f:
        r = csv.reader(f)
        next(r)
        return list(r)


def medians(raw):
    groups = {}
    for backend, n, _rep, metric, value in raw:
        groups.setdefault((backend, int(n), metric), []).append(float(value))
    return {k: statistics.median(v) for k, v in groups.items()}


def machine():
    model, l3 = "unknown CPU", "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True).stdout
        for line in out.splitlines():
            if line.startswith("L3 cache"):
                l3 = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs, L3 {l3}, Linux {os.uname().release}"


def commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                              stdout=subprocess.PIPE, text=True).stdout.strip()
    except OSError:
        return "?"


def fmt(x, unit=""):
    if x is None:
        return "–"
    if x >= 100:
        s = f"{x:,.0f}"
    elif x >= 10:
        s = f"{x:.1f}"
    else:
        s = f"{x:.2f}"
    return s + unit


def best_peer(m, metric, n, peers=LISTED_PEERS):
    vals = [(m[(p, n, metric)], p) for p in peers if (p, n, metric) in m]
    return min(vals) if vals else (None, None)


# The eager peers the wheel's move and cancel are judged against (the
# go-zero wheels defer their work to a per-turn scan; see the prose).
EAGER = ["indexed-heap", "libev"]
LAZY = ["go-zero-wheel", "go-zero-wheel-slab"]
# Bytes per pending timer, the caller's 8-byte TimerId counted, before this
# work (make bench at 4654121): the ceiling.
MEMORY_BEFORE = {1_000_000: 31.2 + 8, 10_000_000: 30.1 + 8}


def targets(m):
    """Rows of the targets table: (goal, tickwheel, reference, ratio, target, met)."""
    rows = []
    for metric, name in (("move_ns", "move"), ("cancel_ns", "cancel")):
        for n in (1_000_000, 10_000_000):
            tw = m.get(("tickwheel", n, metric))
            peer, who = best_peer(m, metric, n, EAGER)
            if tw is None or peer is None:
                continue
            ahead = [p for p in PEERS if p not in LAZY and (p, n, metric) in m
                     and m[(p, n, metric)] < tw]
            met = tw / peer <= 0.5 and not ahead
            rows.append((f"{name} at {label(n)} (ns)", fmt(tw), f"{fmt(peer)} ({who})",
                         f"{tw / peer:.2f}", "≤ 0.50, behind no eager peer",
                         ("yes" if met else "**no**") +
                         (f" (behind {', '.join(ahead)})" if ahead else "")))
    for n in SIZES:
        tw, heap = m.get(("tickwheel", n, "fill_cold_ns")), m.get(("indexed-heap", n, "fill_cold_ns"))
        if tw is None or heap is None:
            continue
        rows.append((f"fill into storage grown on demand at {label(n)} (ns)", fmt(tw),
                     f"{fmt(heap)} (indexed-heap)", f"{tw / heap:.2f}", "≤ 1",
                     "yes" if tw <= heap else "**no**"))
    for n, before in MEMORY_BEFORE.items():
        mem = m.get(("tickwheel", n, "bytes_per_timer"))
        if mem is None:
            continue
        mine = mem + 8
        rows.append((f"memory at {label(n)}, caller's TimerId counted (bytes per timer)",
                     fmt(mine), f"{fmt(before)} (before this work)", f"{mine / before:.2f}",
                     "≤ 1", "yes" if mine <= before + 0.05 else "**no**"))
    conns = m.get(("tickwheel", 1_000_000, "conns_cpu_percent"))
    if conns is not None:
        peer, who = best_peer(m, "conns_cpu_percent", 1_000_000, PEERS)
        rows.append(("idle connections, 1M (% of a core)", f"{conns:.2f}", f"{peer:.2f} ({who})",
                     f"{conns / peer:.2f}", "≤ 0.50", "yes" if conns / peer <= 0.5 else "**no**"))
    n = 1_000_000
    fire = m.get(("tickwheel", n, "fire_cpu_ns"))
    if fire is not None:
        peer, who = best_peer(m, "fire_cpu_ns", n)
        rows.append(("fire at 1M (CPU ns per timer), kept", fmt(fire), f"{fmt(peer)} ({who})",
                     f"{fire / peer:.2f}", "≤ 0.50", "yes" if fire / peer <= 0.5 else "**no**"))
    p99 = m.get(("tickwheel", n, "late_p99_us"))
    if p99 is not None:
        peer, who = best_peer(m, "late_p99_us", n)
        rows.append(("lateness p99 at 1M (ms), kept", fmt(p99 / 1000), f"{fmt(peer / 1000)} ({who})",
                     f"{p99 / peer:.2f}", "≤ 2 ms", "yes" if p99 <= 2000 else "**no**"))
    idle = m.get(("tickwheel", n, "idle_cpu_percent"))
    if idle is not None:
        peer, who = best_peer(m, "idle_cpu_percent", n)
        rows.append(("idle, 1M due in an hour (% of a core), kept", f"{idle:.4f}",
                     f"{peer:.4f} ({who})", "–", "< 0.1 %", "yes" if idle < 0.1 else "**no**"))
    return rows


def slab_ratio(m, metric, n):
    tw, slab = m.get(("tickwheel", n, metric)), m.get((SLAB, n, metric))
    return f"{tw / slab:.2f}" if tw is not None and slab else "–"


def ratios_at(m, n, peers=LISTED_PEERS):
    """'fill 0.41 (vs indexed-heap), ...' for the closing note and the doc."""
    parts = []
    for metric, name, _unit in OP_METRICS + [("bytes_per_timer", "memory", ""),
                                             ("late_p99_us", "lateness p99", "")]:
        tw = m.get(("tickwheel", n, metric))
        peer, who = best_peer(m, metric, n, peers)
        if tw is None or peer is None:
            continue
        parts.append(f"{name} {tw / peer:.2f} (vs {who})")
    return ", ".join(parts)


def table(m, metric, sizes, scale=1.0):
    present = [n for n in sizes if any((b, n, metric) in m for b in BACKENDS)]
    head = "| backend | " + " | ".join(label(n) for n in present) + " |"
    lines = [head, "|---" + "|---:" * len(present) + "|"]
    for b in BACKENDS:
        cells = [fmt(m[(b, n, metric)] * scale) if (b, n, metric) in m else "–"
                 for n in present]
        name = f"**{b}**" if b == "tickwheel" else b
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cells = []
    for n in present:
        tw, (peer, _who) = m.get(("tickwheel", n, metric)), best_peer(m, metric, n)
        cells.append(f"{tw / peer:.2f}" if tw is not None and peer else "–")
    lines.append("| *tickwheel / best named peer* | " + " | ".join(cells) + " |")
    return lines


def label(n):
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


def region(m, info):
    out = [BEGIN, "<!-- generated by bench/core/report.py; edits here are overwritten -->", ""]
    out += [f"Measured {info['date']} at commit {info['commit']} on {info['machine']}, "
            f"by `{info['command']}`; load average {info['load_start']:.1f} at the start and "
            f"{info['load_end']:.1f} at the end"
            + (f", {info['load_min']:.1f} to {info['load_max']:.1f} when the benchmark "
               "processes started" if "load_min" in info else "")
            + " (the machine is shared with other builds: figures under load are noisy, "
            f"lateness most of all). Medians of {info['repetitions']} runs; every backend and size runs "
            "in its own process. Raw figures: `bench/results/core_raw.csv`.", ""]
    out += ["![ns per operation against pending timers, per backend](img/core_ns_per_op.png)", ""]
    if ("memory", 1_000_000, "dependent_ns") in m:
        g = lambda n, k: m.get(("memory", n, k), float("nan"))
        out += ["Limits of this machine in the same run (`bench/core/memory_probe.cc`, 32-byte "
                f"records on huge pages): a clock read {g(0, 'clock_ns'):.0f} ns; a random "
                f"access that depends on the previous one {g(1_000_000, 'dependent_ns'):.0f} ns "
                f"over 1M records (32 MB) and {g(10_000_000, 'dependent_ns'):.0f} ns over 10M; "
                "independent random read-modify-writes, overlapped by the core, "
                f"{g(1_000_000, 'independent_ns'):.1f} ns each at 1M and "
                f"{g(10_000_000, 'independent_ns'):.1f} ns at 10M.", ""]
    out += ["**Goals.** Ratio: tickwheel's figure over the reference's in this run; lower is "
            "better. Move and cancel are judged against the eager peers (the indexed heap and "
            "libev), and must not be behind any peer but the go-zero wheels, which defer their "
            "work to a scan of every timer once per turn.", "",
            "| goal | tickwheel | reference | ratio | target | met |",
            "|---|---:|---:|---:|---:|---|"]
    for row in targets(m):
        out.append("| " + " | ".join(row) + " |")
    out += ["", f"Ratios to the best named peer at 1M: {ratios_at(m, 1_000_000)}; "
            f"to any peer including the slab wheel: {ratios_at(m, 1_000_000, PEERS)}.", ""]
    r10 = ratios_at(m, 10_000_000)
    if r10:
        out += [f"At 10M (tickwheel, {', '.join(BACKENDS_10M[1:])} only): to the best named "
                f"peer {r10}; including the slab wheel {ratios_at(m, 10_000_000, PEERS)}.", ""]
    for metric, name, unit in OP_METRICS:
        out += [f"**{name}**, {unit}:", ""] + table(m, metric, SIZES) + [""]
    out += ["**fill into storage grown on demand** (page faults included; the `fill` above "
            "runs on storage each backend allocated and touched up front), ns per insert:",
            ""] + table(m, "fill_cold_ns", SIZES) + [""]
    out += ["**memory**, resident bytes per pending timer (RSS growth over a fill, the "
            "caller's 8-byte TimerId excluded, the timer structs libevent, libuv, libev and "
            "Asio make the caller embed included):", ""]
    out += table(m, "bytes_per_timer", SIZES) + [""]
    out += ["![resident bytes per pending timer](img/core_memory.png)", ""]
    out += ["**lateness**, N timers due uniformly within 300 ms (ms; measured when the loop "
            "turn that fired the timer returned, so an upper bound): p50 / p99 / max. A backend "
            "slower than 300 ns per timer at 1M (30 ns at 10M) cannot keep up and its lateness "
            "grows with the backlog.", ""]
    present = [n for n in SIZES if ("tickwheel", n, "late_p99_us") in m]
    lines = ["| backend | " + " | ".join(label(n) for n in present) + " |",
             "|---" + "|---:" * len(present) + "|"]
    for b in BACKENDS:
        cells = []
        for n in present:
            if (b, n, "late_p50_us") in m:
                cells.append(" / ".join(fmt(m[(b, n, q)] / 1000)
                                        for q in ("late_p50_us", "late_p99_us",
                                                  "late_max_us")))
            else:
                cells.append("–")
        lines.append(f"| {b} | " + " | ".join(cells) + " |")
    out += lines + [""]
    pre = [(b, m[(b, 1_000_000, "fire_preempted")]) for b in BACKENDS
           if (b, 1_000_000, "fire_preempted") in m]
    if pre:
        out += ["Involuntary context switches during the fire loop at 1M (median): " +
                ", ".join(f"{b} {v:.0f}" for b, v in pre) +
                ". Each one can hold every due timer back by a scheduler slice (milliseconds) "
                "on this shared machine.", ""]
    out += ["![lateness distribution at 1M](img/core_lateness.png)", ""]
    out += ["**idle**: 1M timers due in 1-2 h, then the event loop waits "
            f"{info['idle_seconds']} s: CPU used, % of one core:", "",
            "| backend | idle CPU |", "|---|---:|"]
    for b in BACKENDS:
        v = m.get((b, 1_000_000, "idle_cpu_percent"))
        if v is not None:
            out.append(f"| {b} | {v:.4f} % |")
    out += ["", "**idle connections** (the demo's scenario on one event loop): 1M connections, "
            "each with a 30 s idle timeout that every heartbeat (1-10 s apart per "
            "connection, about 182k a second in all) moves to 30 s later; the loop wakes "
            f"every millisecond; {info['idle_seconds']} s. CPU used, % of one core:", "",
            "| backend | CPU | moves per second |", "|---|---:|---:|"]
    for b in BACKENDS:
        v = m.get((b, 1_000_000, "conns_cpu_percent"))
        if v is not None:
            mv = m.get((b, 1_000_000, "conns_moves_per_s"), 0)
            out.append(f"| {b} | {v:.2f} % | {mv:,.0f} |")
    out += [""]
    out += keyed_table(m)
    out += ["", END]
    return "\n".join(out)


KEYED_DESIGNS = [("tickwheel-TimingWheel", "TimingWheel"),
                 ("tickwheel-TimingWheel-batch", "batch calls"),
                 ("flat-combining", "flat combining"),
                 ("prefetch-before-lock", "prefetch before lock")]
GOZERO = "go-zero-queue"
KEYED_WINNER = "tickwheel-TimingWheel-batch"


def keyed_table(m):
    if (GOZERO, 1_000_000, "set_mops_t1") not in m:
        return []
    present = [(d, name) for d, name in KEYED_DESIGNS if (d, 1_000_000, "set_mops_t1") in m]
    lines = ["**keyed**: `TimingWheel<uint64_t, uint32_t>` and the other designs measured "
             "(`bench/core/keyed_designs.h`; all synchronous: a true RemoveTimer means "
             "`execute` will not run) against go-zero's design (calls queue a command for one "
             "loop thread; counted when applied), 1M keys, interval 1 s, delays in [1 s, 1 h]; "
             "million operations per second, all producer threads together. Batch calls pass "
             "256 keys per call. Ratio: batch calls over go-zero's queue (goal ≥ 2).", "",
             "| operation | producers | go-zero queue | " +
             " | ".join(name for _d, name in present) + " | ratio | met |",
             "|---|---:|---:|" + "---:|" * len(present) + "---:|---|"]
    for op in ("set", "move", "remove"):
        for t in (1, 2, 4):
            gz = m.get((GOZERO, 1_000_000, f"{op}_mops_t{t}"))
            if gz is None:
                continue
            cells = [f"{m[(d, 1_000_000, f'{op}_mops_t{t}')]:.2f}"
                     if (d, 1_000_000, f"{op}_mops_t{t}") in m else "–" for d, _n in present]
            win = m.get((KEYED_WINNER, 1_000_000, f"{op}_mops_t{t}"))
            ratio = f"{win / gz:.2f}" if win else "–"
            met = ("yes" if win / gz >= 2 else "**no**") if win else "–"
            lines.append(f"| {op} | {t} | {gz:.2f} | " + " | ".join(cells) +
                         f" | {ratio} | {met} |")
    lines += ["", "Latency per call, p50 / p99 in µs (every 64th single call timed from call to "
              "return; every batch call, 256 keys; a go-zero call from the call to when its "
              "loop applied it):", "",
              "| operation | producers | go-zero queue | " +
              " | ".join(name for _d, name in present) + " |",
              "|---|---:|---:|" + "---:|" * len(present)]
    def lat(d, op, t):
        a = m.get((d, 1_000_000, f"{op}_p50_ns_t{t}"))
        b = m.get((d, 1_000_000, f"{op}_p99_ns_t{t}"))
        return "–" if a is None else f"{fmt(a / 1000)} / {fmt(b / 1000)}"
    for op in ("set", "move", "remove"):
        for t in (1, 2, 4):
            if (GOZERO, 1_000_000, f"{op}_p50_ns_t{t}") not in m:
                continue
            lines.append(f"| {op} | {t} | {lat(GOZERO, op, t)} | " +
                         " | ".join(lat(d, op, t) for d, _n in present) + " |")
    return lines


def write_region(text):
    path = os.path.join(ROOT, "docs", "performance.md")
    doc = open(path).read() if os.path.exists(path) else "# Performance\n"
    if BEGIN in doc and END in doc:
        doc = doc[:doc.index(BEGIN)] + text + doc[doc.index(END) + len(END):]
    else:
        # First in the file: after the title line, before any other section.
        lines = doc.split("\n", 1)
        rest = lines[1] if len(lines) > 1 else ""
        doc = (lines[0] + "\n\n## Core: Wheel against the timers people use\n\n" + text +
               "\n\n" + rest.lstrip("\n"))
    with open(path, "w") as f:
        f.write(doc)
    log("wrote", os.path.relpath(path, ROOT))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--from-csv", action="store_true",
                        help="render plots and docs from bench/results/ without running")
    args = parser.parse_args()
    os.makedirs(RESULTS, exist_ok=True)
    raw_path = os.path.join(RESULTS, "core_raw.csv")
    info_path = os.path.join(RESULTS, "core_run.csv")
    if args.from_csv:
        raw = [(b, int(n), int(r), k, float(v)) for b, n, r, k, v in read_csv(raw_path)]
        info = {k: v for k, v in read_csv(info_path)}
        for k in ("load_start", "load_end", "load_min", "load_max"):
            if k in info:
                info[k] = float(info[k])
    else:
        binary = os.path.join(args.build, "bench", "core", "core_bench")
        if not os.path.exists(binary):
            sys.exit(f"report.py: {binary} is missing; build it first "
                     "(cmake --build build --target core_bench)")
        repetitions = 1 if args.quick else args.repetitions
        info = {"date": datetime.date.today().isoformat(), "commit": commit(),
                "machine": machine(), "load_start": os.getloadavg()[0],
                "command": "make bench QUICK=1" if args.quick else "make bench",
                "repetitions": repetitions, "idle_seconds": 2 if args.quick else 10}
        raw = run_core(binary, args.quick, repetitions)
        info["load_end"] = os.getloadavg()[0]
        info["load_min"], info["load_max"] = min(LOADS), max(LOADS)
        write_csv(raw_path, ["backend", "n", "rep", "metric", "value"], raw)
        write_csv(info_path, ["key", "value"], sorted(info.items()))
    m = medians(raw)
    write_csv(os.path.join(RESULTS, "core_medians.csv"), ["backend", "n", "metric", "median"],
              sorted((b, n, k, f"{v:.6g}") for (b, n, k), v in m.items()))
    sys.path.insert(0, HERE)
    import plots  # needs matplotlib: run with /usr/bin/python3
    plots.render(m, BACKENDS, SIZES, OP_METRICS, os.path.join(ROOT, "docs", "img"))
    write_region(region(m, info))
    print("ratios at 1M:", ratios_at(m, 1_000_000))
    print("ratios at 1M incl. slab:", ratios_at(m, 1_000_000, PEERS))
    print("ratios at 10M:", ratios_at(m, 10_000_000))
    print("ratios at 10M incl. slab:", ratios_at(m, 10_000_000, PEERS))
    print("\n".join(keyed_table(m)))
    for row in targets(m):
        print(" | ".join(row))


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""The core benchmark's plots (matplotlib, PNG), from medians.

render(m, ...) writes into docs/img/:
  core_ns_per_op.png  fill, move, cancel and fire cost against N, one line
                      per backend, log-log (the headline plot)
  core_memory.png     resident bytes per pending timer against N
  core_lateness.png   lateness distribution with 1M timers due within 300 ms
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"tickwheel": dict(color="black", linewidth=2.6, marker="o", zorder=10)}
QUANTILES = [0, 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 98, 99, 99.5, 99.9, 99.99, 100]


def _style(backend):
    return STYLE.get(backend, dict(linewidth=1.3, marker="."))


def _lines(ax, m, backends, sizes, metric):
    for b in backends:
        xs = [n for n in sizes if (b, n, metric) in m]
        if xs:
            ax.plot(xs, [m[(b, n, metric)] for n in xs], label=b, **_style(b))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.set_xlabel("pending timers")


def render(m, backends, sizes, op_metrics, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5))
    for ax, (metric, name, unit) in zip(axes.flat, op_metrics):
        _lines(ax, m, backends, sizes, metric)
        ax.set_title(name)
        ax.set_ylabel(unit)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle("tickwheel against timer queues in use today (lower is better)")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "core_ns_per_op.png"), dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    _lines(ax, m, backends, sizes, "bytes_per_timer")
    ax.axhline(32, color="grey", linestyle="--", linewidth=1)
    ax.set_title("resident memory per pending timer (lower is better)")
    ax.set_ylabel("bytes per timer")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "core_memory.png"), dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    n = 1_000_000
    # A logit axis spreads the tail (p99, p99.9, p99.99) out; p0 and p100
    # cannot be placed on it and are left out (the max is in the tables).
    for b in backends:
        qs = [q for q in QUANTILES
              if 0 < q < 100 and (b, n, f"late_q{q:g}_us") in m]
        if qs:
            ax.plot([q / 100 for q in qs],
                    [max(m[(b, n, f"late_q{q:g}_us")] / 1000, 1e-3) for q in qs],
                    label=b, **_style(b))
    ax.set_xscale("logit")
    ax.set_yscale("log")
    ax.axhline(2, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel("fraction of timers fired at most this late")
    ax.set_ylabel("lateness (ms)")
    ax.set_title("lateness, 1M timers due within 300 ms (lower is better)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "core_lateness.png"), dpi=90)
    plt.close(fig)

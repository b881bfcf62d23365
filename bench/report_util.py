# SPDX-License-Identifier: Apache-2.0
"""What the benchmark reports share: the machine's CPU model, rates as
people read them, and rewriting a generated region of a Markdown file.

Scripts in bench/*/ import it after putting bench/ on sys.path:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import report_util
"""
import platform


def cpu_model():
    """The "model name" of /proc/cpuinfo, or what platform knows."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def rate(x):
    """Per second, with k and M: 950 /s, 12.3 k/s, 1.25 M/s."""
    if x >= 1e6:
        return f"{x / 1e6:.2f} M/s"
    if x >= 1e3:
        return f"{x / 1e3:.1f} k/s"
    return f"{x:.0f} /s"


def replace_region(doc, begin, end, region):
    """`doc` with the text from `begin` to `end` (markers included) replaced
    by `region`, which carries its own markers; appended when absent."""
    if begin in doc:
        start = doc.index(begin)
        stop = doc.index(end) + len(end)
        return doc[:start] + region + doc[stop:]
    return doc.rstrip("\n") + "\n\n" + region + "\n"

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The reference side of croniter_comparison_test (tests/server/).

Reads queries, one per line, tab-separated:
    cron (croniter's syntax)  zone  gap  overlap  start_s,start_s,...  count
and writes one JSON line per query:
    {"valid": bool,
     "dow_has_7": bool,             # croniter's day-of-week set holds 7
     "croniter": [[t, ...], ...],   # croniter's own answers, per start
     "wall":     [[t, ...], ...]}   # croniter on the wall clock + policies
Each list holds `count` successive next times (Unix seconds) after its
start, each after the one before; an entry that is a string is an error
("CroniterBadDateError") and ends the list.

"croniter": croniter 1.3.5 (Debian's python3-croniter) asked as a user
would, with a start datetime in the zone (zoneinfo); it moves on the wall
clock and corrects for DST changes its own way.

"wall": croniter asked for the next wall-clock readings (naive datetimes,
no zone), each reading then turned into instants with zoneinfo by the
policies of docs/schedules.md, independently of tickwheel's code:
  - a reading that exists once: its instant;
  - a reading in a gap: "shift" -> the first instant after the gap,
    "skip" -> none;
  - a reading that exists twice: "first" -> the earlier instant, "both" ->
    both;
  the next time after s is the smallest such instant > s. It walks the
  zone's stretches of constant offset (tickwheel walks local times).

Runs on Debian's /usr/bin/python3 (python3-croniter, python3-dateutil);
uses both cores.
"""
import json
import multiprocessing
import sys
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter
from croniter.croniter import CroniterError

EPOCH = datetime(1970, 1, 1)
WEEK = 7 * 86400


def offset_at(zone, t):
    return int(datetime.fromtimestamp(t, zone).utcoffset().total_seconds())


def first_change(zone, begin, end):
    """The first instant in (begin, end] whose UTC offset differs from
    begin's, or None. Samples weekly, then bisects: assumes a zone's
    offset changes at most once a week (true of the zones compared)."""
    o = offset_at(zone, begin)
    x = begin
    while x < end:
        y = min(x + WEEK, end)
        if offset_at(zone, y) != o:
            while y - x > 1:
                mid = (x + y) // 2
                if offset_at(zone, mid) != o:
                    y = mid
                else:
                    x = mid
            return y
        x = y
    return None


def reading_after(naive, local):
    """croniter's first wall-clock reading > `local` (seconds)."""
    wall = naive.get_next(datetime, EPOCH + timedelta(seconds=local))
    return int((wall - EPOCH).total_seconds())


def wall_next(naive, zone, gap, overlap, start):
    """The first fire instant > start. Walks the zone's stretches of
    constant offset from `start` on: within one (offset o, from instant b),
    reading r is instant r - o; at its beginning, the readings the change
    skipped (a gap) fire at b with "shift", and those it shows again (an
    overlap) fire again only with "both"."""
    t = start + 1
    o = offset_at(zone, t)
    begin, o_before = None, None  # the change that began t's stretch, if recent
    change = first_change(zone, t - 2 * 86400, t)
    if change is not None:
        begin, o_before = change, offset_at(zone, change - 1)
    b = t
    while True:
        if begin is not None and begin > start and o > o_before and gap == "shift":
            if reading_after(naive, begin + o_before - 1) < begin + o:
                return begin
        lo = b + o
        if begin is not None and o < o_before and overlap == "first":
            lo = max(lo, begin + o_before)  # shown before the change
        u = reading_after(naive, lo - 1) - o
        change = first_change(zone, b, u)
        if change is None:
            return u
        begin, o_before, o, b = change, o, offset_at(zone, change), change


def answer(line):
    cron, zone_name, gap, overlap, starts, count = line.rstrip("\n").split("\t")
    zone = ZoneInfo(zone_name)
    count = int(count)
    out = {"valid": croniter.is_valid(cron), "croniter": [], "wall": []}
    if not out["valid"]:
        return json.dumps(out)
    aware = croniter(cron, datetime(2000, 1, 1, tzinfo=zone))
    naive = croniter(cron, datetime(2000, 1, 1))
    # With six fields croniter keeps day-of-week 7 as 7, which no day has.
    out["dow_has_7"] = 7 in naive.expanded[4]
    for start in (int(s) for s in starts.split(",")):
        own, wall = [], []
        t = start
        for _ in range(count):
            try:
                t = int(aware.get_next(float, datetime.fromtimestamp(t, zone)))
                own.append(t)
            except CroniterError as e:
                own.append(type(e).__name__)
                break
        t = start
        for _ in range(count):
            try:
                t = wall_next(naive, zone, gap, overlap, t)
                wall.append(t)
            except CroniterError as e:
                wall.append(type(e).__name__)
                break
        out["croniter"].append(own)
        out["wall"].append(wall)
    return json.dumps(out)


def main():
    with open(sys.argv[1]) as f:
        lines = f.readlines()
    with multiprocessing.Pool(2) as pool:
        results = pool.map(answer, lines, chunksize=16)
    with open(sys.argv[2], "w") as f:
        for r in results:
            f.write(r + "\n")


if __name__ == "__main__":
    main()

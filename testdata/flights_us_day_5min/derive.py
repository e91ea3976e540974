#!/usr/bin/env python3
"""Derive the user-level stream `stream.csv` of this folder from the tracktable-data wheel.

Usage: python3 derive.py PATH/TO/tracktable_data-1.7.3.1-py3-none-any.whl > stream.csv

Input: `tracktable_data/python_example_data/prediction_historical_trajectories.traj` inside
the wheel (tracktable's text trajectory format: one trajectory per line, `*T*`, an id, the
domain, the point count, then per point the object id, timestamp, longitude, latitude and the
point properties the header declares). 412 aircraft (object ids), 2013-07-10, one point about
every minute while in the air.

Output: `timestamp_bucket,user_id,location_cell`, one row per aircraft per five-minute bucket
of the day (288 buckets, bucket 0 = 00:00-00:04:59). The cell of a bucket is the grid cell of
the aircraft's last point in it: longitude -125..-65 in 8 columns of 7.5 degrees, latitude
24..50 in 5 rows of 5.2 degrees, cell = 8 * row + column (row 0 in the south); 40 (OUT) when
the aircraft has no point in the bucket or the point lies outside the box. Users are numbered
in the order of their sorted object ids. Python 3 standard library only.
"""
import sys
import zipfile

MEMBER = "tracktable_data/python_example_data/prediction_historical_trajectories.traj"
WEST, EAST, SOUTH, NORTH = -125.0, -65.0, 24.0, 50.0
COLUMNS, ROWS = 8, 5
OUT = COLUMNS * ROWS
BUCKETS = 288


def cell(lon, lat):
    if not (WEST <= lon < EAST and SOUTH <= lat < NORTH):
        return OUT
    column = int((lon - WEST) / ((EAST - WEST) / COLUMNS))
    row = int((lat - SOUTH) / ((NORTH - SOUTH) / ROWS))
    return COLUMNS * min(row, ROWS - 1) + min(column, COLUMNS - 1)


def points(text):
    for line in text.splitlines():
        fields = line.split(",")
        if not fields or fields[0] != "*T*":
            continue
        count = int(fields[3])
        header = fields.index("*P*")
        properties = int(fields[header + 5])
        i = header + 6 + 2 * properties
        for _ in range(count):
            object_id, stamp, lon, lat = fields[i:i + 4]
            i += 4 + properties
            yield object_id, stamp, float(lon), float(lat)


def main():
    with zipfile.ZipFile(sys.argv[1]) as wheel:
        text = wheel.read(MEMBER).decode("ascii")
    last = {}
    for object_id, stamp, lon, lat in points(text):
        day, clock = stamp.split(" ")
        if day != "2013-07-10":
            continue
        hours, minutes, seconds = (int(v) for v in clock.split(":"))
        bucket = (60 * hours + minutes) // 5
        key = (object_id, bucket)
        if key not in last or stamp >= last[key][0]:
            last[key] = (stamp, cell(lon, lat))
    users = sorted({object_id for object_id, _ in last})
    out = sys.stdout
    out.write("timestamp_bucket,user_id,location_cell\n")
    for bucket in range(BUCKETS):
        for user, object_id in enumerate(users):
            out.write(f"{bucket},{user},{last.get((object_id, bucket), (None, OUT))[1]}\n")


if __name__ == "__main__":
    main()

# Reads the wall clock the ways Python backends commonly do, once per line on stdin, and prints the milliseconds each
# gives: int(time.time()*1000), round(time.time()*1000), datetime.now(), datetime.now(timezone.utc), time.time_ns().
import datetime
import sys
import time

for _ in sys.stdin:
    t = time.time()
    readings = [
        int(t * 1000),
        round(t * 1000),
        int(datetime.datetime.now().timestamp() * 1000),
        int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000),
        time.time_ns() // 1_000_000,
    ]
    print(" ".join(str(r) for r in readings), flush=True)

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Our canonical double layout must equal Python's json.dumps for every finite
double (SPEC §3: the layout follows the Python core). Checks hand-picked edge
values plus random bit patterns and random 'human' decimals."""
import json
import random
import struct
import subprocess
import sys

def bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]

rng = random.Random(20261202)
values = [0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1e-4, 9.999e-5, 1e-5, 1e15, 9999999999999998.0, 1e16, 1e17, 1e21, 1e22,
          1.5e300, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1 + 0.2, 123.456, 1 / 3, 2 / 3]
while len(values) < 200000:
    x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
    if x == x and x not in (float("inf"), float("-inf")):
        values.append(x)
for _ in range(50000):
    values.append(round(rng.uniform(-1e6, 1e6), rng.randint(0, 8)))
    values.append(rng.randint(-10**6, 10**6) * 10.0 ** rng.randint(-20, 20))

proc = subprocess.run([sys.argv[1]], input="".join("%016x\n" % bits(v) for v in values),
                      capture_output=True, text=True, check=True)
ours = proc.stdout.split("\n")
bad = [(v, o) for v, o in zip(values, ours) if json.dumps(v) != o]
print("%d doubles compared, %d differ" % (len(values), len(bad)))
for v, o in bad[:20]:
    print("  python %s  ours %s" % (json.dumps(v), o))
print("%d passed, %d failed" % (len(values) - len(bad), len(bad)))
sys.exit(1 if bad else 0)

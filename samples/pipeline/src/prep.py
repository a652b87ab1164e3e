"""Step 1: write a small regression data set (x, y) into the output folder."""
import os
import random
import sys

out = sys.argv[1]
rng = random.Random(0)
with open(os.path.join(out, "data.csv"), "w") as fh:
    for _ in range(256):
        x = rng.uniform(-1, 1)
        fh.write(f"{x},{3 * x + 0.5 + rng.gauss(0, 0.01)}\n")
print("prep: 256 rows in", out)

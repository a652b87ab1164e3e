"""Step 3: read the model; fail when it did not learn y = 3x + 0.5."""
import os
import sys

import torch

state = torch.load(os.path.join(sys.argv[1], "model.pt"))
weight, bias = state["weight"].item(), state["bias"].item()
print(f"evaluate: y = {weight:.3f} x + {bias:.3f}")
sys.exit(0 if abs(weight - 3) < 0.3 and abs(bias - 0.5) < 0.1 else 1)

"""A small pipeline project on disk for the pipeline tests: prep -> 2 x 2 PyTorch training -> evaluate.

prep writes numbers into its output folder; train (a v2 command component, pytorch, 2 nodes x 2
processes, gloo) all-reduces them and rank 0 writes the model; evaluate (an inline command) reads
the model. ``prep_exit`` makes the first step fail with that code.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

PREP = """\
import os, sys
out = sys.argv[1]
if int(sys.argv[2]):
    print("prep: the source data is missing", flush=True)
    sys.exit(int(sys.argv[2]))
with open(os.path.join(out, "numbers.txt"), "w") as fh:
    fh.write("1 2 3\\n")
print("prep wrote", out)
"""

TRAIN = """\
import argparse, os
parser = argparse.ArgumentParser()
parser.add_argument("--data"); parser.add_argument("--model"); parser.add_argument("--scale", type=float)
args = parser.parse_args()
import torch
import torch.distributed as dist
from amldist.runtime import init_distributed
env = init_distributed(backend="gloo")
numbers = [float(x) for x in open(os.path.join(args.data, "numbers.txt")).read().split()]
total = torch.tensor([sum(numbers) * args.scale * (env.rank + 1)])
dist.all_reduce(total)
print(f"rank {env.rank}/{env.world_size} total {total.item()}", flush=True)
if env.rank == 0:
    with open(os.path.join(args.model, "model.txt"), "w") as fh:
        fh.write(f"total={total.item()} world={env.world_size}\\n")
dist.barrier()
dist.destroy_process_group()
"""

COMPONENT = """\
$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
type: command
name: tiny_train
version: "1"
code: ./src
command: python train.py --data ${{inputs.data}} --model ${{outputs.model}} --scale ${{inputs.scale}}
inputs:
  data: {type: uri_folder}
  scale: {type: number, default: 1.0}
outputs:
  model: {type: uri_folder}
environment: azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest
distribution: {type: pytorch, process_count_per_instance: 2}
resources: {instance_count: 2}
"""

PIPELINE = """\
$schema: https://azuremlschemas.azureedge.net/latest/pipelineJob.schema.json
type: pipeline
name: demo
compute: azureml:cpu-cluster
inputs:
  scale: 2.0
  prep_exit: 0
outputs:
  final_model: {type: uri_folder}
jobs:
  prep:
    type: command
    code: ./src
    command: python prep.py ${{outputs.data}} ${{inputs.exit}}
    environment: azureml:AzureML-sklearn-1.5@latest
    inputs:
      exit: ${{parent.inputs.prep_exit}}
    outputs:
      data: {type: uri_folder}
  train:
    type: command
    component: ./train.yml
    inputs:
      data: ${{parent.jobs.prep.outputs.data}}
      scale: ${{parent.inputs.scale}}
    outputs:
      model: ${{parent.outputs.final_model}}
  evaluate:
    type: command
    command: cat ${{inputs.model}}/model.txt
    environment: azureml:AzureML-sklearn-1.5@latest
    inputs:
      model: ${{parent.jobs.train.outputs.model}}
"""


def make_pipeline_project(root: Path, pipeline: str = PIPELINE) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "prep.py").write_text(PREP)
    (root / "src" / "train.py").write_text(TRAIN)
    (root / "train.yml").write_text(COMPONENT)
    (root / "pipeline.yml").write_text(textwrap.dedent(pipeline))
    return root

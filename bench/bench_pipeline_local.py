"""The local overhead of a pipeline run against running its steps one by one.

Runs samples/pipeline/pipeline.yml with ``amldist submit --local`` (one command: graph, plan,
scheduler, a child process per step), then the same three steps as three single-job submissions
(``amldist submit job.yml --local`` each, outputs passed by --input), and prints both times and
the ratio. Each side runs ``--repeat`` times (default 2); the median counts.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "samples", "pipeline")
AMLDIST = [sys.executable, "-c", "import sys; from amldist.cli.main import main; sys.exit(main())"]


def timed(commands, cwd) -> float:
    start = time.perf_counter()
    for command in commands:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"{command[-4]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - start


def step_jobs(folder: str) -> list:
    """The three steps as single command jobs; each reads the previous one's output folder."""
    runs = os.path.join(folder, ".amldist", "runs")
    head = f"type: command\ncode: {SAMPLE}/src\nenvironment: azureml:x@latest\n"
    jobs = {
        "prep": head + "command: python prep.py ${{outputs.data}}\noutputs: {data: {type: uri_folder}}\n",
        "train": head + "command: python train.py --data ${{inputs.data}} --model ${{outputs.model}}\n"
                 f"inputs: {{data: {{type: uri_folder, path: {runs}/prep/outputs/data}}}}\n"
                 "outputs: {model: {type: uri_folder}}\n"
                 "distribution: {type: pytorch, process_count_per_instance: 2}\nresources: {instance_count: 2}\n",
        "evaluate": head + "command: python evaluate.py ${{inputs.model}}\n"
                    f"inputs: {{model: {{type: uri_folder, path: {runs}/train/outputs/model}}}}\n",
    }
    commands = []
    for name, text in jobs.items():
        path = os.path.join(folder, f"{name}.yml")
        with open(path, "w") as fh:
            fh.write(text)
        commands.append([*AMLDIST, "submit", path, "--local", "--name", name])
    return commands


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    pipeline, steps = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as folder:
            pipeline.append(timed([[*AMLDIST, "submit", os.path.join(SAMPLE, "pipeline.yml"), "--local"]], folder))
        with tempfile.TemporaryDirectory() as folder:
            steps.append(timed(step_jobs(folder), folder))
    p, s = statistics.median(pipeline), statistics.median(steps)
    print(f"pipeline run: {p:.2f}s; steps one by one: {s:.2f}s; ratio {p / s:.2f} (target <= 1.10)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Check the TF_CONFIG this task was given, the way a tf.distribute program would read it.

Azure ML's TensorFlow distribution sets TF_CONFIG to {"cluster": {"worker": [...], "ps": [...]},
"task": {"type": ..., "index": ...}, "environment": "cloud"} in every task. This script checks
its shape; when TensorFlow is installed it also reads it with TFConfigClusterResolver (without
starting servers, so the check stays quick).
"""

import argparse
import json
import os
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--expected-workers", type=int, required=True)
    parser.add_argument("--expected-ps", type=int, default=0)
    args = parser.parse_args()

    raw = os.environ.get("TF_CONFIG")
    if not raw:
        sys.exit("TF_CONFIG is not set: is this job's distribution 'tensorflow'?")
    config = json.loads(raw)
    cluster, task = config["cluster"], config["task"]
    workers, ps = cluster.get("worker", []), cluster.get("ps", [])
    problems = []
    if len(workers) != args.expected_workers:
        problems.append(f"{len(workers)} workers, expected {args.expected_workers}")
    if len(ps) != args.expected_ps:
        problems.append(f"{len(ps)} parameter servers, expected {args.expected_ps}")
    if task["type"] not in ("worker", "ps") or not 0 <= task["index"] < len(cluster.get(task["type"], [])):
        problems.append(f"task {task} is not in the cluster")
    if any(address.count(":") != 1 for address in workers + ps):
        problems.append("every address must be host:port")
    print(f"task {task['type']} {task['index']}: workers {workers}, ps {ps}, environment {config.get('environment')}",
          flush=True)

    try:
        import tensorflow as tf
    except ImportError:
        print("TensorFlow is not installed: TF_CONFIG checked by hand only", flush=True)
    else:
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        spec = resolver.cluster_spec().as_dict()
        print(f"TFConfigClusterResolver: {resolver.task_type} {resolver.task_id}, cluster {spec}", flush=True)
        if (resolver.task_type, resolver.task_id) != (task["type"], task["index"]):
            problems.append("TensorFlow read a different task")
    if problems:
        sys.exit("TF_CONFIG check failed: " + "; ".join(problems))


if __name__ == "__main__":
    main()

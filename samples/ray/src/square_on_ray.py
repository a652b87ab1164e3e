"""Runs once, on the Ray head: joins the cluster the launcher started (RAY_ADDRESS), checks every node is
there, and spreads a few tasks over it."""

import argparse
import socket

import ray


@ray.remote(num_cpus=0, scheduling_strategy="SPREAD")
def square(x: int) -> tuple[int, str]:
    return x * x, ray.get_runtime_context().get_node_id()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--expected-nodes", type=int, required=True)
    parser.add_argument("--tasks", type=int, default=8)
    args = parser.parse_args()
    ray.init(log_to_driver=False)  # RAY_ADDRESS names the head amldist (or Azure ML) started
    alive = [n for n in ray.nodes() if n["Alive"]]
    print(f"ray cluster: {len(alive)} node(s) on {socket.gethostname()}", flush=True)
    if len(alive) != args.expected_nodes:
        raise SystemExit(f"expected {args.expected_nodes} Ray nodes, found {len(alive)}")
    results = ray.get([square.remote(i) for i in range(args.tasks)])
    print(f"sum of squares: {sum(r for r, _ in results)} from {len({n for _, n in results})} node(s)", flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main()

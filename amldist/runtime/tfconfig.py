"""TF_CONFIG, set by Azure ML's ``distribution: tensorflow``: a JSON cluster of "host:port"
lists per task type and this task's type and index. The torch world is the chief (if any)
followed by the workers; parameter servers and evaluators are not part of it.

Bounded: JSON nested too deep for the parser (RecursionError), numbers past Python's int
conversion limit and indexes over MAX_INT are DistEnvError like any other malformed value."""

from __future__ import annotations

import json
from collections.abc import Mapping

from .dist_env import DistEnv, DistEnvError
from .env_reader import DEFAULT_PORT, MAX_INT, EnvReader, quote, split_host_port
from .launcher import Launcher

_WORLD_TYPES = ("chief", "worker")


class TfConfig(Launcher):
    name = "tf_config"

    @staticmethod
    def detect(environ: Mapping[str, str]) -> bool:
        return EnvReader(environ).has("TF_CONFIG")

    @staticmethod
    def read(r: EnvReader) -> DistEnv:
        cluster, task_type, index = _parse(r.environ["TF_CONFIG"])
        members = [(kind, i, address) for kind in _WORLD_TYPES for i, address in enumerate(cluster.get(kind, []))]
        places = [(kind, i) for kind, i, _ in members]
        if (task_type, index) not in places:
            raise DistEnvError(
                f"TF_CONFIG task {quote(task_type)} {index} is not among the cluster's {' and '.join(_WORLD_TYPES)} "
                "tasks, so it has no torch rank (parameter servers and evaluators have none)"
            )
        rank = r.derived("rank", places.index((task_type, index)), "TF_CONFIG task")
        hosts = [split_host_port(address, "TF_CONFIG") for _, _, address in members]
        my_host = hosts[rank][0]
        node_hosts = list(dict.fromkeys(host for host, _ in hosts))  # unique, in order of first rank
        # Tasks that share a host share a node: count this task's place among them.
        local_rank = r.derived("local_rank", sum(host == my_host for host, _ in hosts[:rank]), "TF_CONFIG cluster")
        local_world_size = r.derived("local_world_size", sum(host == my_host for host, _ in hosts), "TF_CONFIG cluster")
        master_host, master_port = hosts[0]
        return r.build(
            TfConfig.name, rank=rank, local_rank=local_rank,
            world_size=r.derived("world_size", len(members), "TF_CONFIG cluster"),
            local_world_size=local_world_size,
            node_rank=r.derived("node_rank", node_hosts.index(my_host), "TF_CONFIG cluster"),
            num_nodes=r.derived("num_nodes", len(node_hosts), "TF_CONFIG cluster"),
            master_addr=r.master_addr(master_host, "TF_CONFIG"),
            # TF_CONFIG gives the first task that port for its own server, and that task is rank
            # 0, the one that listens; a missing port falls back to torch's default.
            master_port=r.master_port(master_port or DEFAULT_PORT),
        )


def _parse(raw: str) -> tuple[dict, str, int]:
    try:
        config = json.loads(raw)
    except RecursionError:
        raise DistEnvError("TF_CONFIG is not valid JSON: nested too deep") from None
    except ValueError as err:  # also a number past Python's 4,300-digit int conversion limit
        raise DistEnvError(f"TF_CONFIG is not valid JSON: {' '.join(str(err).split())}") from None
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise DistEnvError('TF_CONFIG must be a JSON object with "cluster" and "task" objects')
    for kind in _WORLD_TYPES:
        addresses = cluster.get(kind, [])
        if not isinstance(addresses, list) or not all(isinstance(a, str) and a for a in addresses):
            raise DistEnvError(f'TF_CONFIG cluster "{kind}" must be a list of "host:port" strings')
    task_type, index = task.get("type"), task.get("index", 0)
    valid_index = isinstance(index, int) and not isinstance(index, bool) and 0 <= index <= MAX_INT
    if not isinstance(task_type, str) or not valid_index:
        raise DistEnvError(f'TF_CONFIG task must have a string "type" and an integer "index" from 0 to {MAX_INT}')
    return cluster, task_type, index

"""Rules a JSON Schema cannot express, each with its own code.

- placeholders and optional groups: see ``command_rules.py``;
- ``too-many-processes``: ``process_count_per_instance`` above the GPUs of
  ``resources.instance_type``. Only for GPU sizes the catalog knows the GPU
  count of: an unknown size, a guess without a GPU count, or a CPU size (MPI
  with many ranks per CPU node is normal) is skipped;
- ``no-infiniband`` (warning): more than one node of a GPU size without
  InfiniBand in a distributed job (NCCL falls back to TCP between nodes); only
  for sizes in the catalog (a name guess cannot tell InfiniBand reliably);
- ``missing-code`` / ``missing-environment-file`` (warnings): a local ``code:``
  folder, ``file:`` environment, ``conda_file`` or ``build.path`` that does not
  exist relative to the spec's folder (remote and ``azureml:`` references are
  not checked; nor is anything when the spec has no folder, e.g. a dict).
"""

from __future__ import annotations

import os

from amldist.diagnostics import ERROR, WARNING
from amldist.spec import paths
from amldist.spec.kinds import distribution_kind

_GPU_DISTRIBUTIONS = ("pytorch", "mpi")


def declared(section) -> dict:
    return section if isinstance(section, dict) else {}


def ports(spec: dict, key: str) -> dict | None:
    """The ``inputs`` or ``outputs`` (``key``) that ``spec`` declares; {} when it has none.

    None when the section is there but is no mapping (null, a list): the schema reports
    that, and names used in commands or bindings are then left unchecked rather than each
    reported again as undeclared (one diagnostic per mistake).
    """
    section = spec.get(key)
    if isinstance(section, dict):
        return section
    return None if key in spec else {}


def dotted(path) -> str:
    """``jobs.train.command``: a path as the messages name it."""
    return ".".join(str(p) for p in path)


# ---- VM sizes ----

def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_sizes(ctx, distribution, resources, *, dist_path, res_path, origin=None) -> None:
    """Size rules for one job, component or node; ``origin`` maps a key to where it came from."""
    if not isinstance(resources, dict):
        return
    instance_type = resources.get("instance_type")
    if not isinstance(instance_type, str) or not instance_type:
        return
    from amldist.spec import vm_sizes

    size = vm_sizes.lookup(instance_type)
    if size is None:
        return
    dist = distribution if isinstance(distribution, dict) else {}
    dist_type = dist.get("type")
    dist_type = distribution_kind(dist_type)
    where = origin or {}
    processes = _count(dist.get("process_count_per_instance"))
    if dist_type in _GPU_DISTRIBUTIONS and processes and size.gpus and processes > size.gpus:
        key_path = where.get("process_count_per_instance", dist_path + ("process_count_per_instance",))
        ctx.emit(key_path, ERROR, "too-many-processes",
                 f"{dotted(dist_path)}.process_count_per_instance is {processes} but {size.name} has "
                 f"{size.gpus} GPU{'s' if size.gpus != 1 else ''}",
                 f"use at most {size.gpus} (one process per GPU) or a larger size",
                 field_path=dist_path + ("process_count_per_instance",))
    nodes = _count(resources.get("instance_count"))
    if dist_type and nodes and nodes > 1 and not size.infiniband and size.gpus and not size.guess:
        key_path = where.get("instance_count", res_path + ("instance_count",))
        ctx.emit(key_path, WARNING, "no-infiniband",
                 f"{dotted(res_path)}.instance_count is {nodes} but {size.name} has no InfiniBand: "
                 "NCCL traffic between nodes goes over TCP",
                 "for multi-node training pick an InfiniBand size (an 'r' size such as Standard_ND96asr_v4)"
                 " or train on one node", field_path=res_path + ("instance_count",))


# ---- local files ----

def local_file(ctx, ref):
    """The absolute path a local reference names (:mod:`amldist.spec.paths`), else None."""
    if ctx.base_dir is None or not paths.is_local(ref):
        return None
    return paths.local_path(ref, ctx.base_dir)


def check_code(ctx, spec: dict, path=()) -> None:
    code = spec.get("code")
    local = local_file(ctx, code)
    if local is not None and not os.path.exists(local):
        ctx.emit(path + ("code",), WARNING, "missing-code",
                 f"{dotted(path + ('code',))}: {code!r} does not exist (relative to the spec's folder)",
                 "fix the path; the folder is uploaded as the job's snapshot")


_ENV_FILE_KEYS = ("conda_file", "conda_dependencies_file", "pip_requirements_file")


def check_environment(ctx, spec: dict, path=()) -> None:
    env = spec.get("environment")
    env_path = path + ("environment",)
    refs = []
    if isinstance(env, str) and env.strip().startswith("file:"):
        refs.append((env_path, env))
    elif isinstance(env, dict):
        for holder, holder_path in ((env, env_path), (env.get("conda"), env_path + ("conda",))):
            if isinstance(holder, dict):
                refs.extend((holder_path + (k,), holder[k]) for k in _ENV_FILE_KEYS if isinstance(holder.get(k), str))
        build = env.get("build")
        if isinstance(build, dict) and isinstance(build.get("path"), str):
            refs.append((env_path + ("build", "path"), build["path"]))
        docker = env.get("docker")
        dockerfile = docker.get("build", {}).get("dockerfile") if isinstance(docker, dict) and isinstance(
            docker.get("build"), dict) else None
        if isinstance(dockerfile, str) and dockerfile.startswith("file:"):
            refs.append((env_path + ("docker", "build", "dockerfile"), dockerfile))
    for ref_path, ref in refs:
        local = local_file(ctx, ref)
        if local is not None and not os.path.exists(local):
            ctx.emit(ref_path, WARNING, "missing-environment-file",
                     f"{dotted(ref_path)}: {ref!r} does not exist (relative to the spec's folder)",
                     "fix the path or use a registered environment (azureml:NAME:VERSION)")


# ---- keys ----

def string_keys(ctx, data, renamed: set, path=()):
    """``data`` with every mapping key a string; non-string keys (``1:``, ``yes:``) are errors.

    ``renamed`` collects the path (ending in the new string key) of each key changed: that
    key's error is this one, so the schema's "unknown key" about it is not reported again.
    """
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            if not isinstance(key, str):
                ctx.emit(path + (key,), ERROR, "non-string-key",
                         f"key {key!r} in {dotted(path) or 'the document'} is not a string",
                         f"quote it: '{key}'" if not isinstance(key, bool) else "quote it (YAML reads yes/no/on/off as booleans)")
                key = str(key).lower() if isinstance(key, bool) else str(key)
                renamed.add(path + (key,))
            out[key] = string_keys(ctx, value, renamed, path + (key,))
        return out
    if isinstance(data, list):
        return [string_keys(ctx, item, renamed, path + (i,)) for i, item in enumerate(data)]
    return data


def has_non_string_keys(data, doc=None) -> bool:
    if doc is not None:  # the loader recorded every key path: no need to walk the data
        return any(type(path[-1]) is not str for path in doc.keys)
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if type(key) is not str:
                    return True
                if isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))
    return False

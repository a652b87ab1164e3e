"""A component's relative paths, made absolute so that they mean the same wherever its YAML is written.

azure-ai-ml resolves a component's relative paths against the folder of the file that holds the
component: for ``component: ./train/train.yml`` that is ``./train/``, for a component written
inline into a pipeline it is the pipeline's folder. When the Azure backend writes a step's
component inline (to give it a code snapshot holding ``amldist/runtime/``), every local path the
component names is made absolute from the component's own folder first, so that the step still
gets the component's own ``conda.yaml`` (not one that happens to lie beside the pipeline), its own
``additional_includes`` and its own files.

The fields are the ones azure-ai-ml 1.35.2 reads as local paths in a command component:
``code``, ``environment.conda_file``, ``environment.build.path``, each ``additional_includes``
entry, and ``path`` / ``default`` of data inputs. ``file:`` prefixes are read as azure-ai-ml
reads them (``file:./x`` is ``./x``). Remote and ``azureml:`` values are left as written.
"""

from __future__ import annotations

import copy

from amldist.model.kinds import is_data_type
from amldist.rules import paths


def _absolute(value, folder: str):
    return paths.local_path(value, folder) if paths.is_local(value) else value


def absolute(component: dict, folder: str) -> dict:
    """A copy of ``component`` whose local relative paths are absolute, read from ``folder``."""
    out = copy.deepcopy(component)
    if isinstance(out.get("code"), str):
        out["code"] = _absolute(out["code"], folder)
    environment = out.get("environment")
    if isinstance(environment, dict):
        if isinstance(environment.get("conda_file"), str):
            environment["conda_file"] = _absolute(environment["conda_file"], folder)
        build = environment.get("build")
        if isinstance(build, dict) and isinstance(build.get("path"), str):
            build["path"] = _absolute(build["path"], folder)
    includes = out.get("additional_includes")
    if isinstance(includes, list):
        out["additional_includes"] = [_absolute(i, folder) if isinstance(i, str) else i for i in includes]
    for port in (out.get("inputs") or {}).values():
        if isinstance(port, dict) and is_data_type(port.get("type")):
            for key in ("path", "default"):
                if isinstance(port.get(key), str):
                    port[key] = _absolute(port[key], folder)
    return out


def absolute_pipeline(component: dict, folder: str) -> dict:
    """A copy of a pipeline component written in ``folder`` whose steps' local paths are absolute:
    ``component: ./x.yml`` references, inline components, inline steps' code and environment, and
    data paths (the component's inputs' and its steps')."""
    out = absolute(component, folder)
    for name, node in (out.get("jobs") or {}).items():
        if not isinstance(node, dict):
            continue
        reference = node.get("component")
        node = out["jobs"][name] = absolute({k: v for k, v in node.items() if k != "component"}, folder) | (
            {} if reference is None else {"component": reference})
        if isinstance(reference, str):
            node["component"] = _absolute(reference, folder)
        elif isinstance(reference, dict):
            node["component"] = (absolute_pipeline if "jobs" in reference else absolute)(reference, folder)
    return out

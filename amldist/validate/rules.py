"""Rules a JSON Schema cannot express, each with its own code.

- placeholders and optional groups: see ``command_rules.py``;
- ``too-many-processes``, ``no-infiniband`` and ``infiniband-disabled``: what
  ``resources.instance_type`` says about the counts, the builders' rule
  (:mod:`amldist.rules.size_findings`);
- ``missing-code`` / ``missing-environment-file`` (warnings): a local ``code:``
  folder, ``file:`` environment, ``conda_file`` or ``build.path`` that does not
  exist relative to the spec's folder (remote and ``azureml:`` references are
  not checked; nor is anything when the spec has no folder, e.g. a dict); a legacy
  spec's ``conda.*_file`` and ``docker.build.dockerfile`` are relative to its code folder.
- ``outside-code`` (error): such a legacy file that climbs out of the code folder
  (``../requirements.txt``): azure-ai-ml reads it from the code snapshot at submission.
"""

from __future__ import annotations

import os

from amldist.diagnostics import ERROR, WARNING
from amldist.rules import paths
from amldist.model.field_paths import field_path

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


def check_port_names_case(ctx, spec: dict) -> None:
    """``port-name-case``: two inputs (or two outputs) whose names differ only in letter case. azure-ai-ml's
    component refuses them ("which are equal ignore case"), and a command job is sent as a component, so Azure
    ML refuses the job too, although azure-ai-ml's own ``load_job(...)._validate()`` passes it."""
    for key in ("inputs", "outputs"):
        seen: dict = {}
        for name in ports(spec, key) or {}:
            if not isinstance(name, str):
                continue
            first = seen.setdefault(name.lower(), name)
            if first != name:
                ctx.emit((key, name), ERROR, "port-name-case",
                         f"{key}.{name} and {key}.{first} differ only in letter case, which Azure ML refuses",
                         hint=f"rename one of them ({key[:-1]} names are compared ignoring case)")


# ---- VM sizes ----

def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_sizes(ctx, distribution, resources, *, dist_path, res_path, origin=None, environment_variables=None) -> None:
    """Size rules for one job, component or node (:mod:`amldist.rules.size_findings`, the builders'
    rule too); ``origin`` maps a key to where it came from."""
    if not isinstance(resources, dict):
        return
    instance_type = resources.get("instance_type")
    if not isinstance(instance_type, str) or not instance_type:
        return
    # imported here: the size catalog (~2 ms) is paid for only by specs that name a size
    from amldist.rules import vm_sizes
    from amldist.rules.size_findings import size_findings

    dist = distribution if isinstance(distribution, dict) else {}
    where = origin or {}
    for found in size_findings(vm_sizes.lookup(instance_type), distribution_type=dist.get("type"),
                               instance_count=resources.get("instance_count"),
                               process_count=dist.get("process_count_per_instance"),
                               environment_variables=environment_variables):
        section, key = found.field.split(".", 1)
        base = {"distribution": dist_path, "resources": res_path}.get(section, res_path[:-1] + (section,))
        path = base + (key,)
        ctx.emit(where.get(key, path), found.severity, found.code, f"{field_path(path)}: {found.message}", found.hint,
                 field=path)


# ---- local files ----

def local_file(ctx, ref):
    """The absolute path a local reference names (:mod:`amldist.rules.paths`), else None."""
    if ctx.base_dir is None or not paths.is_local(ref):
        return None
    return paths.local_path(ref, ctx.base_dir)


def check_code(ctx, spec: dict, path=()) -> None:
    code = spec.get("code")
    local = local_file(ctx, code)
    if local is not None and not os.path.exists(local):
        ctx.emit(path + ("code",), WARNING, "missing-code",
                 f"{field_path(path + ('code',))}: {code!r} does not exist (relative to the spec's folder)"
                 f"{paths.tilde_note(code)}",
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
    code = spec.get("code") if isinstance(spec.get("code"), str) else "."
    for ref_path, ref in refs:
        written, relative_to = ref, "the spec's folder"
        if len(ref_path) > len(env_path) and ref_path[len(env_path)] in ("conda", "docker"):  # a legacy spec's:
            if _legacy_file_outside(ctx, ref_path, ref, code):  # relative to the code folder, read inside it
                continue
            ref, relative_to = _in_code(ref, code), f"the code folder {code!r}"
        local = local_file(ctx, ref)
        if local is not None and not os.path.exists(local):
            ctx.emit(ref_path, WARNING, "missing-environment-file",
                     f"{field_path(ref_path)}: {written!r} does not exist (relative to {relative_to})",
                     "fix the path or use a registered environment (azureml:NAME:VERSION)")


def _in_code(ref: str, code: str) -> str:
    """A legacy environment file path (relative to the code folder) as a path relative to the spec's folder."""
    plain = ref[len("file:"):] if ref.startswith("file:") else ref
    if not paths.is_local(code) or os.path.isabs(plain):
        return plain
    return os.path.normpath(os.path.join(paths.without_file_scheme(code), plain))


def _legacy_file_outside(ctx, ref_path, ref: str, code: str) -> bool:
    """An error when a legacy environment file climbs out of the code folder (the rule of
    :func:`amldist.authoring.convert._inside_code`, which submit and convert apply)."""
    plain = ref[len("file:"):] if ref.startswith("file:") else ref
    if not paths.leaves_folder(plain):
        return False
    ctx.emit(ref_path, ERROR, "outside-code", f"{field_path(ref_path)}: {plain!r} is outside the code folder "
             f"{code!r}; Azure ML reads it from the component's code snapshot, which holds only that folder",
             "move the file into the code folder and name it relative to that folder")
    return True


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
                         f"key {key!r} in {field_path(path) or 'the document'} is not a string",
                         f"quote it: '{key}'" if not isinstance(key, bool) else "quote it (YAML reads yes/no/on/off as booleans)")
                key = str(key).lower() if isinstance(key, bool) else str(key)
                renamed.add(path + (key,))
            out[key] = string_keys(ctx, value, renamed, path + (key,))
        return out
    if isinstance(data, list):
        return [string_keys(ctx, item, renamed, path + (i,)) for i, item in enumerate(data)]
    return data


def has_non_string_keys(data, doc=None) -> bool:
    if doc is not None:  # the loader saw every key: no need to walk the data
        return doc.non_string_keys
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

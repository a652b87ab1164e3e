"""Which Azure ML workspace ``amldist submit`` sends a job to.

:func:`resolve_workspace` is a pure function of (environment, current directory,
flags), so every rule here is tested without Azure. Each of the three settings is
taken from the first source that has it, in this order:

1. the flags ``--subscription``, ``--resource-group``, ``--workspace``;
2. the variables Azure ML itself sets inside a job and azure-ai-ml reads
   (``AZUREML_ARM_SUBSCRIPTION``, ``AZUREML_ARM_RESOURCEGROUP``,
   ``AZUREML_ARM_WORKSPACE_NAME``), so a job that submits jobs targets its own workspace;
3. a workspace ``config.json`` found exactly the way ``MLClient.from_config()``
   finds it (azure-ai-ml 1.35, ``_ml_client.py`` and ``_file_utils/file_utils.py``):
   for each folder in (``.azureml``, ``aml_config``, none) and each file name in
   (``config.json``, ``project.json``), walk from the current directory up through
   at most 20 parents; the first file found wins. It holds ``subscription_id``,
   ``resource_group`` and ``workspace_name``, or a ``Scope`` ARM id.

The config file is read only when the flags and the environment leave a setting
open. The az CLI's ``az configure --defaults group=... workspace=...`` are not read:
azure-ai-ml does not read them either, and a workspace picked up from a global
setting the user forgot about is worse than a clear error.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from itertools import product
from typing import Mapping

from amldist.errors import UserError

FIELDS = ("subscription_id", "resource_group", "workspace_name")
FLAG_NAMES = {"subscription_id": "--subscription", "resource_group": "--resource-group",
              "workspace_name": "--workspace"}
ENV_NAMES = {"subscription_id": "AZUREML_ARM_SUBSCRIPTION", "resource_group": "AZUREML_ARM_RESOURCEGROUP",
             "workspace_name": "AZUREML_ARM_WORKSPACE_NAME"}
CONFIG_FOLDERS = (".azureml", "aml_config", None)  # the order MLClient.from_config searches
CONFIG_NAMES = ("config.json", "project.json")
CONFIG_LEVELS = 20  # from_config's num_levels: the start folder and 20 parents

HOW_TO_CONFIGURE = (
    "pass --workspace, --resource-group and --subscription; or set AZUREML_ARM_WORKSPACE_NAME, "
    "AZUREML_ARM_RESOURCEGROUP and AZUREML_ARM_SUBSCRIPTION; or put the workspace's config.json "
    "(Azure ML studio: workspace menu > Download config file) in .azureml/ here or in a parent folder"
)


@dataclass(frozen=True)
class Workspace:
    subscription_id: str
    resource_group: str
    workspace_name: str
    sources: dict = field(default_factory=dict, compare=False)  # setting -> where it came from

    @property
    def arm_id(self) -> str:
        return (f"/subscriptions/{self.subscription_id}/resourceGroups/{self.resource_group}"
                f"/providers/Microsoft.MachineLearningServices/workspaces/{self.workspace_name}")

    def describe(self) -> str:
        """``ws (resource group rg, subscription s; from --workspace, config.json)``."""
        origins = ", ".join(dict.fromkeys(self.sources.get(f, "?") for f in FIELDS))
        return (f"{self.workspace_name} (resource group {self.resource_group}, "
                f"subscription {self.subscription_id}; from {origins})")


def find_config_file(start: str) -> str | None:
    """The workspace config file ``MLClient.from_config(path=start)`` would read, or None."""
    for folder, name in product(CONFIG_FOLDERS, CONFIG_NAMES):
        relative = os.path.join(folder, name) if folder else name
        current = os.path.abspath(start)
        for _ in range(CONFIG_LEVELS + 1):
            candidate = os.path.join(current, relative)
            if os.path.isfile(candidate):
                return candidate
            parent = os.path.realpath(os.path.join(current, os.pardir))
            if parent == current:  # the file system's root
                break
            current = parent
    return None


def read_config_file(path: str) -> dict:
    """The three settings in a workspace config file; a broken file is a UserError naming it."""
    from amldist.model.files import FileProblem, read_text

    try:
        data = json.loads(read_text(path, max_bytes=1 << 20))  # a regular file only: never a FIFO or a device
    except (FileProblem, ValueError) as exc:
        raise UserError(f"{path}: cannot read the workspace config file: {getattr(exc, 'reason', exc)}",
                        hint="fix or remove the file, or pass --workspace, --resource-group and --subscription"
                        ) from None
    if not isinstance(data, dict):
        data = {}
    scope = data.get("Scope")
    if isinstance(scope, str) and scope:
        pieces = scope.split("/")  # /subscriptions/S/resourceGroups/G/providers/P/workspaces/W
        if len(pieces) > 8:
            return {"subscription_id": pieces[2], "resource_group": pieces[4], "workspace_name": pieces[8]}
    found = {key: data[key] for key in FIELDS if isinstance(data.get(key), str) and data[key].strip()}
    if len(found) < len(FIELDS):
        missing = ", ".join(key for key in FIELDS if key not in found)
        raise UserError(
            f"{path}: this config.json is not an Azure ML workspace config (missing {missing})",
            hint="download the workspace's config.json from Azure ML studio, or pass --workspace, "
                 "--resource-group and --subscription (flags win over the file)",
        )
    return found


def resolve_workspace(
    environ: Mapping[str, str],
    cwd: str,
    *,
    subscription: str | None = None,
    resource_group: str | None = None,
    workspace: str | None = None,
) -> Workspace | None:
    """The workspace from flags, then ``environ``, then a config file searched from ``cwd``.

    Returns None when no source names any of the three settings. Raises UserError
    (exit 2) when some are set and others are missing, naming the missing ones and
    where the others came from.
    """
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    flags = {"subscription_id": subscription, "resource_group": resource_group, "workspace_name": workspace}
    for key in FIELDS:
        if flags[key] and flags[key].strip():
            values[key], sources[key] = flags[key].strip(), FLAG_NAMES[key]
        elif (environ.get(ENV_NAMES[key]) or "").strip():
            values[key], sources[key] = environ[ENV_NAMES[key]].strip(), ENV_NAMES[key]
    if len(values) < len(FIELDS):
        path = find_config_file(cwd)
        if path is not None:
            for key, value in read_config_file(path).items():
                if key not in values:
                    values[key], sources[key] = value.strip(), path
    if not values:
        return None
    missing = [key for key in FIELDS if key not in values]
    if missing:
        given = ", ".join(f"{key} from {sources[key]}" for key in FIELDS if key in sources)
        needed = " and ".join(f"{FLAG_NAMES[key]} (or {ENV_NAMES[key]})" for key in missing)
        raise UserError(f"incomplete Azure ML workspace: {given}, but no {', '.join(missing)}",
                        hint=f"add {needed}; or run the job on this machine with --local")
    return Workspace(values["subscription_id"], values["resource_group"], values["workspace_name"], sources)


def require_workspace(environ: Mapping[str, str], cwd: str, **flags) -> Workspace:
    """Like :func:`resolve_workspace`, but no workspace at all is a UserError (exit 2) too."""
    found = resolve_workspace(environ, cwd, **flags)
    if found is None:
        raise UserError(
            "no Azure ML workspace configured, and --local not given",
            hint=f"to submit to Azure ML, {HOW_TO_CONFIGURE}; to run the job on this machine instead, add --local",
        )
    return found


def workspace_or_problem(environ: Mapping[str, str], cwd: str, options) -> tuple:
    """``(workspace, None)`` for the one ``options`` name, else ``(None, why)``: a plan (what the dry run
    shows) is made without one; sending it raises ``why``."""
    try:
        return require_workspace(environ, cwd, subscription=options.subscription,
                                 resource_group=options.resource_group, workspace=options.workspace), None
    except UserError as exc:
        return None, exc

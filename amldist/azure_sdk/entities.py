"""Bridges to azure-ai-ml: the SDK entity and the REST body for a spec.

Both go through azure-ai-ml's own YAML loaders over ``spec.to_yaml()``, so a spec
means exactly what the same file means to ``az ml job create``. azure-ai-ml is
imported inside the functions only: ``import amldist.azure_sdk.entities`` stays cheap.
"""

from __future__ import annotations

import io
import json
import os
import re
from contextlib import contextmanager

from amldist.errors import INSTALL_AZURE, UserError
from amldist.azure_sdk.sdk_logging import quiet_azure_ai_ml
from amldist.rules import paths

__all__ = ["InteropError", "to_azure", "rest_body"]

_INTERNAL_FLAG = "AZURE_ML_INTERNAL_COMPONENTS_ENABLED"
JOB_KINDS = ("command_job", "pipeline_job", "sweep_job")  # what load_job reads and what has a REST body


class InteropError(UserError):
    """azure-ai-ml refused a spec; the message is azure-ai-ml's own, on one line."""


# What azure-ai-ml's own code raises on a value it did not expect, past amldist's validation (a
# mutated real spec: ``mode: 1.0e+308``): a refusal of the spec, said in one line, not an amldist bug.
SDK_FAILURES = (AttributeError, TypeError, ValueError, KeyError, IndexError)


def _origin(base_dir) -> str:
    # azure-ai-ml resolves `code:` and `file:` paths against the folder of relative_origin;
    # the file name itself is never opened.
    folder = os.path.abspath(os.fspath(base_dir)) if base_dir is not None else os.getcwd()
    return os.path.join(folder, "amldist-spec.yaml")


@contextmanager
def _internal_components():
    """Let azure-ai-ml load a legacy DistributedComponent (it hides them behind a flag).

    The flag is set only while loading and restored afterwards; azure-ai-ml's
    registration of its internal component classes stays, as it would with the flag set.
    """
    old = os.environ.get(_INTERNAL_FLAG)
    os.environ[_INTERNAL_FLAG] = "true"
    try:
        from azure.ai.ml._utils.utils import try_enable_internal_components

        try_enable_internal_components()
        yield
    finally:
        if old is None:
            os.environ.pop(_INTERNAL_FLAG, None)
        else:
            os.environ[_INTERNAL_FLAG] = old


# azure-ai-ml appends these to every schema error; they say nothing about the spec.
_BOILERPLATE = re.compile(
    r"(If you are trying to configure (a|an) \w+ that is not of type|Visit this link to refer to"
    r"|The easiest way to author a specification file)[^\"\\\\]*"
)


def _field_messages(node, path=()):
    """("a.b", message) pairs from azure-ai-ml's {field: [message | {sub-field: ...}]} errors.

    A list of mappings lists the alternatives of a union field; only the first is kept,
    which is the form azure-ai-ml tries first (a local path for ``code``, ``pytorch`` for
    ``distribution``).
    """
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _field_messages(value, path if key == "_schema" else path + (str(key),))
    elif isinstance(node, list):
        mappings = [item for item in node if isinstance(item, dict)]
        if mappings:
            yield from _field_messages(mappings[0], path)
        for item in node:
            if isinstance(item, str):
                nested = _nested_errors(item)
                if nested is not None:
                    yield from nested
                else:
                    yield ".".join(path) or "*", item


def _nested_errors(text: str):
    """azure-ai-ml's "Validation for X failed: {json}" texts, parsed; None for plain text."""
    start = text.find("{")
    if "failed:" not in text[:start] or start < 0:
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("errors"), list):  # a ValidationResult
        return [pair for err in data["errors"] for pair in _field_messages([err.get("message", "")])]
    return list(_field_messages(data))


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc)
    pairs = _nested_errors(text)
    if pairs:
        text = "; ".join(f"{field}: {message}" for field, message in dict.fromkeys(pairs))
    text = _BOILERPLATE.sub(" ", text.replace("\\n", " "))
    return re.sub(r"\s+", " ", text).strip()


def to_azure(spec, *, base_dir=None, add_runtime: bool = True):
    """The azure.ai.ml entity for ``spec``.

    CommandJob -> ``azure.ai.ml.entities.Command`` (what ``load_job`` returns for a
    command job), PipelineJob -> ``PipelineJob``, SweepJob -> ``azure.ai.ml.sweep.SweepJob``, CommandComponent -> ``CommandComponent``,
    DistributedComponent -> azure-ai-ml's internal component (loaded with
    AZURE_ML_INTERNAL_COMPONENTS_ENABLED set for the duration of the call).
    Relative ``code:``/``file:`` paths resolve against ``base_dir`` (default: the
    current directory). Raises InteropError when azure-ai-ml rejects the YAML.

    A distributed job or component (a ``distribution:``, or a legacy launcher) whose ``code:``
    is local gets the code snapshot ``amldist submit`` uploads: the folder's files plus
    ``amldist/runtime/`` (:mod:`amldist.azure_sdk.code_snapshot`), so ``from amldist.runtime import
    init_distributed`` works in its container also when the entity is a ``@dsl.pipeline`` step.
    The snapshot is written to a temporary folder that lives until this Python process ends
    (azure-ai-ml uploads it only when the job is submitted). ``add_runtime=False`` keeps the
    code as written (the Azure backend, which writes its own snapshot, passes it).
    """
    try:
        from azure.ai.ml import load_component, load_job
    except ImportError as exc:
        raise UserError(
            f"azure-ai-ml is not installed ({exc.name} is missing)",
            hint=INSTALL_AZURE,
        ) from None
    from marshmallow.exceptions import ValidationError as MarshmallowError
    from azure.ai.ml.exceptions import MlException

    quiet_azure_ai_ml()  # its experimental-class notices: only with --debug

    kind = getattr(spec, "kind", None)
    if add_runtime:
        spec = _with_runtime(spec, base_dir)
    stream = io.StringIO(spec.to_yaml())
    origin = _origin(base_dir)
    try:
        if kind in JOB_KINDS:
            return load_job(stream, relative_origin=origin)
        if kind == "command_component":
            return load_component(stream, relative_origin=origin)
        if kind == "distributed_component":
            with _internal_components():
                return load_component(stream, relative_origin=origin)
    except (MlException, MarshmallowError) as exc:
        raise InteropError(f"azure-ai-ml rejects the {kind.replace('_', ' ')}: {_one_line(exc)}") from None
    except SDK_FAILURES as exc:  # azure-ai-ml's own code failing on a value it did not expect (mode: 1.0e+308)
        raise InteropError(f"azure-ai-ml cannot read the {kind.replace('_', ' ')}: {type(exc).__name__}: "
                           f"{_one_line(exc)}", hint="a value of a type azure-ai-ml does not expect (a number where "
                           "it expects text or a mapping, ...)") from None
    raise TypeError(f"to_azure() needs an amldist spec object, not {type(spec).__name__}")


def _with_runtime(spec, base_dir):
    """``spec`` with its local code replaced by a snapshot holding the runtime shim (see to_azure); a sweep's
    trial gets it as a command job does."""
    if getattr(spec, "kind", None) == "sweep_job":
        return _sweep_with_runtime(spec, base_dir)
    distributed = getattr(spec, "distribution", None) is not None or getattr(spec, "kind", None) == "distributed_component"
    code = getattr(spec, "code", None)
    snapshot = _runtime_snapshot(code, base_dir, getattr(spec, "command", None)) if distributed else None
    if snapshot is None:
        return spec
    import dataclasses

    return dataclasses.replace(spec, code=snapshot)


def _sweep_with_runtime(spec, base_dir):
    import dataclasses

    trial = spec.trial if isinstance(spec.trial, dict) else {}
    snapshot = (_runtime_snapshot(trial.get("code"), base_dir, trial.get("command"))
                if trial.get("distribution") is not None else None)
    return spec if snapshot is None else dataclasses.replace(spec, trial={**trial, "code": snapshot})


def _runtime_snapshot(code, base_dir, command) -> str | None:
    """A temporary copy of the local ``code`` plus the runtime shim; None when none is made."""
    if not paths.is_local(code):
        return None
    import atexit
    import shutil
    import tempfile

    from amldist.azure_sdk.code_snapshot import plan_snapshot, write_snapshot

    planned = plan_snapshot(code, os.fspath(base_dir) if base_dir is not None else os.getcwd(), command)
    if not planned.shim_added:
        return None  # the code has its own amldist, or is missing (azure-ai-ml says so in its words)
    folder = tempfile.mkdtemp(prefix="amldist-snapshot-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return write_snapshot(planned, folder).path


def rest_body(spec, *, base_dir=None) -> dict:
    """The JSON body azure-ai-ml would PUT to create this job (no credentials, no network).

    Built as ``MLClient.jobs.create_or_update`` builds it: the entity from
    ``to_azure``, azure-ai-ml's ``to_rest_job_object`` (which fills a generated
    name, display name and experiment name when the spec has none) and its JSON
    encoder. Two steps of a real submission are not done, because they need the
    workspace: ``codeId`` and ``environmentId`` still hold the local path and the
    ``azureml:`` reference (the SDK uploads code and resolves both to ARM ids; an
    inline environment shows as the ``azureml:CliV2AnonymousEnvironment:<hash>`` it
    would register), and no git properties are added. Components are not jobs: turn one into a
    job first (``amldist.component_to_job``).
    """
    if getattr(spec, "kind", None) not in JOB_KINDS:
        raise UserError(
            f"only a job has a REST body, not a {getattr(spec, 'kind', type(spec).__name__)}",
            hint="turn a component into a job first (amldist.component_to_job)",
        )
    entity = to_azure(spec, base_dir=base_dir, add_runtime=False)  # what is sent, with no snapshot written
    from azure.ai.ml.entities._job.to_rest_functions import to_rest_job_object
    from azure.ai.ml.exceptions import MlException

    try:
        rest = to_rest_job_object(entity)
    except (MlException, *SDK_FAILURES) as exc:  # e.g. "${{inputs.x}} has changed to ${{parent.inputs.x}}"
        raise InteropError(f"azure-ai-ml cannot build the request: {_one_line(exc)}") from None
    return _to_json(rest)


def _asset_reference(value):
    """An asset the SDK would register on submit (an inline environment) -> its reference.

    azure-ai-ml names an inline environment ``CliV2AnonymousEnvironment`` with a hash of its
    content as the version, registers it, and sends its ARM id; the dry run shows the
    ``azureml:name:version`` it will register.
    """
    from azure.ai.ml.entities import Asset

    if isinstance(value, Asset) and value.name and value.version:
        return f"azureml:{value.name}:{value.version}"
    return None


def _to_json(rest) -> dict:
    """Serialize an azure-ai-ml REST model the way its HTTP client does.

    azure-ai-ml >= 1.35.2 (the pinned minimum) builds typespec models with no msrest
    ``serialize()``; their JSON encoder is the one the client uses.
    """
    from azure.ai.ml._restclient.arm_ml_service._utils.model_base import SdkJSONEncoder

    class Encoder(SdkJSONEncoder):
        def default(self, o):
            reference = _asset_reference(o)
            return reference if reference is not None else super().default(o)

    return json.loads(json.dumps(rest, cls=Encoder, exclude_readonly=True))


def job_name(chosen: str | None, written: str | None) -> str:
    """The name a job is sent under: ``--name`` (checked), else the spec's, else the one azure-ai-ml would
    generate while sending (generated here, so that the dry run names the job it will create)."""
    from amldist.rules.names import check_job_name

    if chosen:
        return check_job_name(chosen)  # one folder name, one printable word (rules/names)
    if written:
        return written
    from azure.ai.ml.entities._job.job_name_generator import generate_job_name

    return generate_job_name()

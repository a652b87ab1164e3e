"""The schemas next to azure-ai-ml 1.35.2 itself (offline: load + client-side validation only).

Three claims are checked against the real SDK, on the same documents the schemas see:
- what the schemas accept, the SDK accepts too (no false alarms on case-insensitive types etc.);
- what both refuse (misspelled keys, torch.distributed in v2, tensorflow with process counts);
- the strictness cases are refused by the schemas although the SDK loads them (why amldist exists).
"""

from __future__ import annotations

import logging
import textwrap

import pytest

from tests.validate.schemas.support import errors, parse

ml = pytest.importorskip("azure.ai.ml", reason="azure-ai-ml is not installed (pip install '.[azure]')")

# marshmallow deprecation notices from inside the SDK are not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

JOB = """\
command: python train.py
environment: azureml:AzureML-acpt-pytorch-2.8-cuda12.6@latest
compute: azureml:gpu-cluster
"""


def sdk_accepts(tmp_path, text: str) -> bool:
    path = tmp_path / "job.yml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    logging.disable(logging.WARNING)  # the SDK logs "experimental" notices for ray
    try:
        job = ml.load_job(path)
        return job._validate().passed
    except Exception:  # the SDK raises several error types for a refused document
        return False
    finally:
        logging.disable(logging.NOTSET)


ACCEPTED_BY_BOTH = [
    "distribution: {type: Pytorch, process_count_per_instance: 4}\n",
    "distribution: {type: TensorFlow, worker_count: 2, parameter_server_count: 0}\n",
    "distribution: {type: MPI, process_count_per_instance: 1}\n",
    "distribution: {type: ray, port: 6379}\n",
    "resources: {instance_count: 2, shm_size: 16g, docker_args: [--ipc=host]}\n",
    "limits: {timeout: 60}\nqueue_settings: {job_tier: Spot}\nidentity: {type: UserIdentity}\n",
    "inputs: {a: 1, b: {type: uri_folder, path: azureml:data:1, mode: RO_MOUNT}, c: {value: x}}\n",
]
REFUSED_BY_BOTH = [
    "distribution: {type: torch.distributed, process_count_per_instance: 4}\n",
    "distribution: {type: tensorflow, process_count_per_instance: 2}\n",
    "distribution: {type: pytorch, worker_count: 2}\n",
    "experimnt_name: typo\n",
    "resources: {instance_cont: 2}\n",
    "inputs: {a: {type: integer, default: 3}}\n",
    "identity: {type: user_identity, client_id: x}\n",
]
STRICTER_THAN_SDK = [
    "distribution: {type: pytorch, process_count_per_instance: -4}\n",
    "distribution: {type: pytorch, process_count_per_instance: 4.5}\n",
    "distribution: {type: tensorflow, worker_count: -1}\n",
    "resources: {instance_count: 0}\n",
    "resources: {shm_size: lots}\n",
    "limits: {timeout: -5}\n",
]


@pytest.mark.parametrize("block", ACCEPTED_BY_BOTH)
def test_schema_accepts_only_what_the_sdk_accepts(tmp_path, block):
    assert sdk_accepts(tmp_path, JOB + block)
    assert not errors(parse(JOB + block))


@pytest.mark.parametrize("block", REFUSED_BY_BOTH)
def test_both_refuse(tmp_path, block):
    assert not sdk_accepts(tmp_path, JOB + block)
    assert errors(parse(JOB + block))


@pytest.mark.parametrize("block", STRICTER_THAN_SDK)
def test_schema_is_stricter_where_the_sdk_lets_mistakes_through(tmp_path, block):
    assert sdk_accepts(tmp_path, JOB + block), "azure-ai-ml now refuses this too: move it to REFUSED_BY_BOTH"
    assert errors(parse(JOB + block))

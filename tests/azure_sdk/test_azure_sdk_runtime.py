"""A builder-made distributed job turned into an azure-ai-ml entity carries the runtime shim in its code,
so it works as a ``@dsl.pipeline`` step (the same snapshot ``amldist submit`` uploads)."""

from __future__ import annotations

import os

import pytest

import amldist
from amldist import to_azure

ENV = "azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest"


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("from amldist.runtime import init_distributed\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_distributed_job_entity_has_the_runtime_and_the_users_files(project):
    job = amldist.pytorch_job(command="python train.py", code="./src", environment=ENV, process_count_per_instance=1)
    entity = to_azure(job)
    assert os.path.isfile(os.path.join(entity.code, "train.py"))
    assert os.path.isfile(os.path.join(entity.code, "amldist", "runtime", "__init__.py"))
    assert sorted(os.listdir(project / "src")) == ["train.py"]  # the user's folder is not changed


def test_inside_dsl_pipeline_the_step_keeps_that_code(project):
    from azure.ai.ml import dsl

    entity = amldist.mpi_job(command="python train.py", code="./src", environment=ENV,
                             process_count_per_instance=1)
    entity = to_azure(entity)

    @dsl.pipeline(compute="cpu-cluster")
    def pipeline():
        entity()

    (step,) = pipeline().jobs.values()
    assert os.path.isfile(os.path.join(step.code, "amldist", "runtime", "__init__.py"))


def test_a_job_without_distribution_or_with_remote_code_is_left_as_written(project):
    from amldist.azure_sdk.entities import to_azure  # the adapter itself (the name above is amldist's)
    from amldist.model import loads

    plain = loads(f"type: command\ncommand: python train.py\ncode: ./src\nenvironment: {ENV}\n")
    assert os.path.samefile(to_azure(plain).code, project / "src")
    remote = amldist.pytorch_job(command="python train.py", code="azureml:my-code:1", environment=ENV,
                                 process_count_per_instance=1)
    assert to_azure(remote).code == to_azure(remote, add_runtime=False).code

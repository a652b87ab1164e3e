"""A two-step pipeline written with azure-ai-ml's Python API and ``@dsl.pipeline``.

Step 1 (``command()``, built in Python) writes a settings file; step 2 is the PyTorch DDP
component of ``train_component.yml`` on 2 nodes x 2 processes. Building and validating the
pipeline needs no workspace and no network:

    python samples/pipeline/pipeline.py            # build, validate, print the pipeline YAML
    python samples/pipeline/pipeline.py --submit   # also submit it (needs a workspace: config.json)
"""

import argparse
import os
import sys

from azure.ai.ml import Input, Output, command, dsl, load_component

HERE = os.path.dirname(os.path.abspath(__file__))
COMPUTE = "cpu-cluster"

prepare_settings = command(
    name="prepare_settings",
    display_name="Write training settings",
    command="mkdir -p ${{outputs.settings}} && echo epochs=${{inputs.epochs}} > ${{outputs.settings}}/settings.txt",
    inputs={"epochs": Input(type="integer", default=5)},
    outputs={"settings": Output(type="uri_folder")},
    environment="azureml:AzureML-sklearn-1.5@latest",
)
train = load_component(source=os.path.join(HERE, "train_component.yml"))


@dsl.pipeline(name="amldist_sample_pipeline", description="settings, then DDP training", default_compute=COMPUTE)
def sample_pipeline(epochs: int = 5, learning_rate: float = 0.05):
    settings = prepare_settings(epochs=epochs)
    trained = train(epochs=epochs, learning_rate=learning_rate)
    trained.resources.instance_count = 2  # 2 nodes ...
    trained.distribution.process_count_per_instance = 2  # ... x 2 processes
    trained.set_limits(timeout=900)
    return {"settings": settings.outputs.settings, "model": trained.outputs.model}


def build():
    """The pipeline job, built and checked offline. Raises ValueError listing the problems."""
    job = sample_pipeline(epochs=3)
    job.experiment_name = "amldist-samples"
    result = job._validate()  # azure-ai-ml's client-side validation: no workspace needed
    if not result.passed:
        raise ValueError(f"the pipeline does not validate: {result.error_messages}")
    return job


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submit", action="store_true", help="submit to the workspace of ./config.json")
    args = parser.parse_args(argv)
    job = build()
    print(job._to_yaml() if hasattr(job, "_to_yaml") else str(job))
    if args.submit:
        from azure.ai.ml import MLClient
        from azure.identity import DefaultAzureCredential

        submitted = MLClient.from_config(DefaultAzureCredential()).jobs.create_or_update(job)
        print(f"submitted {submitted.name}: {submitted.studio_url}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The same pipeline built in Python: amldist's builder for the training step, ``@dsl.pipeline``.

    python samples/pipeline/pipeline.py            # run it on this machine (amldist.run_local)
    python samples/pipeline/pipeline.py --dry-run  # what that run would start
    python samples/pipeline/pipeline.py --submit   # submit it (needs a workspace: config.json)
"""

import argparse
import os
import sys

from azure.ai.ml import Output, command, dsl

import amldist

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src")
ENV = "azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest"

# Each step's name in the pipeline is the name its node is assigned to below (prep, train, evaluate), as in
# pipeline.yml; the builders' own objects are named apart so that those names stay free.
prep_command = command(command="python prep.py ${{outputs.data}}", code=SRC, environment=ENV,
               outputs={"data": Output(type="uri_folder")})
train_job = amldist.to_azure(amldist.pytorch_job(
    command="python train.py --data ${{inputs.data}} --model ${{outputs.model}}", code=SRC, environment=ENV,
    inputs={"data": {"type": "uri_folder", "path": SRC}}, outputs={"model": {"type": "uri_folder"}},
    instance_count=2, process_count_per_instance=2,
))
evaluate_command = command(command="python evaluate.py ${{inputs.model}}", code=SRC, environment=ENV,
                           inputs={"model": {"type": "uri_folder"}})


@dsl.pipeline(name="amldist_sample_pipeline", default_compute="cpu-cluster")
def sample_pipeline():
    prep = prep_command()
    train = train_job(data=prep.outputs.data)
    evaluate = evaluate_command(model=train.outputs.model)  # noqa: F841 (the assignment names the step)
    return {"model": train.outputs.model}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--submit", action="store_true", help="submit to the workspace of ./config.json")
    args = parser.parse_args(argv)
    job = sample_pipeline()
    if not args.submit:
        result = amldist.run_local(job, dry_run=args.dry_run)  # the plan (dry run) or the run's JobRecord
        return 0 if args.dry_run or result.status == "Completed" else 1
    from azure.ai.ml import MLClient
    from azure.identity import DefaultAzureCredential

    submitted = MLClient.from_config(DefaultAzureCredential()).jobs.create_or_update(job)
    print(f"submitted {submitted.name}: {submitted.studio_url}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

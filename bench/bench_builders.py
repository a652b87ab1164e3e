"""Build + check one distributed job: amldist's builder vs azure-ai-ml's command() + _validate().

Both sides build the same 2-node PyTorch job on Standard_ND96isr_H100_v5 and check it (amldist:
its own checks and ``amldist.validate``; azure-ai-ml: its marshmallow schema validation).
Import time is reported apart from the per-job time. Run: ``python bench/bench_builders.py``.
"""

import subprocess
import sys
import time

N = 200
IMPORT = {
    "amldist": "import amldist, amldist.authoring, amldist.validate",
    "azure-ai-ml": "import azure.ai.ml",
}


def import_seconds(code: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", f"import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    return float(out.stdout.strip())


def per_job(fn) -> float:
    fn()  # warm caches (schemas compiled once in both libraries)
    start = time.perf_counter()
    for _ in range(N):
        fn()
    return (time.perf_counter() - start) / N


def amldist_job():
    import amldist

    return amldist.pytorch_job(
        command="python train.py --epochs ${{inputs.epochs}}", environment="azureml:acpt@latest",
        inputs={"epochs": 3}, instance_type="Standard_ND96isr_H100_v5", instance_count=2, shm_size="16g",
    )


def azure_job():
    from amldist.azure_sdk.sdk_logging import quiet_azure_ai_ml

    quiet_azure_ai_ml()  # its "experimental class" notices would flood the bench's output, as amldist's CLI hides them
    from azure.ai.ml import command
    from azure.ai.ml.entities import JobResourceConfiguration

    quiet_azure_ai_ml()  # again: its import set its own logger's level

    job = command(
        command="python train.py --epochs ${{inputs.epochs}}", environment="azureml:acpt@latest",
        inputs={"epochs": 3}, distribution={"type": "pytorch", "process_count_per_instance": 8},
        resources=JobResourceConfiguration(instance_type="Standard_ND96isr_H100_v5", instance_count=2,
                                           shm_size="16g"),
    )
    assert job._validate().passed
    return job


def main() -> None:
    imports = {name: import_seconds(code) for name, code in IMPORT.items()}
    jobs = {"amldist": per_job(amldist_job), "azure-ai-ml": per_job(azure_job)}
    for name in IMPORT:
        print(f"{name:12s} import {imports[name] * 1000:8.1f} ms   build+check {jobs[name] * 1000:7.2f} ms/job")
    print(f"ratio azure-ai-ml / amldist: import {imports['azure-ai-ml'] / imports['amldist']:.1f}x, "
          f"build+check {jobs['azure-ai-ml'] / jobs['amldist']:.1f}x")


if __name__ == "__main__":
    main()

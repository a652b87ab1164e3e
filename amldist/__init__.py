"""amldist: distributed training jobs for Azure Machine Learning.

The top-level import stays light (the CLI's ``--version`` and ``validate`` paths
depend on it): builders and the spec model are loaded on first attribute access.
"""

__version__ = "0.1.0"

# name -> module that defines it; resolved lazily by __getattr__ below.
_LAZY = {
    "pytorch_job": "amldist.authoring",
    "mpi_job": "amldist.authoring",
    "tensorflow_job": "amldist.authoring",
    "distributed_component": "amldist.authoring",
    "convert_legacy": "amldist.authoring.convert",
    "component_to_job": "amldist.authoring.component_job",
    "load": "amldist.model",
    "loads": "amldist.model",
    "to_azure": "amldist.azure_sdk",
    "rest_body": "amldist.azure_sdk",
    "validate_paths": "amldist.validate",
    "vm_sizes": "amldist.rules.vm_sizes",
    "run_local": "amldist.backends.submit",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name):
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'amldist' has no attribute {name!r}")
    import importlib

    module = importlib.import_module(module_name)
    value = module if module_name.endswith("." + name) else getattr(module, name)
    globals()[name] = value
    return value

"""The long tier's table: tests that repeat, end to end, a behaviour the default run already covers once, each
with the default-tier test that covers it (``pytest --long`` runs them; tests/conftest.py skips them otherwise).

Why a table beside the tests and not only ``@pytest.mark.long`` on each: the default tier is sized as a whole
(the README's suite time), and this is where it is sized; a parametrized test keeps one case in the default run
and sends the others here by their ids. tests/test_long_tier.py checks that every entry names a test that exists,
so a renamed test cannot slip back into the default tier unseen.

A key is ``path::test`` (every case of it) or ``path::test[id]`` (that case).
"""

from __future__ import annotations

LONG: dict[str, str] = {
    # --- e2e: one run of each launcher and behaviour stays in the default tier ---------------------------------
    "tests/e2e/test_fault_matrix.py::test_the_culprit_is_named_on_the_first_screen_in_job_show_and_by_diagnose[skip-1-0]":
    "its [raise-1-0] and [mismatch-3-0] cases, and tests/diagnosis/test_diagnose_local.py (one run per signature)",
    "tests/e2e/test_fault_matrix.py::test_the_culprit_is_named_on_the_first_screen_in_job_show_and_by_diagnose[kill-1-0]":
    "its [raise-1-0] case and tests/diagnosis/test_diagnose_local.py::test_a_rank_killed_by_sigkill_is_named_with_"
    "the_oom_hint",
    "tests/e2e/test_fault_matrix.py::test_the_culprit_is_named_on_the_first_screen_in_job_show_and_by_diagnose[hang-2-0]":
    "its [raise-1-0] case and tests/runtime/test_runtime_check_watchdog.py (a hanging rank named with its stack)",
    "tests/e2e/test_fault_matrix.py::test_the_culprit_is_named_on_the_first_screen_in_job_show_and_by_diagnose[exit0-2-0]":
    "its [raise-1-0] case and tests/diagnosis/test_diagnose_local.py::test_a_rank_leaving_while_the_others_wait_in_a_"
    "collective",
    "tests/e2e/test_frameworks.py::test_lightning_forms_the_launchers_world":
    "tests/runtime/test_runtime_frameworks.py::test_lightning_environment_is_the_launchers_world (the same "
    "environment, without training)",
    "tests/e2e/test_frameworks.py::test_accelerate_uses_the_group_the_runtime_formed":
    "tests/e2e/test_submit_cli.py::test_pytorch_ddp_sample_trains_on_2_nodes_x_2_processes (the group the runtime "
    "forms) and tests/runtime/test_runtime_frameworks.py",
    "tests/e2e/test_component_trainers.py::test_pytorch_trainer_with_two_ranks_under_azure_ml_pytorch_variables":
    "tests/e2e/test_submit_cli.py::test_pytorch_ddp_sample_trains_on_2_nodes_x_2_processes (DDP under Azure ML's "
    "pytorch variables)",
    "tests/e2e/test_component_trainers.py::test_mpi_trainer_under_mpirun":
    "tests/e2e/test_submit_cli.py::test_mpi_sample and tests/e2e/test_local_mpi_world.py (ranks under mpirun)",
    "tests/e2e/test_component_trainers.py::test_tensorflow_trainer_torch_fallback_under_tf_config":
    "tests/e2e/test_submit_cli.py::test_tensorflow_sample (TF_CONFIG) and tests/runtime/test_runtime_detect.py",
    "tests/e2e/test_local_mpi_world.py::test_the_mpi_trainer_component_trains_on_two_nodes_of_two":
    "tests/e2e/test_local_mpi_world.py::test_two_nodes_of_two_are_one_mpi_world_with_per_node_local_ranks",
    "tests/e2e/test_submit_cli.py::test_mpi_sample[extra1-4-True]":
    "its [extra0-2-True] case and tests/e2e/test_local_mpi_world.py::test_two_nodes_of_two_are_one_mpi_world_with_"
    "per_node_local_ranks (2 x 2 under mpirun)",
    "tests/e2e/test_local_faithful.py::test_the_readmes_pipeline_examples_run_as_written[amldist submit samples/pipeline/"
    "pipeline.yml --local --set jobs.train.resources.instance_count=1 --input steps=80]":
    "tests/e2e/test_pipeline_local.py::test_three_steps_run_in_order_and_outputs_flow_between_them and this "
    "sample's dry runs here",
    "tests/e2e/test_local_faithful.py::test_the_readmes_local_examples_run_as_written[amldist submit samples/pytorch_ddp/"
    "job.yml --local --set resources.instance_count=1 --input epochs=1 --stream]":
    "tests/e2e/test_submit_cli.py::test_pytorch_ddp_sample_trains_on_2_nodes_x_2_processes, tests/e2e/"
    "test_submit_cli.py::test_overrides_reach_the_ranks_and_the_file_is_not_modified and tests/e2e/test_local_runs.py"
    "::test_stream_copies_every_ranks_output_prefixed_with_its_rank",
    "tests/e2e/test_sweep_local.py::test_a_distributed_sweep_runs_each_trial_2_by_2_and_stops_the_worse_one":
    "tests/e2e/test_sweep_local.py::test_the_public_hello_sweep_runs_here_with_a_table_of_trials and "
    "test_the_sample_plans_two_trials_of_2_by_2_with_its_seed",
    "tests/e2e/test_job_cancel.py::test_cancel_from_another_terminal_leaves_no_process[mpi]":
    "its [pytorch] case and tests/e2e/test_local_signals.py::test_a_signal_to_amldist_stops_every_child[1-mpi-2]",
    # --- attack: each hostile shape once by default, every variant in the long tier ------------------------------
    "tests/attack/test_escapes_and_names.py::test_job_names_with_newlines_or_escapes_are_refused_with_one_escaped_line":
    "its [abc\\n] case (every name goes through the same check: tests/rules/test_names.py)",
    "tests/attack/test_escapes_and_names.py::test_job_verbs_print_hostile_run_folder_names_escaped[two\\nlines]":
    "its [evil\\x1b[31mred] case",
    "tests/attack/test_escapes_and_names.py::test_an_io_name_that_is_not_a_name_is_refused_everywhere"
    "[outputs-../../../../escaped]": "its [outputs-../escaped] case",
    "tests/attack/test_escapes_and_names.py::test_an_io_name_that_is_not_a_name_is_refused_everywhere"
    "[inputs-../escaped]": "its [inputs-../../../../escaped] case",
    "tests/attack/test_bounds_and_survival.py::test_a_pathological_ignore_pattern_does_not_hang_validate_nor_the_code_"
    "copy[.amlignore]": "its [.gitignore] case (one matcher reads both files)",
    # --- Slurm: the real cluster runs one job per behaviour by default -----------------------------------------------
    "tests/backends/slurm/test_slurm_hostile.py::test_a_hostile_run_folder_is_one_line_or_a_correct_answer":
    "tests/engine/test_hostile_run_folders.py (the engine's run-folder reading every backend goes through) and "
    "test_slurm_hostile.py::test_cancel_stops_only_the_runs_own_job_and_writes_through_no_link on the cluster",
    "tests/backends/slurm/test_slurm_hostile.py::test_a_pipeline_stopped_while_submitting_leaves_no_job_that_no_verb_can_"
    "see[15]": "its [2] case",
    "tests/backends/slurm/test_slurm_hostile.py::test_a_pipeline_stopped_while_submitting_leaves_no_job_that_no_verb_can_"
    "see[9]": "its [2] case",
    "tests/backends/slurm/test_slurm_cluster.py::test_the_three_step_pipeline_runs_with_dependencies_and_streams_to_the_end":
    "test_slurm_cluster.py::test_a_failing_step_stops_the_steps_that_read_from_it (a pipeline with dependencies on "
    "the cluster) and tests/e2e/test_pipeline_local.py::test_three_steps_run_in_order_and_outputs_flow_between_them",
    "tests/backends/slurm/test_slurm_ray.py::test_the_ray_sample_forms_a_cluster_across_the_two_slurm_nodes_and_leaves_no_"
    "process": "tests/e2e/test_local_ray.py (the same ray_node runtime) and test_slurm_plan.py::test_ray_runs_one_ray_"
    "node_per_slurm_node_with_the_command_once_on_the_head",
}


def covered_by(nodeid: str) -> str | None:
    """The default-tier test that covers ``nodeid`` when the table sends it to the long tier, else None."""
    if nodeid in LONG:
        return LONG[nodeid]
    base = nodeid.split("[", 1)[0]
    return LONG.get(base)

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
    # --- the runtime: one world per launcher, one checkpoint and one watchdog case ---------------------------------
    "tests/runtime/test_runtime_teardown.py::test_ddp_worlds_end_without_abort_under_load":
        "every world test in tests/runtime/test_runtime_worlds.py (each ends through the same teardown), without the "
        "busy CPUs",
    "tests/runtime/test_runtime_worlds.py::test_four_ranks_with_azureml_pytorch_variables":
        "tests/e2e/test_submit_cli.py::test_pytorch_ddp_sample_trains_on_2_nodes_x_2_processes (4 ranks under the "
        "Azure ML pytorch variables the local backend sets) and tests/runtime/test_runtime_detect.py",
    "tests/runtime/test_runtime_worlds.py::test_three_ranks_under_mpirun_with_azureml_one_node_variables":
        "tests/e2e/test_submit_cli.py::test_mpi_sample and tests/e2e/test_local_mpi_world.py (ranks under mpirun "
        "with the variables the local backend sets) and tests/runtime/test_runtime_detect.py",
    "tests/runtime/test_runtime_checkpoint.py::test_sigterm_to_one_rank_saves_the_same_step_on_all_and_a_restart_"
    "resumes_there[1]": "its [0] case (rank 0 saves) and test_the_latest_complete_checkpoint_is_found_and_partial_ones_"
        "never_are",
    "tests/runtime/test_runtime_check_watchdog.py::test_check_inside_a_2x2_local_job_prints_world_and_bandwidth":
        "test_bus_bandwidth_is_nccl_tests_definition, test_on_cpu_there_is_nothing_to_compare_against and "
        "test_a_world_of_one_has_no_bandwidth_to_measure (the check's arithmetic and verdicts)",
    "tests/e2e/test_fault_matrix.py::test_the_culprit_is_named_on_the_first_screen_in_job_show_and_by_diagnose[raise-1-0]":
        "its [mismatch-3-0] case and tests/diagnosis/test_diagnose_local.py::test_a_rank_raising_on_rank_3_of_4_is_"
        "named_with_its_exception_and_frame",
    "tests/attack/test_hostile_state.py::test_wrong_shapes_are_one_line[2]":
        "its [0] and [1] cases through every verb, and tests/backends/local/test_pipeline_jobs.py::test_a_hostile_"
        "status_json_is_one_line_and_the_others_are_listed (the same typed reader, every shape)",
    "tests/attack/test_hostile_state.py::test_wrong_shapes_are_one_line[3]":
        "its [0] and [1] cases through every verb, and tests/backends/local/test_pipeline_jobs.py::test_a_hostile_"
        "status_json_is_one_line_and_the_others_are_listed (the same typed reader, every shape)",
    "tests/attack/test_hostile_state.py::test_wrong_shapes_are_one_line[4]":
        "its [0] and [1] cases through every verb, and tests/backends/local/test_pipeline_jobs.py::test_a_hostile_"
        "status_json_is_one_line_and_the_others_are_listed (the same typed reader, every shape)",
    "tests/attack/test_hostile_state.py::test_wrong_shapes_are_one_line[5]":
        "its [0] and [1] cases through every verb, and tests/backends/local/test_pipeline_jobs.py::test_a_hostile_"
        "status_json_is_one_line_and_the_others_are_listed (the same typed reader, every shape)",
    "tests/attack/test_hostile_state.py::test_wrong_shapes_are_one_line[6]":
        "its [0] and [1] cases through every verb, and tests/backends/local/test_pipeline_jobs.py::test_a_hostile_"
        "status_json_is_one_line_and_the_others_are_listed (the same typed reader, every shape)",
    "tests/attack/test_hostile_state.py::test_wrong_shapes_are_one_line[7]":
        "its [0] and [1] cases through every verb, and tests/backends/local/test_pipeline_jobs.py::test_a_hostile_"
        "status_json_is_one_line_and_the_others_are_listed (the same typed reader, every shape)",
    # --- diagnosis: a real failing 4-rank run per kind of evidence; each signature's lines are checked in-process ------
    "tests/diagnosis/test_diagnose_local.py::test_a_rank_killed_by_sigkill_is_named_with_the_oom_hint":
        "tests/diagnosis/test_signatures.py and test_signature_lines.py (the same signature from the same lines, no "
        "4-rank run) and, end to end, tests/e2e/test_fault_matrix.py::test_the_culprit_is_named_on_the_first_screen_"
        "in_job_show_and_by_diagnose[mismatch-3-0]",
    "tests/diagnosis/test_diagnose_local.py::test_a_bus_error_points_at_shm_size":
        "tests/diagnosis/test_signatures.py and test_signature_lines.py (the same signature from the same lines, no "
        "4-rank run) and, end to end, tests/e2e/test_fault_matrix.py::test_the_culprit_is_named_on_the_first_screen_"
        "in_job_show_and_by_diagnose[mismatch-3-0]",
    "tests/diagnosis/test_diagnose_local.py::test_a_rank_leaving_while_the_others_wait_in_a_collective":
        "tests/diagnosis/test_signatures.py and test_signature_lines.py (the same signature from the same lines, no "
        "4-rank run) and, end to end, tests/e2e/test_fault_matrix.py::test_the_culprit_is_named_on_the_first_screen_"
        "in_job_show_and_by_diagnose[mismatch-3-0]",
    "tests/diagnosis/test_diagnose_local.py::test_a_port_conflict_names_rank_0_and_master_port":
        "tests/diagnosis/test_signatures.py and test_signature_lines.py (the same signature from the same lines, no "
        "4-rank run) and, end to end, tests/e2e/test_fault_matrix.py::test_the_culprit_is_named_on_the_first_screen_"
        "in_job_show_and_by_diagnose[mismatch-3-0]",
    "tests/diagnosis/test_diagnose_local.py::test_submit_ends_a_failed_local_run_with_its_diagnosis":
        "tests/e2e/test_fault_matrix.py::test_the_culprit_is_named_on_the_first_screen_in_job_show_and_by_diagnose"
        "[mismatch-3-0] (submit's error line is the diagnosis's)",
    "tests/runtime/test_runtime_worlds.py::test_unmodified_script_runs_under_mpirun_through_exec_mode":
        "tests/runtime/test_runtime_cli.py::test_exec_mode_runs_the_command_with_mapped_variables (exec mode maps "
        "Open MPI's variables for a script that does not import amldist) and tests/e2e/test_submit_cli.py::"
        "test_mpi_sample (a world under the real mpirun)",
    "tests/runtime/test_runtime_worlds.py::test_slurm_shaped_world_trains_ddp_to_identical_params":
        "tests/runtime/test_runtime_detect.py and test_runtime_slurm_lists.py (Slurm's variables read) and tests/backends/"
        "slurm/test_slurm_cluster.py::test_an_mpi_job_is_one_world_of_four_across_the_nodes (a real world on Slurm)",
    # --- second cut, for the 5-minute default tier (CI runs this tier too, after the default one) -------------------
    "tests/diagnosis/test_diagnose_local.py::test_a_collective_timeout_names_the_rank_that_never_joined":
        "tests/diagnosis/test_signatures.py and test_signature_lines.py (never-joined from the same lines, every "
        "rank's collectives compared) and, end to end, tests/e2e/test_fault_matrix.py::test_the_culprit_is_named_on_"
        "the_first_screen_in_job_show_and_by_diagnose[mismatch-3-0] (the same comparison names the rank that broke the "
        "collective); four torch ranks that wait out a collective timeout",
    "tests/runtime/test_runtime_worlds.py::test_two_ranks_under_torchrun":
        "tests/runtime/test_runtime_detect.py::test_torchrun_variables and the tests beside it (torchrun's variables "
        "read, its agent store kept: test_runtime_init.py::test_torchrun_world_keeps_its_agent_store_setting), and "
        "tests/e2e/test_submit_cli.py::test_pytorch_ddp_sample_trains_on_2_nodes_x_2_processes (a real world the "
        "runtime forms); three processes that each import torch",
    "tests/runtime/test_runtime_frameworks.py::test_lightning_environment_is_the_launchers_world":
        "tests/runtime/test_runtime_detect.py (the launcher's world the Lightning environment reports) and "
        "test_import_stays_standard_library_only; importing Lightning takes 4.5 CPU-seconds more than torch",
    "tests/runtime/test_runtime_frameworks.py::test_a_trainer_that_disagrees_with_the_launcher_is_refused_by_name":
        "tests/runtime/test_runtime_detect.py (the world the environment checks a Trainer's settings against); "
        "importing Lightning takes 4.5 CPU-seconds more than torch",
    "tests/test_real_specs.py::test_every_job_azure_ai_ml_accepts_gets_the_same_body_from_amldist[2]":
        "its [0] and [1] cases: every fourth spec of the corpus each, interleaved, so half of the corpus and every "
        "kind of job in it",
    "tests/test_real_specs.py::test_every_job_azure_ai_ml_accepts_gets_the_same_body_from_amldist[3]":
        "its [0] and [1] cases: every fourth spec of the corpus each, interleaved, so half of the corpus and every "
        "kind of job in it",
    "tests/e2e/test_local_ray.py::test_the_ray_sample_forms_a_two_node_cluster_and_leaves_no_process":
        "tests/backends/local/test_ray_plan.py (one Ray node per emulated node, the command on the head only, the "
        "distribution's fields); the real cluster's start and stop run in the long tier (Ray's own start takes most "
        "of a minute here)",
    "tests/diagnosis/test_diagnose_local.py::test_a_rank_raising_on_rank_3_of_4_is_named_with_its_exception_and_frame":
        "tests/e2e/test_fault_drill.py::test_a_failure_of_the_code_is_never_retried (a raising rank diagnosed "
        "python-exception) and tests/diagnosis/test_signature_lines.py",
    "tests/runtime/test_runtime_check_watchdog.py::test_a_main_thread_holding_the_gil_still_gets_its_stack_written":
        "test_a_rank_hanging_outside_any_collective_is_named_with_every_ranks_stack (the same watchdog writing every "
        "rank's stack)",
    "tests/cli/test_cli_habits.py::test_azure_ai_mls_logger_follows_the_flags_after_its_import":
        "test_azure_ai_mls_notices_print_only_with_debug (azure-ai-ml's output follows amldist's flags)",
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
    "tests/backends/slurm/test_slurm_cluster.py::test_the_pytorch_sample_trains_on_two_nodes_and_shows_completed":
    "test_slurm_cluster.py::test_a_held_out_jobs_ranks_see_the_same_variables_as_locally (2 x 2's variables on this "
    "cluster, as the local backend sets them), test_an_mpi_job_is_one_world_of_four_across_the_nodes (a real world "
    "across the cluster's nodes) and the sample's DDP training, locally, in tests/e2e/test_submit_cli.py::test_pytorch_"
    "ddp_sample_trains_on_2_nodes_x_2_processes; two torch ranks on the cluster, then the job's records read",
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

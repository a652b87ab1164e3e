"""Attribution across ranks (amldist.diagnosis.collectives) on evidence in the forms the tools write.

The Flight Recorder dumps here are in the JSON form ``_dump_fr_trace_json`` writes (torch 2.13, gloo), the
NCCL lines in ProcessGroupNCCL's formats (its watchdog timeout, its exception notice, its dump notice). The
end-to-end check, real ranks dumping for real, is tests/e2e/test_fault_matrix.py.
"""

from __future__ import annotations

import json
import os

import pytest

from amldist.diagnosis import collectives
from amldist.diagnosis.analysis import diagnose
from amldist.diagnosis.signatures import Context, RankLog


def entry(seq: int, op: str = "all_reduce", sizes=((4,),), group: str = "default_pg") -> dict:
    return {"collective_seq_id": seq, "p2p_seq_id": 0, "profiling_name": f"gloo:{op}", "is_p2p": False,
            "input_sizes": [list(s) for s in sizes], "process_group": ["0", group], "retired": True,
            "state": "scheduled", "pg_id": 0, "record_id": seq - 1}


def dump(*entries) -> dict:
    return {"version": "2.10", "comm_lib_version": "", "entries": list(entries),
            "pg_status": {"0": {"last_enqueued_collective": max((e["collective_seq_id"] for e in entries),
                                                                 default=-1)}}}


def trails(dumps: dict) -> dict:
    return {rank: collectives.fr_trail(rank, data) for rank, data in dumps.items()}


def steps(n: int, **kw) -> list:
    return [entry(i, **kw) for i in range(1, n + 1)]


def test_a_rank_that_called_broadcast_where_the_others_all_reduce_is_named():
    dumps = {r: dump(*steps(3), entry(4)) for r in (0, 2, 3)}
    dumps[1] = dump(*steps(3), entry(4, "broadcast"))
    att = collectives.attribute(trails(dumps), 4)
    assert (att.signature, att.ranks) == ("collective-mismatch", [1])
    assert att.line == "rank 1 called broadcast [4] as collective #4 where ranks 0, 2, 3 called all_reduce [4]"
    assert att.evidence == "flight recorder of 4 ranks"


def test_different_sizes_at_the_same_position_are_a_mismatch_too():
    dumps = {r: dump(*steps(2)) for r in (0, 1, 2)}
    dumps[3] = dump(entry(1), entry(2, sizes=((8, 2),)))
    att = collectives.attribute(trails(dumps), 4)
    assert (att.signature, att.ranks) == ("collective-mismatch", [3])
    assert "all_reduce [8x2]" in att.line


def test_a_rank_behind_never_entered_the_collective_the_others_waited_in():
    dumps = {r: dump(*steps(5)) for r in (0, 1, 3)}
    dumps[2] = dump(*steps(4))
    att = collectives.attribute(trails(dumps), 4)
    assert (att.signature, att.ranks) == ("collective-behind", [2])
    assert att.line == ("rank 2 never entered collective #5 (all_reduce [4]) that ranks 0, 1, 3 waited in; "
                        "its last was #4")


def test_a_rank_ahead_called_a_collective_no_other_rank_called():
    dumps = {r: dump(*steps(10)) for r in (1, 2, 3)}
    dumps[0] = dump(*steps(11))  # e.g. an all_reduce of a metric under `if rank == 0:`
    att = collectives.attribute(trails(dumps), 4)
    assert (att.signature, att.ranks) == ("collective-ahead", [0])
    assert "never called (their last was #10)" in att.line


def test_agreeing_ranks_name_no_one_and_a_missing_rank_is_not_blamed_for_its_absence():
    dumps = {r: dump(*steps(4)) for r in (0, 1, 3)}  # rank 2 was killed: it wrote nothing
    assert collectives.attribute(trails(dumps), 4) is None
    assert collectives.attribute(trails({0: dump(*steps(4))}), 4) is None  # one rank alone proves nothing


def test_a_tie_of_two_ranks_names_the_one_behind():
    att = collectives.attribute(trails({0: dump(*steps(6)), 1: dump(*steps(5))}), 2)
    assert (att.signature, att.ranks) == ("collective-behind", [1])


def test_subgroups_and_point_to_point_do_not_mix_with_the_default_groups_sequence():
    noisy = dump(*steps(3), entry(7, group="custom_pg"), {**entry(9), "is_p2p": True})
    assert collectives.fr_trail(0, noisy).last == 3


# ProcessGroupNCCL's lines, as recorded from real jobs (rank prefix as torchrun adds it)
NCCL_TIMEOUT = ("[rank{r}]:[E1126 10:31:16.123456 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=524288, NumelOut=524288, "
                "Timeout(ms)=600000) ran for 600183 milliseconds before timing out.")
NCCL_NOTICE = ("[rank{r}]:[E1126 10:31:16.223456 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
               "Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL "
               "work: {seq}, last completed NCCL work: {done}.")
NCCL_DUMP = ("[rank{r}]:[E1126 10:31:17.178116623 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
             "Received a dump signal due to a collective timeout from  rank 3 and we will try our best to dump the "
             "debug info. Last enqueued NCCL work: {seq}, last completed NCCL work: {done}.This is most likely "
             "caused by incorrect usages of collectives")


def nccl_log(rank: int, text: str) -> RankLog:
    return RankLog(rank, f"rank {rank}", rank // 2, f"std_log_process_{rank:02d}.txt", text, 1, None)


def test_nccl_watchdog_lines_name_the_rank_behind_by_sequence_number():
    logs = [nccl_log(r, NCCL_TIMEOUT.format(r=r, seq=1234, op="ALLREDUCE") + "\n"
                     + NCCL_NOTICE.format(r=r, seq=1234, done=1233)) for r in (0, 1, 2)]
    logs.append(nccl_log(3, NCCL_DUMP.format(r=3, seq=1233, done=1233)))
    result = diagnose(logs, Context(world=4), job="j", status="Failed", backend="azureml")
    assert (result.rank.rank, result.finding.signature) == (3, "collective-behind")
    assert result.finding.line.startswith("rank 3 never entered collective #1234 (allreduce)")
    assert result.evidence == "NCCL watchdog lines of 4 ranks"


def test_nccl_watchdog_lines_name_a_rank_that_timed_out_in_another_operation():
    logs = [nccl_log(r, NCCL_TIMEOUT.format(r=r, seq=77, op="ALLREDUCE" if r != 2 else "BROADCAST"))
            for r in range(4)]
    result = diagnose(logs, Context(world=4), job="j", status="Failed", backend="azureml")
    assert (result.rank.rank, result.finding.signature, result.finding.field) == (2, "collective-mismatch", "command")


def test_without_evidence_the_first_failure_by_time_decides_and_says_so():
    logs = [RankLog(r, f"rank {r}", 0, "log", "Traceback (most recent call last):\n  File \"t.py\", line 1, in <module>"
                    "\nValueError: x" if r == 1 else "", 1 if r == 1 else -15, 10.0 + r) for r in range(2)]
    result = diagnose(logs, Context(world=2), job="j", status="Failed", backend="local")
    assert result.rank.rank == 1 and result.evidence.startswith("exit codes, end times and log lines of 2 ranks")


def test_the_culprit_keeps_its_own_cause_and_the_attribution_becomes_its_evidence(tmp_path):
    for r in range(4):
        (tmp_path / f"rank_{r:02d}.fr.json").write_text(json.dumps(dump(*steps(3 if r == 2 else 4))))
    logs = [RankLog(r, f"rank {r}", r // 2, "log", "Traceback (most recent call last):\n  File \"/src/t.py\", line 9,"
                    " in step\nValueError: bad" if r == 2 else "RuntimeError: Connection closed by peer", 1, 5.0 - r)
            for r in range(4)]
    result = diagnose(logs, Context(world=4), job="j", status="Failed", backend="local",
                      evidence=collectives.read_folder(str(tmp_path)))
    assert (result.rank.rank, result.finding.signature) == (2, "python-exception")
    assert result.evidence.startswith("flight recorder of 4 ranks: rank 2 never entered collective #4")


def test_an_error_file_gives_the_culprits_frame(tmp_path):
    for r in range(3):
        (tmp_path / f"rank_{r:02d}.fr.json").write_text(json.dumps(dump(*steps(2), entry(3, "barrier" if r == 1
                                                                                           else "all_reduce"))))
    (tmp_path / "rank_01.error.json").write_text(json.dumps(
        {"rank": 1, "reason": "exception", "frame": {"file": "/src/train.py", "line": 31, "function": "<module>"}}))
    logs = [RankLog(r, f"rank {r}", 0, "log", "RuntimeError: Timed out waiting 8000ms for recv operation to complete",
                    1, 1.0) for r in range(3)]
    result = diagnose(logs, Context(world=3), job="j", status="Failed", backend="local",
                      evidence=collectives.read_folder(str(tmp_path)))
    assert result.finding.frame == 'File "/src/train.py", line 31, in <module>'


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_evidence_files_that_are_not_regular_or_not_json_are_skipped_without_a_hang(tmp_path):
    os.mkfifo(tmp_path / "rank_00.fr.json")  # opening it for reading would block forever
    (tmp_path / "rank_01.fr.json").write_text("{not json")
    (tmp_path / "rank_02.fr.json").write_text("[" * 100_000)  # nesting past the JSON reader's recursion
    os.symlink("/dev/zero", tmp_path / "rank_03.fr.json")
    (tmp_path / "rank_04.fr.json").write_text(json.dumps(dump(*steps(2))))
    found = collectives.read_folder(str(tmp_path))
    assert list(found.trails) == [4]


def test_an_azure_ml_download_has_its_evidence_found_under_artifacts_logs_and_never_under_outputs(tmp_path):
    decoy = tmp_path / "artifacts" / "outputs" / "logs" / "amldist"  # written by the job itself: not evidence
    decoy.mkdir(parents=True)
    assert collectives.find_folder(str(tmp_path)) is None
    real = tmp_path / "artifacts" / "logs" / "amldist"
    real.mkdir(parents=True)
    assert collectives.find_folder(str(tmp_path)) == str(real)
    deep = tmp_path / "deep"
    (deep / "a" / "b" / "c" / "d" / "logs" / "amldist").mkdir(parents=True)
    assert collectives.find_folder(str(deep)) is None  # the walk is bounded

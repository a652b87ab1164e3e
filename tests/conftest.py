"""Shared fixtures: where the conformance corpus lives, and a CLI runner."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = Path(os.environ.get("AMLDIST_CONFORMANCE", ROOT.parent / "shared" / "conformance"))
# Why ~116 tests skip in a clone (the README's Quick start names it too): the corpus is data kept beside the
# repository, never copied into it (its MANIFEST.md says where each file comes from).
CORPUS_MISSING = (f"the conformance corpus (real Azure ML specs kept beside the repository, ../shared/conformance) "
                  f"is not at {CONFORMANCE}: set AMLDIST_CONFORMANCE to the folder that holds it")


def _bytecode_for_the_processes_the_tests_start() -> None:
    """Let the processes the tests start (amldist's CLI, ranks, ``python -c`` helpers: about a thousand) cache
    bytecode as Python does by default. Where the environment forbids it (``PYTHONDONTWRITEBYTECODE``, set on some
    CI machines), each of them would compile amldist's modules from source again: about 0.3 s of CPU, a third of a
    CLI call. The bytecode goes where Python puts it, ``__pycache__`` beside each source (git ignores it; code
    snapshots and the runtime bundle leave it out). Not a private ``PYTHONPYCACHEPREFIX``: that redirects every
    package's bytecode, so the session's first ranks each compiled torch from source again (4 ranks: 50 s of CPU
    more than the 2 x 2 sample's whole run), and the installed packages' own bytecode went unused.
    ``AMLDIST_TEST_NO_PYCACHE=1`` keeps the environment as it is."""
    if os.environ.get("AMLDIST_TEST_NO_PYCACHE"):
        return
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False  # this process too: what it imports, and pytest's rewritten test modules


_bytecode_for_the_processes_the_tests_start()


def _interruptible_children() -> None:
    """Give the processes the tests start SIGINT's default disposition. A non-interactive shell starts a
    background command (``pytest ... &``, ``nohup ... &``) with SIGINT and SIGQUIT ignored, and an ignored signal
    stays ignored across exec: every CLI and rank the tests start would then shrug off the Ctrl-C the signal tests
    send (seen in a backgrounded run: three of them failed, each a SIGINT that changed nothing). Python's own
    handler here becomes the default disposition in each child, as in a foreground run."""
    import signal

    for signum, handler in ((signal.SIGINT, signal.default_int_handler), (signal.SIGQUIT, signal.SIG_DFL)):
        if signal.getsignal(signum) == signal.SIG_IGN:
            signal.signal(signum, handler)


_interruptible_children()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto``: two workers per core, at most four more than cores (4 on 2 cores). Much of the default tier
    waits rather than computes (the Slurm cluster's scheduling, fault drills' timers, ranks waiting for each
    other), so one worker per core leaves the cores idle that long. Measured on 2 cores: 6.9 min with 2 workers
    against 6.0 with 3 (an earlier tree); 5 min 19 s with 3 (46 core-seconds idle) against 5 min 13 s with 4
    (8 idle; each worker also collects and imports for itself, so 4 used 27 CPU-seconds more).
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + min(4, cores)


def pytest_collection_finish(session):
    """Once collected, every object alive (azure-ai-ml, hypothesis, amldist and the test modules: about 400,000 in
    a worker) moves to the collector's permanent generation (``gc.freeze()``), so no later full collection walks
    them again. A worker's full collections (the automatic ones, and ``amldist.runtime.destroy()``'s, 0.2-0.5 s
    each with that heap) took 22 CPU-seconds over the default tier's four workers, 18 with the freeze (one
    measured run each). Garbage made by a test is still collected: only what exists here is frozen."""
    import gc

    gc.collect()  # what collection left as garbage is freed, not frozen
    gc.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """With workers, xdist's ``worksteal`` schedule unless ``--dist`` says otherwise: a worker that ends its share
    takes tests from another's, so a long test near the end does not leave a core idle."""
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", None) == "no":
        config.option.dist = "worksteal"


def pytest_addoption(parser):
    parser.addoption("--attack-long", action="store_true",
                     help="tests/attack: the long fuzz tier (10,000+ cases; also AMLDIST_ATTACK_LONG=1)")
    parser.addoption("--long", action="store_true",
                     help="also run the long tier: end-to-end cases that repeat a behaviour the default run already "
                     "covers once (tests marked long; bigger property-test budgets); also AMLDIST_LONG=1")
    parser.addoption("--bench", action="store_true",
                     help="also run the benchmark scripts end to end (tests marked bench; also -m bench or "
                     "AMLDIST_BENCH=1); the default run checks only the benchmarks' own workloads")


def pytest_configure(config):
    config.addinivalue_line("markers", "bench: runs a benchmark script end to end (slow, timing only); skipped "
                            "unless --bench, -m bench or AMLDIST_BENCH=1")
    config.addinivalue_line("markers", "long(covered_by): the long tier, skipped unless --long (or -m long, "
                            "AMLDIST_LONG=1); covered_by names the default-tier test of the same behaviour")
    config.addinivalue_line("markers", "budget: a property test sized by budget(): the default tier runs it at its "
                            "default size, the long tier (`--long -m 'long or budget'`, .ci/run) again at its long one")
    if config.getoption("--long") or "long" in (config.option.markexpr or ""):
        os.environ["AMLDIST_LONG"] = "1"  # before the test modules are imported: long_tier() sizes their budgets


def budget(default: int, long: int) -> int:
    """Hypothesis examples for a test marked ``budget``: ``default`` in the default tier, ``long`` with --long.

    The default tier is the developer's loop and is sized as a whole (the README's suite time); CI's long tier
    selects the marked tests again (``-m "long or budget"``), so every CI run still tries the long budget."""
    return long if long_tier() else default


def long_tier() -> bool:
    """Whether this run includes the long tier (--long, -m long or AMLDIST_LONG=1): tests size their budgets
    (hypothesis examples, rounds) with it, so the default run keeps one representative of each behaviour."""
    return bool(os.environ.get("AMLDIST_LONG"))


@pytest.hookimpl(tryfirst=True)  # before -m deselects: the table's tests carry the long marker by then
def pytest_collection_modifyitems(config, items):
    """The default run skips the benchmarks: they time things, and their own correctness checks
    (the workload each one measures is valid and the same on both sides) run unmarked."""
    _name_the_missing_corpus(items)
    _skip_the_long_tier(items)
    if config.getoption("--bench") or os.environ.get("AMLDIST_BENCH") or "bench" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="a benchmark: run with --bench (or -m bench)")
    for item in items:
        if item.get_closest_marker("bench") is not None:
            item.add_marker(skip)


def _skip_the_long_tier(items) -> None:
    """The default run skips tests marked long, and those tests/long_tier.py lists, naming the default-tier test
    that covers the same behaviour (tests/test_long_tier.py checks that every entry of the table names a test)."""
    from tests.long_tier import covered_by

    for item in items:
        marker = item.get_closest_marker("long")
        listed = covered_by(item.nodeid)
        if marker is None and listed is not None:  # `-m long` selects the table's tests too (.ci/run's second run)
            item.add_marker(pytest.mark.long(covered_by=listed))
        if long_tier() or (marker is None and listed is None):
            continue
        covered = listed if marker is None else (marker.kwargs.get("covered_by") or
                                                 (marker.args[0] if marker.args else ""))
        item.add_marker(pytest.mark.skip(reason="the long tier: run with --long (or AMLDIST_LONG=1)"
                                         + (f"; the default run covers this with {covered}" if covered else "")))


def _name_the_missing_corpus(items) -> None:
    """A test parametrized over the corpus has an empty parameter set without it, which pytest skips as "got
    empty parameter set": say which folder is missing instead."""
    if CONFORMANCE.is_dir():
        return
    for item in items:
        skip = item.get_closest_marker("skip")
        if skip is not None and str(skip.kwargs.get("reason", "")).startswith("got empty parameter set"):
            item.add_marker(pytest.mark.skip(reason=CORPUS_MISSING), append=False)


def skip_module_without(module: str, reason: str) -> None:
    """``pytest.importorskip`` at a module's top, without importing ``module``: torch or Ray imported while
    collecting costs each xdist worker seconds of CPU before its first test, for modules whose tests import
    them only in the processes they start."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        pytest.skip(f"could not import {module!r}: {reason}", allow_module_level=True)


def wait_until(predicate, seconds: float = 30.0, every: float = 0.05) -> bool:
    """Whether ``predicate()`` came true within ``seconds`` (asked every ``every`` seconds)."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return bool(predicate())


def conformance_files(group: str) -> list[Path]:
    """Every YAML file under conformance/<group>, or [] when the corpus is absent."""
    base = CONFORMANCE / group
    if not base.is_dir():
        return []
    return sorted(p for p in base.rglob("*") if p.suffix in (".yml", ".yaml"))


@pytest.fixture
def conformance_dir() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.skip(CORPUS_MISSING)
    return CONFORMANCE


@pytest.fixture
def cli(capsys):
    """Run ``amldist`` in-process: returns (exit code, stdout, stderr)."""
    from amldist.cli.main import main

    def run(*argv: str):
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run

"""The fault drill of a local run: each ``--inject`` fault (:mod:`amldist.rules.faults`) acted out on the
run's own processes, at its time, from one thread beside the supervisor's watch loop.

Each process the supervisor starts leads its own session (its pid is its process group), so a signal to
the group reaches the rank and everything it started, as a signal to a VM's processes would. What fired,
when and on which processes is kept in :attr:`FaultDrill.fired` and recorded in ``status.json``
(``faults``), so ``amldist job diagnose`` names the injected fault as the cause, never the script.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from amldist.rules.faults import Fault

SLOW_PERIOD = 0.1  # seconds: each period a slowed rank runs 1/F of it and is stopped for the rest


class FaultDrill:
    """Acts out ``faults`` on ``processes`` (the plan's, with ``node`` and ``rank``) and their ``popens``."""

    def __init__(self, faults, processes, popens):
        self.faults: tuple[Fault, ...] = tuple(faults)
        self.targets = [(spec, popen) for spec, popen in zip(processes, popens)]
        self.fired: list[dict] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = time.monotonic()

    def start(self) -> None:
        for fault in self.faults:
            thread = threading.Thread(target=self._act, args=(fault,), name=f"amldist-inject-{fault.kind}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self) -> None:
        """The run is over: pending faults never fire; a slowed or hung rank is continued for its stop."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2)
        for spec, popen in self.targets:
            if popen.poll() is None:
                _signal_group(popen.pid, signal.SIGCONT)

    def _victims(self, fault: Fault):
        key = "node" if fault.kind == "preempt" else "rank"
        return [(spec, popen) for spec, popen in self.targets
                if getattr(spec, key) == fault.target and popen.poll() is None]

    def _act(self, fault: Fault) -> None:
        if self._stop.wait(max(0.0, fault.after - (time.monotonic() - self._started))):
            return
        victims = self._victims(fault)
        if not victims:
            return
        self.fired.append({**fault.to_json(), "fired_at": round(time.time(), 3),
                           "seconds": round(time.monotonic() - self._started, 3),
                           "processes": [spec.label for spec, _ in victims]})
        if fault.kind == "preempt":
            self._preempt(fault, victims)
        elif fault.kind == "kill":
            _signal_all(victims, signal.SIGKILL)
        elif fault.kind == "hang":
            _signal_all(victims, signal.SIGSTOP)
        else:
            self._slow(fault, victims)

    def _preempt(self, fault: Fault, victims) -> None:
        _signal_all(victims, signal.SIGTERM)
        deadline = time.monotonic() + fault.grace
        while time.monotonic() < deadline and any(popen.poll() is None for _, popen in victims):
            if self._stop.wait(0.05):
                break
        _signal_all([(s, p) for s, p in victims if p.poll() is None], signal.SIGKILL)

    def _slow(self, fault: Fault, victims) -> None:
        running = SLOW_PERIOD / fault.factor
        while not self._stop.is_set() and any(popen.poll() is None for _, popen in victims):
            _signal_all(victims, signal.SIGSTOP)
            if self._stop.wait(SLOW_PERIOD - running):
                break
            _signal_all(victims, signal.SIGCONT)
            self._stop.wait(running)
        _signal_all(victims, signal.SIGCONT)


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass  # ended meanwhile


def _signal_all(victims, signum: int) -> None:
    for _spec, popen in victims:
        if popen.poll() is None:
            _signal_group(popen.pid, signum)

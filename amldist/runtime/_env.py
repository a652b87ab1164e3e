"""DistEnv (what one process learns about its place in the world), its error, and the reader
that turns environment variables into a checked DistEnv while remembering which variable fed
which field, so that every error can name the variables involved."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

# Used only where no launcher or variable says otherwise; torch's own documented default, so a
# world of one and hand-started jobs behave as with plain ``torchrun``.
DEFAULT_PORT = 29500

_VARIABLE = re.compile(r"[A-Z][A-Z0-9_]*")


class DistEnvError(ValueError):
    """The environment is missing, malformed or contradictory; the message names the variables."""


@dataclasses.dataclass(frozen=True)
class DistEnv:
    """One process's place in a distributed world, as a launcher described it."""

    launcher: str
    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    node_rank: int
    num_nodes: int
    master_addr: str
    master_port: int

    def as_dict(self) -> dict:
        """Every field by name, in declaration order (the JSON that ``--print`` shows)."""
        return dataclasses.asdict(self)

    def to_env(self) -> dict[str, str]:
        """The variables ``init_process_group(init_method="env://")`` and most scripts read."""
        return {
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.world_size),
            "LOCAL_RANK": str(self.local_rank),
            "LOCAL_WORLD_SIZE": str(self.local_world_size),
            "NODE_RANK": str(self.node_rank),
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
        }


class EnvReader:
    """Reads one environment for one launcher.

    ``sources`` maps each DistEnv field to the variable (or short formula) it came from; the
    range checks in ``build`` and the launcher cross-check quote it.
    """

    def __init__(self, environ: Mapping[str, str]):
        self.environ = environ
        self.sources: dict[str, str] = {}

    def has(self, name: str) -> bool:
        # An empty value counts as unset, as torch's env:// rendezvous treats it.
        return bool(self.environ.get(name, "").strip())

    def first(self, *names: str) -> str | None:
        return next((name for name in names if self.has(name)), None)

    def get_int(self, field: str, *names: str, minimum: int = 0) -> int | None:
        """The first set variable among ``names`` as an integer >= ``minimum``, or None if none is set."""
        name = self.first(*names)
        if name is None:
            return None
        self.sources[field] = name
        value = parse_int(name, self.environ[name])
        if value < minimum:
            raise DistEnvError(f"{name}={value} must be at least {minimum}")
        return value

    def require_int(self, field: str, *names: str, minimum: int = 0, context: str = "") -> int:
        value = self.get_int(field, *names, minimum=minimum)
        if value is None:
            raise DistEnvError(f"{' or '.join(names)} must be set{context}")
        return value

    def derived(self, field: str, value, formula: str):
        """Record a value computed from other variables, e.g. node rank = rank // local size."""
        self.sources[field] = formula
        return value

    def master_addr(self, default: str | None, default_source: str = "default", missing: str = "") -> str:
        """MASTER_ADDR (or its alias MASTER_IP) when set, else the launcher's default; with
        neither, DistEnvError(``missing``)."""
        addr, ip = self.environ.get("MASTER_ADDR", "").strip(), self.environ.get("MASTER_IP", "").strip()
        if addr and ip and addr != ip:
            raise DistEnvError(f"MASTER_ADDR={addr!r} and MASTER_IP={ip!r} disagree; unset one of them")
        if addr or ip:
            self.sources["master_addr"] = "MASTER_ADDR" if addr else "MASTER_IP"
            return addr or ip
        if not default:
            raise DistEnvError(missing or "MASTER_ADDR (or MASTER_IP) must be set")
        return self.derived("master_addr", default, default_source)

    def master_port(self, default: int) -> int:
        """MASTER_PORT when set, else the launcher's default."""
        port = self.get_int("master_port", "MASTER_PORT")
        return self.derived("master_port", default, "default") if port is None else port

    def describe(self, field: str, value) -> str:
        """``OMPI_COMM_WORLD_RANK=3`` for a value read from a variable, else e.g.
        ``node rank 1 (OMPI_COMM_WORLD_RANK // OMPI_COMM_WORLD_LOCAL_SIZE)``."""
        source = self.sources.get(field, "")
        if _VARIABLE.fullmatch(source):
            return f"{source}={value}"
        return f"{field.replace('_', ' ')} {value}" + (f" ({source})" if source else "")

    def build(self, launcher: str, **fields) -> DistEnv:
        """A DistEnv after the range checks; raises DistEnvError naming the variables."""
        env = DistEnv(launcher=launcher, **fields)

        def src(field: str) -> str:
            return self.describe(field, getattr(env, field))

        for size in ("world_size", "local_world_size", "num_nodes"):
            if getattr(env, size) < 1:
                raise DistEnvError(f"{src(size)} must be at least 1")
        for index, size in (("rank", "world_size"), ("local_rank", "local_world_size"), ("node_rank", "num_nodes")):
            if getattr(env, index) >= getattr(env, size):
                raise DistEnvError(f"{src(index)} must be less than {src(size)}")
        if env.local_world_size > env.world_size:
            raise DistEnvError(f"{src('local_world_size')} must not exceed {src('world_size')}")
        if not 0 < env.master_port < 65536:
            raise DistEnvError(f"{src('master_port')} is not a TCP port (1-65535)")
        return env


def split_host_port(address: str) -> tuple[str, int | None]:
    """``"10.0.0.4:6000"`` -> ``("10.0.0.4", 6000)``; an address without a numeric port keeps
    its whole text as the host: ``("node0", None)``."""
    address = address.strip()
    host, sep, port = address.rpartition(":")
    if sep and port.isascii() and port.isdigit():
        return host, int(port)
    return address, None


def parse_int(name: str, raw: str) -> int:
    text = raw.strip()
    if not (text.isascii() and text.isdigit()):  # rejects "-1", "1.0", "4(x2)" and "²"
        raise DistEnvError(f"{name}={raw!r} is not a non-negative integer")
    return int(text)

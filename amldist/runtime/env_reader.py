"""EnvReader turns environment variables into a checked DistEnv while remembering which variable
fed which field, so that every error can name the variables involved; and the bounded parsers
every launcher uses for numbers, host names and "host:port" values.

Bounds, so that no value (a 5,000-digit number, a megabyte of text, a NUL, a lone surrogate) can
end in anything but one DistEnvError line: integers have at most ``MAX_INT`` (what torch's C++
keeps ranks and sizes in), so Python's 4,300-digit int conversion limit is never reached; quoted
values are cut to ``QUOTE_CHARS``; a host must be printable text without blanks, at most
``MAX_HOST_CHARS`` long, so it can be exported and resolved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .dist_env import DistEnv, DistEnvError

# Used only where no launcher or variable says otherwise; torch's own documented default, so a
# world of one and hand-started jobs behave as with plain ``torchrun``.
DEFAULT_PORT = 29500
# torch keeps ranks and world sizes in a C int; nothing a launcher sets is larger.
MAX_INT = 2**31 - 1
QUOTE_CHARS = 60
MAX_HOST_CHARS = 255  # DNS names stop at 253; IPv6 literals are shorter

_VARIABLE = re.compile(r"[A-Z][A-Z0-9_]*")
_DIGITS = re.compile(r"[0-9]+")  # ASCII only: int() would also take "²" or fullwidth digits


def quote(value: str) -> str:
    """``repr(value)``, cut to QUOTE_CHARS characters, so that an error line stays a line."""
    if len(value) <= QUOTE_CHARS:
        return repr(value)
    return f"{value[:QUOTE_CHARS]!r}... ({len(value)} characters)"


def small_int(text: str) -> int | None:
    """``text`` as an integer in 0..MAX_INT, or None when it is not ASCII digits or is larger.
    Checks the length before converting, so a huge value costs nothing."""
    if not _DIGITS.fullmatch(text):
        return None
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(MAX_INT)):
        return None
    value = int(digits)
    return value if value <= MAX_INT else None


def parse_int(name: str, raw: str) -> int:
    value = small_int(raw.strip())
    if value is None:  # rejects "-1", "1.0", "4(x2)", "²" and 10**5000
        raise DistEnvError(f"{name}={quote(raw)} is not a non-negative integer up to {MAX_INT}")
    return value


def is_host(text: str) -> bool:
    """A host name or address that can be exported and resolved: printable, no blanks, not too long."""
    return 0 < len(text) <= MAX_HOST_CHARS and text.isprintable() and not any(c.isspace() for c in text)


def split_host_port(address: str, name: str) -> tuple[str, int | None]:
    """``"10.0.0.4:6000"`` -> ``("10.0.0.4", 6000)``; an address without a numeric port keeps
    its whole text as the host: ``("node0", None)``. A port past 65535 is left for ``build`` to
    refuse; one past MAX_INT is refused here, naming ``name``, the value's source."""
    address = address.strip()
    host, sep, port = address.rpartition(":")
    if not (sep and _DIGITS.fullmatch(port)):
        return address, None
    number = small_int(port)
    if number is None:
        raise DistEnvError(f"{name}: {quote(address)} has a port that is not a TCP port (1-65535)")
    return host, number


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
        neither, DistEnvError(``missing``). Whichever it is must be a host (``is_host``)."""
        addr, ip = self.environ.get("MASTER_ADDR", "").strip(), self.environ.get("MASTER_IP", "").strip()
        if addr and ip and addr != ip:
            raise DistEnvError(f"MASTER_ADDR={quote(addr)} and MASTER_IP={quote(ip)} disagree; unset one of them")
        if addr or ip:
            source, value = ("MASTER_ADDR", addr) if addr else ("MASTER_IP", ip)
        elif default:
            source, value = default_source, default
        else:
            raise DistEnvError(missing or "MASTER_ADDR (or MASTER_IP) must be set")
        if not is_host(value):
            where = source if _VARIABLE.fullmatch(source) else f"the master address from {source}"
            raise DistEnvError(f"{where}={quote(value)} is not a host name or address (printable, no blanks, "
                               f"at most {MAX_HOST_CHARS} characters)")
        return self.derived("master_addr", value, source)

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
        # Every node runs at least one process, so neither count can exceed the world.
        for size in ("local_world_size", "num_nodes"):
            if getattr(env, size) > env.world_size:
                raise DistEnvError(f"{src(size)} must not exceed {src('world_size')}")
        if not 0 < env.master_port < 65536:
            raise DistEnvError(f"{src('master_port')} is not a TCP port (1-65535)")
        return env

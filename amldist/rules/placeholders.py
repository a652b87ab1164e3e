"""Placeholders and optional groups in component command lines, legacy and ML v2.

Two syntaxes:

- legacy (``DistributedComponent`` ``launcher.additional_arguments``, old ``command``):
  ``{inputs.x}``, ``{outputs.y}``, optional groups ``[ ... ]``;
- ML v2 (``command``): ``${{inputs.x}}``, ``${{outputs.y}}``, optional groups ``$[[ ... ]]``.

What the legacy Component SDK did with brackets, and what we decided:

- Its docs (componentsdk "Inputs and Outputs", "Optional Inputs and Parameters") say to put an
  optional input's argument in ``[]``; when the input is not given, everything inside is left out.
  The generated executors matched ``\\[[\\s\\S]*?\\]`` and looked for a ``{...}`` inside, so a bracket
  pair without a placeholder was never an optional group, and groups could not nest.
- Here a matched ``[`` ... ``]`` pair is an optional group **only when it contains a placeholder**;
  any other brackets are literal text (``--shape [3,224]`` stays as written). Pairs are matched like
  parentheses, so groups nest (``[--a {inputs.a} [--b {inputs.b}]]``), which the old non-greedy
  match could not express.
- An unmatched ``[`` with a placeholder after it, or an unmatched ``]`` with a placeholder before it,
  is an error (it looks like a group whose other half is missing); unmatched brackets elsewhere are
  literal text.
- In v2 only ``$[[`` opens a group (plain brackets are always literal) and ``]]`` closes the innermost
  open group; a run of ``]`` closes with its last characters (``$[[--x [1]]]`` is ``--x [1]`` in a
  group). A ``]]`` with no open group is literal (shell ``[[ ... ]]``).
- A v2 name may be dotted (``${{inputs.group.param}}``): azure-ai-ml accepts port names matching
  ``^[a-zA-Z_][a-zA-Z0-9_]*(\\.[a-zA-Z_][a-zA-Z0-9_]*)*$`` (``IOConstants.VALID_KEY_PATTERN``, a flattened
  parameter group), for inputs and outputs alike; the whole dotted name is the reference, compared
  with the declared keys as is. Legacy names stay undotted.
- Other v2 expressions (``${{parent.inputs.x}}``, ``${{search_space.lr}}``, ``${{name}}``) are literal
  text here. A malformed ``{inputs.`` / ``${{inputs.`` reference is an error, and so is v2 syntax in a
  legacy command (mixing the two is always a mistake).

Standard library only, no I/O: the validator reuses it.
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from amldist.errors import UserError
from amldist.rules.placeholder_patterns import LEGACY_REF, LEGACY_START, V2_REF, V2_START

LEGACY = "legacy"
V2 = "v2"

_V2_MARKERS = re.compile(r"\$\{\{|\$\[\[")
# `{inputs.x}` in a v2 command that is not the inside of `${{inputs.x}}`
_LEGACY_IN_V2 = re.compile(r"(?<!\$\{)" + LEGACY_REF.pattern)
MAX_GROUP_DEPTH = 20  # nested optional groups; real commands nest one or two
_DROPPED = "\x00"  # stands for a dropped group until the spaces around it are squeezed
_BRACKET = re.compile(r"[\[\]]")
_V2_BRACKET = re.compile(r"\$\[\[|\]+")


class PlaceholderSyntaxError(UserError):
    """A command line that cannot be read; ``offset`` is 0-based into the command text.

    ``written``: the text the error is about as it stands in the command (the malformed
    reference, the unmatched bracket and what follows it on its line), to quote and to find it.
    """

    def __init__(self, code: str, reason: str, text: str, offset: int, hint: str | None = None,
                 written: str | None = None):
        excerpt = text[max(0, offset - 15): offset + 25].replace("\n", " ")
        super().__init__(f"{reason} at offset {offset} of the command (near {excerpt!r})", hint=hint)
        self.code = code
        self.reason = reason
        self.offset = offset
        self.written = written or _word_at(text, offset)


def _word_at(text: str, offset: int) -> str:
    """The non-blank run starting at ``offset`` (at most 40 characters), to point at it."""
    end = offset
    while end < len(text) and end - offset < 40 and not text[end].isspace():
        end += 1
    return text[offset:end] or text[offset: offset + 1]


def malformed_text(text: str, start: re.Match, syntax: str) -> str:
    """What a malformed reference looks like as written: from its opening ``${{inputs.`` / ``{inputs.``
    through the name-like run after it and the closing braces when they follow (``${{inputs.b``,
    ``${{inputs.my-x}}``), at most 60 characters."""
    end = start.end()
    limit = min(len(text), start.start() + 60)
    while end < limit and not text[end].isspace() and text[end] not in "}$[]":
        end += 1
    close = "}}" if syntax == V2 else "}"
    after = end
    while after < limit and text[after] in " \t":  # `${{ inputs.x-y }}`: blanks before the closing braces
        after += 1
    if text.startswith(close, after):
        end = after + len(close)
    return text[start.start(): end]


@dataclass(frozen=True)
class Placeholder:
    source: str  # "inputs" or "outputs"
    name: str
    start: int  # offsets into the parsed text; end is exclusive
    end: int


@dataclass(frozen=True)
class Group:
    parts: tuple  # of str | Placeholder | Group
    start: int  # offset of the opening bracket
    end: int  # offset just past the closing bracket


@dataclass(frozen=True)
class ParsedCommand:
    text: str
    syntax: str
    parts: tuple  # of str | Placeholder | Group


@dataclass(frozen=True)
class Reference:
    source: str
    name: str
    start: int
    end: int
    groups: tuple  # opening offsets of the enclosing groups, outermost first

    @property
    def in_group(self) -> bool:
        return bool(self.groups)


def detect_syntax(text: str) -> str:
    """V2 when the text uses ``${{`` or ``$[[``, legacy otherwise."""
    return V2 if _V2_MARKERS.search(text) else LEGACY


def stray_legacy_reference(text: str) -> re.Match | None:
    """A legacy ``{inputs.x}`` / ``{outputs.y}`` in a v2 command, or None.

    v2 reads it as literal text, so the process would get the braces instead of the value: a
    common slip when moving off legacy specs. Groups 1 and 2 are the source and the name.
    """
    return _LEGACY_IN_V2.search(text)


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of an offset, for pointing into a multi-line command."""
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _placeholders(text: str, syntax: str) -> list[Placeholder]:
    full, start = (LEGACY_REF, LEGACY_START) if syntax == LEGACY else (V2_REF, V2_START)
    if syntax == LEGACY:
        marker = _V2_MARKERS.search(text)
        if marker:
            raise PlaceholderSyntaxError(
                "mixed-syntax", f"ML v2 syntax {marker.group()!r} in a legacy command", text, marker.start(),
                hint="legacy commands use {inputs.x} and [ ... ]; v2 commands use ${{inputs.x}} and $[[ ... ]]",
            )
    found = []
    for match in start.finditer(text):
        ref = full.match(text, match.start())
        if ref is None:
            written = malformed_text(text, match, syntax)
            close = "}}" if syntax == V2 else "}"
            reason = (f"the reference {written!r} is not closed with {close!r}" if not written.endswith(close)
                      else f"the reference {written!r} is malformed: a name is letters, digits and _")
            raise PlaceholderSyntaxError(
                "malformed-placeholder", reason, text, match.start(),
                hint="write {inputs.NAME} (legacy) or ${{inputs.NAME}} (v2); NAME is letters, digits and _"
                     + (" (in v2 also dotted, e.g. group.param)" if syntax == V2 else ""),
                written=written,
            )
        found.append(Placeholder(ref.group(1), ref.group(2), ref.start(), ref.end()))
    return found


def _legacy_pairs(text: str, holders: list[Placeholder]) -> list[tuple[int, int]]:
    """Bracket pairs that are optional groups, as (open offset, close offset). A placeholder holds no
    bracket, so only the brackets themselves are visited (linear in the text)."""
    stack, pairs, unmatched_close = [], [], []
    for match in _BRACKET.finditer(text):
        i = match.start()
        if match.group() == "[":
            stack.append(i)
        elif stack:
            pairs.append((stack.pop(), i))
        else:
            unmatched_close.append(i)
    starts = [p.start for p in holders]
    if stack or unmatched_close:
        _unbalanced(text, holders, starts, pairs, stack, unmatched_close)
    # a pair is a group when a placeholder lies inside it: the first placeholder after its opening
    grouped = []
    for o, c in pairs:
        k = bisect.bisect_right(starts, o)
        if k < len(holders) and holders[k].end <= c:
            grouped.append((o, c))
    return sorted(grouped)


def _unbalanced(text: str, holders: list[Placeholder], starts: list[int], pairs, stack, unmatched_close) -> None:
    """An unmatched ``[`` with a placeholder after it (or ``]`` with one before it) that no matched
    pair encloses looks like a group whose other half is missing: an error."""
    def enclosed(p, lo, hi):  # inside a matched pair lying within (lo, hi)
        return any(lo < o and c < hi and o < p.start and p.end <= c for o, c in pairs)

    for o in stack:
        if any(not enclosed(p, o, len(text)) for p in holders[bisect.bisect_right(starts, o):]):
            raise PlaceholderSyntaxError(
                "unbalanced-bracket", "'[' without a matching ']'", text, o,
                hint="close the optional group with ']'",
            )
    for c in unmatched_close:
        if any(p.end <= c and not enclosed(p, -1, c) for p in holders):
            raise PlaceholderSyntaxError(
                "unbalanced-bracket", "']' without a matching '['", text, c,
                hint="open the optional group with '['",
            )


def _v2_pairs(text: str, holders: list[Placeholder]) -> list[tuple[int, int]]:
    """``$[[``/``]]`` pairs. A placeholder holds no ``$[[`` and no ``]``, so only those are visited."""
    stack, pairs = [], []
    for match in _V2_BRACKET.finditer(text):
        if match.group() == "$[[":
            stack.append(match.start())
            continue
        i, j = match.start(), match.end()
        closes = min(len(stack), (j - i) // 2)
        for k in range(closes):  # the last characters of the run close, innermost first
            pairs.append((stack.pop(), j - 2 * (closes - k)))
    if stack:
        raise PlaceholderSyntaxError(
            "unbalanced-bracket", "'$[[' without a matching ']]'", text, stack[-1],
            hint="close the optional group with ']]'",
        )
    return sorted(pairs)


@lru_cache(maxsize=512)  # validate and the shell rules parse each command twice; the result is frozen
def parse(text: str, syntax: str = LEGACY) -> ParsedCommand:
    """Split a command into literal text, placeholders and (nested) optional groups."""
    if syntax not in (LEGACY, V2):
        raise ValueError(f"unknown syntax {syntax!r}")
    holders = _placeholders(text, syntax)
    pairs = _legacy_pairs(text, holders) if syntax == LEGACY else _v2_pairs(text, holders)
    open_len, close_len = (1, 1) if syntax == LEGACY else (3, 2)
    events = sorted(
        [(p.start, 1, p) for p in holders]
        + [(o, 0, ("open", c)) for o, c in pairs]
        + [(c, 2, ("close", o)) for o, c in pairs]
    )
    stack: list[tuple[int, list]] = [(-1, [])]
    pos = 0
    for offset, _, item in events:
        if offset < pos:  # the second half of a bracket pair's close run already consumed
            continue
        if offset > pos:
            stack[-1][1].append(text[pos:offset])
        if isinstance(item, Placeholder):
            stack[-1][1].append(item)
            pos = item.end
        elif item[0] == "open":
            if len(stack) > MAX_GROUP_DEPTH:  # the walks over groups recurse once per level
                raise PlaceholderSyntaxError(
                    "groups-too-deep", f"optional groups nested more than {MAX_GROUP_DEPTH} deep", text, offset,
                    hint="flatten the optional groups")
            stack.append((offset, []))
            pos = offset + open_len
        else:
            start, parts = stack.pop()
            stack[-1][1].append(Group(tuple(parts), start, offset + close_len))
            pos = offset + close_len
    if pos < len(text):
        stack[-1][1].append(text[pos:])
    return ParsedCommand(text, syntax, tuple(stack[0][1]))


def _as_parsed(command, syntax: str | None) -> ParsedCommand:
    if isinstance(command, ParsedCommand):
        return command
    return parse(command, syntax or detect_syntax(command))


def references(command, syntax: str | None = None) -> list[Reference]:
    """Every ``inputs``/``outputs`` reference in order, with the groups around it.

    ``command`` is a ParsedCommand or text (syntax detected when not given).
    """
    out: list[Reference] = []

    def walk(parts, groups):
        for part in parts:
            if isinstance(part, Placeholder):
                out.append(Reference(part.source, part.name, part.start, part.end, groups))
            elif isinstance(part, Group):
                walk(part.parts, groups + (part.start,))

    walk(_as_parsed(command, syntax).parts, ())
    return out


def render(parts: Iterable, syntax: str) -> str:
    """Write parts back as text in the given syntax."""
    ref = "{{{}.{}}}" if syntax == LEGACY else "${{{{{}.{}}}}}"
    opening, closing = ("[", "]") if syntax == LEGACY else ("$[[", "]]")
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, Placeholder):
            out.append(ref.format(part.source, part.name))
        else:
            out.append(opening + render(part.parts, syntax) + closing)
    return "".join(out)


def _shape(parts) -> list:
    """Structure without offsets, to compare two parses of the same command."""
    return [
        p if isinstance(p, str) else (p.source, p.name) if isinstance(p, Placeholder) else _shape(p.parts)
        for p in parts
    ]


def legacy_to_v2(text: str) -> str:
    """Translate a legacy command to v2 syntax; refuses what v2 would read differently."""
    parsed = parse(text, LEGACY)
    result = render(parsed.parts, V2)
    if _shape(parse(result, V2).parts) != _shape(parsed.parts):
        raise PlaceholderSyntaxError(
            "inexpressible", "literal brackets next to an optional group would change meaning in v2",
            text, 0, hint="move literal ']]' or '$[[' text out of the optional group",
        )
    return result


def drop_unset_groups(command, is_set: Callable[[Reference], bool] | Iterable[str], syntax: str | None = None) -> str:
    """The command with optional groups resolved, as a job would run it.

    A group is kept (its brackets removed) when every reference directly inside it is set; a group
    holding only nested groups is kept when one of those is kept; a group without any reference is
    kept. Everything else is dropped; the spaces around a dropped group shrink to one. ``is_set`` is a predicate
    on Reference or a collection of input names (outputs then always count as set).
    """
    if not callable(is_set):
        names = set(is_set)
        is_set = lambda ref: ref.source == "outputs" or ref.name in names
    parsed = _as_parsed(command, syntax)
    out_syntax = parsed.syntax

    def resolve(parts, groups) -> tuple[str, bool]:
        out, any_kept_group = [], False
        for part in parts:
            if isinstance(part, Group):
                inner, kept = resolve_group(part, groups + (part.start,))
                out.append(inner if kept else _DROPPED)
                any_kept_group |= kept
            else:
                out.append(render([part], out_syntax))
        return "".join(out), any_kept_group

    def resolve_group(group: Group, groups) -> tuple[str, bool]:
        direct = [
            Reference(p.source, p.name, p.start, p.end, groups) for p in group.parts if isinstance(p, Placeholder)
        ]
        inner, any_kept_nested = resolve(group.parts, groups)
        has_nested = any(isinstance(p, Group) for p in group.parts)
        if direct:
            kept = all(is_set(ref) for ref in direct)
        else:
            kept = any_kept_nested or not has_nested
        return inner, kept

    text, _ = resolve(parsed.parts, ())

    def squeeze(match):  # a dropped group leaves one space (or line break) between its neighbours
        if match.start() == 0 or match.end() == len(text):
            return ""
        return "\n" if "\n" in match.group() else " "

    return re.sub(r"\s*(?:" + _DROPPED + r"\s*)+", squeeze, text)

"""Did-you-mean: the one way amldist guesses what a user meant (unknown keys, undeclared inputs,
``--input`` names). Standard library only."""

from __future__ import annotations

import os
import re


def suggest(word, candidates) -> str | None:
    """The closest candidate to ``word``: same letters in another case, a typo, or a shared stem."""
    if not isinstance(word, str) or not word:
        return None
    candidates = [c for c in candidates if isinstance(c, str) and c]
    if not candidates:
        return None
    lowered = {c.lower(): c for c in candidates}
    if word.lower() in lowered and lowered[word.lower()] != word:
        return lowered[word.lower()]
    import difflib

    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    if close:
        return lowered[close[0]]
    tokens = [t for t in re.split(r"[^a-z0-9]+", word.lower()) if len(t) >= 4]
    for token in tokens:
        for low, original in lowered.items():
            if token in low or (len(low) >= 4 and low in token):
                return original
    # a shared stem: "processes" -> "process_count_per_instance"
    best, best_len = None, max(5, int(0.6 * len(word)))
    for low, original in lowered.items():
        common = len(os.path.commonprefix([word.lower(), low]))
        if common >= best_len and (best is None or common > best[0]):
            best = (common, original)
    return best[1] if best else None


def did_you_mean(word, candidates) -> str | None:
    """``did you mean 'x'?`` for the closest candidate (:func:`suggest`), or None: the one wording of a
    guess, in validate's hints, ``--input`` and ``component_to_job``."""
    guess = suggest(word, candidates)
    return f"did you mean {guess!r}?" if guess is not None else None

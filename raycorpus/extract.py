"""Main-content extraction: resiliparse, with the options from config."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from raycorpus.warc import HtmlRecord


class ExtractConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    main_content: bool = True
    alt_texts: bool = False
    links: bool = False
    list_bullets: bool = True
    form_fields: bool = False
    noscript: bool = False
    comments: bool = True
    min_chars: int = Field(1, ge=1, description="drop documents whose extracted text is shorter")


class Extractor:
    """resiliparse main-content extraction with the options from config."""

    name = "extract"

    def __init__(self, cfg: ExtractConfig):
        self.min_chars = cfg.min_chars
        self.options = dict(
            main_content=cfg.main_content,
            alt_texts=cfg.alt_texts,
            links=cfg.links,
            list_bullets=cfg.list_bullets,
            form_fields=cfg.form_fields,
            noscript=cfg.noscript,
            comments=cfg.comments,
        )

    def __call__(self, rec: HtmlRecord) -> tuple[str | None, str | None]:
        """Return (text, None) or (None, drop reason)."""
        try:
            tree = HTMLTree.parse(rec.html)
            text = extract_plain_text(tree, preserve_formatting=True, **self.options)
        except Exception as e:  # a page that breaks the parser is one dropped document
            return None, f"error:{type(e).__name__}"
        text = text.strip()
        if len(text) < self.min_chars:
            return None, "empty"
        return text, None

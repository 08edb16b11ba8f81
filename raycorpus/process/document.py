"""The document record that flows from the worker to the writers."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Document:
    text: str
    url: str
    record_id: str
    date: str
    metadata: dict[str, object] = field(default_factory=dict)

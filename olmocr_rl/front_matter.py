"""The olmOCR output format: YAML front matter then the page text (docs/checks.md §9.2–9.3).

`parse_page_response(content)` accepts and rejects exactly what olmOCR's
`FrontMatterParser(front_matter_class=PageResponse)` does, and returns the same field values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FIELDS = ("primary_language", "is_rotation_valid", "rotation_correction", "is_table", "is_diagram")


@dataclass(frozen=True)
class PageResponse:
    primary_language: str | None
    is_rotation_valid: bool
    rotation_correction: int
    is_table: bool
    is_diagram: bool
    natural_text: str | None


class FrontMatterError(ValueError):
    """The content is not a valid olmOCR page response."""


def split_front_matter(content: str) -> tuple[Any, str]:
    """(parsed YAML front matter or {}, text). Front matter exists only when the content starts
    with exactly "---\\n"; it closes at the first "\\n---" from index 4 on. Unparseable YAML
    counts as no front matter."""
    import yaml

    if content.startswith("---\n"):
        end = content.find("\n---", 4)
        if end != -1:
            try:
                return yaml.safe_load(content[4:end]) or {}, content[end + 4 :].strip()
            except yaml.YAMLError:
                pass
    return {}, content.strip()


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def parse_page_response(content: str) -> PageResponse:
    front, text = split_front_matter(content)
    values: dict[str, Any] = {}
    try:
        for name in FIELDS:
            if name not in front:
                raise FrontMatterError(f"Missing required field '{name}' in front matter")
            v = front[name]
            if name == "rotation_correction" and isinstance(v, str):
                v = int(v)
            elif name in ("is_rotation_valid", "is_table", "is_diagram") and isinstance(v, str):
                v = v.lower() == "true"
            elif name == "primary_language":
                # YAML 1.1 reads `no` as False: a bool becomes None, as do "" and falsy values.
                if _is_bool(v):
                    v = None
                elif isinstance(v, str):
                    v = v or None
                else:
                    v = v or None
            values[name] = v
        extra = set(front) - set(FIELDS)
    except FrontMatterError:
        raise
    except Exception as e:  # noqa: BLE001 - what Python raises on odd YAML shapes (a list, a number, ...)
        raise FrontMatterError(f"{type(e).__name__}: {e}") from None
    if extra:
        raise FrontMatterError(f"Unexpected fields in front matter: {extra}")
    rc = values["rotation_correction"]
    if rc not in {0, 90, 180, 270}:
        raise FrontMatterError("rotation_correction must be one of [0, 90, 180, 270].")
    if not isinstance(values["primary_language"], (str, type(None))):
        raise FrontMatterError("primary_language must be of type Optional[str].")
    for name in ("is_rotation_valid", "is_table", "is_diagram"):
        if not _is_bool(values[name]):
            raise FrontMatterError(f"{name} must be of type bool.")
    if not isinstance(rc, int):
        raise FrontMatterError("rotation_correction must be of type int.")
    return PageResponse(natural_text=text or None, **values)

"""XML elements written as text, one at a time: the bytes `xml.etree.ElementTree.tostring` writes for them.

The JUnit report of a suite of 100,000 runs is 100,000 testcases. Building an `Element` tree for each and
serialising it with ElementTree's Python serialiser (which walks the tree for namespaces, then writes it piece by
piece) was most of the report's time; these helpers write the same text directly. Escaping is ElementTree's:
`& < >` in text, and also `"`, CR, LF and TAB (as character references) in attribute values, so a value keeps its
line breaks when read back. Characters XML 1.0 forbids even escaped become U+FFFD first (`legal`), as in the JSON
report (see `niceeval._core.text`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from xml.sax.saxutils import escape

_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""Characters XML 1.0 forbids even escaped (lone surrogates too: UTF-8 cannot encode them); model output may
contain any of them."""
_PLAIN = re.compile('[^&<>"\r\n\t\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]*')
"""Text that is written as it is, in character data and attribute values alike (most values: numbers, names)."""
_ATTRIBUTE_ENTITIES = {'"': "&quot;", "\r": "&#13;", "\n": "&#10;", "\t": "&#09;"}


def legal(text: str) -> str:
    """`text` with the characters XML cannot hold replaced by U+FFFD."""
    return _ILLEGAL_XML.sub("\ufffd", text)


def attribute(value: str) -> str:
    """An attribute's value, made legal and escaped (to go between double quotes)."""
    if _PLAIN.fullmatch(value):
        return value
    return escape(legal(value), _ATTRIBUTE_ENTITIES)


def text(content: str) -> str:
    """Character data: `content` made legal and escaped."""
    if _PLAIN.fullmatch(content):
        return content
    return escape(legal(content))


def element(tag: str, attributes: Iterable[tuple[str, str]] = (), inner: str = "") -> str:
    """`<tag name="value" ...>inner</tag>`, or `<tag name="value" ... />` when `inner` is empty.

    Attribute values are made legal and escaped here; `inner` is markup already (`text`, other elements).
    """
    marked = "".join(f' {name}="{attribute(value)}"' for name, value in attributes)
    return f"<{tag}{marked}>{inner}</{tag}>" if inner else f"<{tag}{marked} />"

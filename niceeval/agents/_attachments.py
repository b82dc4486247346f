"""Files sent with a message (`t.send(text, files=[...])`): images, PDFs and text, as each provider takes them.

Read and checked when `t.send` is called, so a missing file or a type no adapter can send is an error at that line.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from niceeval._core.errors import UsageError

AttachmentKind = Literal["image", "pdf", "text"]
_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_MAGIC = (
    (b"\x89PNG", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"%PDF", "application/pdf"),
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Attachment:
    """One file sent with a message: function agents read `session.files`; model adapters send content parts."""

    name: str
    media_type: str
    data: bytes
    path: Path | None = None
    """Where it was read from (None for bytes given directly)."""

    @property
    def kind(self) -> AttachmentKind:
        """`image`, `pdf` or `text`."""
        if self.media_type in _IMAGES:
            return "image"
        return "pdf" if self.media_type == "application/pdf" else "text"

    @property
    def text(self) -> str:
        """The content of a text file."""
        return self.data.decode("utf-8", errors="replace")

    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    def described(self) -> dict[str, Any]:
        """What the run's record keeps of it (not the bytes)."""
        return {"name": self.name, "media_type": self.media_type, "size": len(self.data)}


def _media_type(name: str, data: bytes) -> str | None:
    for magic, media in _MAGIC:
        if data.startswith(magic):
            return media
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    guessed, _ = mimetypes.guess_type(name)
    if guessed is not None and (guessed.startswith("text/") or guessed in ("application/json", "application/xml")):
        return guessed
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return "text/plain" if guessed is None else None


def load_attachments(files: Sequence[object], where: str) -> list[Attachment]:
    """Each of `files` (a path, `bytes`, or an `Attachment`) read and typed; a problem is a `UsageError` saying
    which file and what to do."""
    if isinstance(files, str | bytes | Path):
        files = [files]
    found: list[Attachment] = []
    for position, item in enumerate(files, start=1):
        if isinstance(item, Attachment):
            found.append(item)
            continue
        if isinstance(item, bytes):
            name, data, path = f"file{position}", item, None
        elif isinstance(item, str | Path):
            path = Path(item)
            if not path.is_file():
                raise UsageError(
                    f"{where}: files=[...] item {position}: no file at {str(path)!r} (relative to {Path.cwd()})."
                )
            name, data = path.name, path.read_bytes()
        else:
            raise UsageError(
                f"{where}: files=[...] takes paths, bytes or Attachment(...); item {position} is {type(item).__name__}."
            )
        media = _media_type(name, data)
        if media is None:
            raise UsageError(
                f"{where}: files=[...] item {position} ({name}) is neither an image (PNG, JPEG, GIF, WebP), a PDF nor "
                "UTF-8 text, which is what the adapters can send; convert it, or pass Attachment(name=, media_type=, "
                "data=) to a function agent."
            )
        found.append(Attachment(name=name, media_type=media, data=data, path=path))
    return found


def openai_parts(text: str, files: Sequence[Attachment]) -> list[dict[str, Any]]:
    """A Chat Completions user content: the text, then each file (image_url, file, or its text)."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for f in files:
        if f.kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": f"data:{f.media_type};base64,{f.base64()}"}})
        elif f.kind == "pdf":
            parts.append(
                {"type": "file", "file": {"filename": f.name, "file_data": f"data:application/pdf;base64,{f.base64()}"}}
            )
        else:
            parts.append({"type": "text", "text": f"<file name={f.name!r}>\n{f.text}\n</file>"})
    return parts


def anthropic_blocks(files: Sequence[Attachment]) -> list[dict[str, Any]]:
    """Messages API content blocks for each file (image, or document: PDF or plain text), before the text."""
    blocks: list[dict[str, Any]] = []
    for f in files:
        if f.kind == "image":
            blocks.append(
                {"type": "image", "source": {"type": "base64", "media_type": f.media_type, "data": f.base64()}}
            )
        elif f.kind == "pdf":
            source = {"type": "base64", "media_type": "application/pdf", "data": f.base64()}
            blocks.append({"type": "document", "source": source, "title": f.name})
        else:
            source = {"type": "text", "media_type": "text/plain", "data": f.text}
            blocks.append({"type": "document", "source": source, "title": f.name})
    return blocks

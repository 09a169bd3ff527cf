"""Documents to passages: the text of each page cut into paragraphs (and a long paragraph into
sentences), each remembering where in its page it began."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from html.parser import HTMLParser

import pypdf
from pypdf.errors import PyPdfError

from cortadel_server.errors import ValidationFailed

#: a passage holds at most this many characters (a longer paragraph is cut at sentence ends)
PASSAGE_CHARS = 1200
#: a paragraph of fewer words is a heading or a label, not a statement
MIN_WORDS = 3

DOCUMENT_TYPES = ("text/plain", "text/markdown", "text/html", "application/pdf")

_PARAGRAPH = re.compile(r"\S(?:.*?\S)??(?=\s*\n\s*\n|\s*\Z)", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_MARKDOWN_MARKS = re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]+|[-*+][ \t]+|>[ \t]?|\d+[.)][ \t]+)", re.MULTILINE)
#: HTML elements whose end is a paragraph break, and those whose text is no content
_BLOCKS = {"p", "div", "section", "article", "li", "ul", "ol", "table", "tr", "h1", "h2", "h3", "h4", "h5", "h6",
           "br", "blockquote", "pre", "header", "footer", "main", "title"}
_HIDDEN = {"script", "style", "head", "noscript", "template"}


@dataclass(frozen=True)
class Passage:
    text: str
    #: 1-based page of a PDF; None for other documents
    page: int | None
    #: characters from the start of the page's text (a PDF), of the visible text (HTML) or of the
    #: document (plain text, Markdown) to where the passage begins
    offset: int


@dataclass(frozen=True)
class Document:
    passages: list[Passage]
    #: pages of a PDF; None for other documents
    pages: int | None


def read_document(media_type: str, data: bytes) -> Document:
    """The passages of a document of one of ``DOCUMENT_TYPES``."""
    if media_type == "application/pdf":
        pages = _pdf_pages(data)
        return Document([p for number, text in enumerate(pages, 1) for p in passages(text, number)], len(pages))
    text = _decode(data)
    if media_type == "text/html":
        text = html_text(text)
    elif media_type == "text/markdown":
        text = _MARKDOWN_MARKS.sub(lambda mark: " " * len(mark.group()), text)  # blanked, so offsets stay the file's
    return Document(passages(text, None), None)


def passages(text: str, page: int | None) -> list[Passage]:
    """Each paragraph of ``text`` (cut at sentence ends when longer than ``PASSAGE_CHARS``), but
    those too short to state anything (headings, list bullets of one word)."""
    return [
        Passage(piece, page, offset)
        for match in _PARAGRAPH.finditer(text)
        for offset, piece in _pieces(" ".join(match.group().split()), match.start())
        if len(piece.split()) >= MIN_WORDS
    ]


def _pieces(paragraph: str, offset: int) -> list[tuple[int, str]]:
    """A paragraph, or its sentences (then hard cuts) when it is longer than a passage. The offset
    of each piece is approximate inside a paragraph whose whitespace was folded."""
    if len(paragraph) <= PASSAGE_CHARS:
        return [(offset, paragraph)]
    pieces: list[tuple[int, str]] = []
    position = 0
    for sentence in _SENTENCE_END.split(paragraph):
        for cut in range(0, len(sentence), PASSAGE_CHARS):
            pieces.append((offset + position + cut, sentence[cut : cut + PASSAGE_CHARS]))
        position += len(sentence) + 1
    return pieces


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValidationFailed({"data": ["A text document must be UTF-8"]}) from None


def _pdf_pages(data: bytes) -> list[str]:
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ValidationFailed({"data": ["The PDF is encrypted; send it without a password"]})
        return [page.extract_text() or "" for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:  # pypdf raises these on broken files
        raise ValidationFailed({"data": [f"Not a readable PDF: {exc}"]}) from None


def html_text(markup: str) -> str:
    """The visible text of an HTML page, a blank line after every block."""
    parser = _TextOf()
    parser.feed(markup)
    parser.close()
    return "".join(parser.chunks)


class _TextOf(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self._hidden += 1
        elif tag in _BLOCKS:
            self.chunks.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag in _BLOCKS:
            self.chunks.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.chunks.append(data)

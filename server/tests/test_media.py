"""Media over HTTP and MCP: documents (text, Markdown, HTML, real PDFs made here) become facts that
keep their page and offset; images are remembered by a caption, the caller's or a vision model's;
limits and types answer clear 4xx errors."""

from __future__ import annotations

import base64
import hashlib
import io
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pypdf
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from support.scripted_openai import Reply, ScriptedOpenAI

from cortadel_server.testing import ServerProcess, database_for, running_server

#: the smallest valid PNG: one transparent pixel
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def pdf(pages: list[list[str]]) -> bytes:
    """A PDF with one page per list, each line of text drawn in Helvetica, written object by object."""
    objects: list[bytes] = []
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    font = 3 + 2 * len(pages)
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    for i, lines in enumerate(pages):
        drawn = " ".join(f"({line}) Tj 0 -20 Td" for line in lines)
        stream = f"BT /F1 12 Tf 72 720 Td {drawn} ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def post(base: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{base}/api/v1/media", json=body, timeout=60)


def detail(base: str, user: str, memory_id: str) -> dict[str, Any]:
    response = httpx.get(f"{base}/api/v1/memories/{memory_id}", params={"user_id": user}, timeout=30)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_a_pdf_made_here_becomes_facts_with_their_page_and_offset(server: ServerProcess, user: str) -> None:
    document = pdf([["The quarterly budget is forty thousand euros."], ["The launch review is held in Lisbon."]])
    assert [p.extract_text().strip() for p in pypdf.PdfReader(io.BytesIO(document)).pages] == [
        "The quarterly budget is forty thousand euros.", "The launch review is held in Lisbon."]
    response = post(server.base_url, {"user_id": user, "name": "plan.pdf", "data": base64.b64encode(document).decode()})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["name"], body["media_type"], body["kind"], body["pages"], body["passages"]) == (
        "plan.pdf", "application/pdf", "document", 2, 2)
    assert [(r["event"], r["memory"], r["page"], r["offset"]) for r in body["results"]] == [
        ("ADD", "The quarterly budget is forty thousand euros.", 1, 0),
        ("ADD", "The launch review is held in Lisbon.", 2, 0),
    ]
    stored = detail(server.base_url, user, body["results"][1]["id"])
    assert stored["metadata_"] == {"media": {"id": body["media_id"], "name": "plan.pdf", "type": "application/pdf",
                                             "kind": "document", "page": 2, "offset": 0}}
    found = httpx.post(f"{server.base_url}/api/v1/memories/search",
                       json={"user_id": user, "query": "where is the launch review", "top_k": 1}).json()
    assert found["results"][0]["id"] == body["results"][1]["id"]


def test_markdown_and_html_passages_keep_their_offsets(server: ServerProcess, user: str) -> None:
    markdown = "# Team\n\nDana leads the design team.\n\n- Short\n\nThe office moved to Porto in May."
    body = post(server.base_url, {"user_id": user, "name": "team.md", "text": markdown}).json()
    assert (body["media_type"], body["pages"], body["passages"]) == ("text/markdown", None, 2)
    assert [(r["memory"], r["page"], r["offset"]) for r in body["results"]] == [
        ("Dana leads the design team.", None, 8),
        ("The office moved to Porto in May.", None, 46),
    ]
    html = ("<html><head><title>x</title><script>var secret = 'never stored';</script></head>"
            "<body><p>The build server runs <b>nightly</b> at two.</p></body></html>")
    page = post(server.base_url, {"user_id": user, "name": "notes", "media_type": "text/html; charset=utf-8", "text": html}).json()
    assert [(r["event"], r["memory"]) for r in page["results"]] == [("ADD", "The build server runs nightly at two.")]
    assert page["media_type"] == "text/html"


def test_an_image_is_remembered_by_the_callers_caption_or_refused_without_one(server: ServerProcess, user: str) -> None:
    data = base64.b64encode(PNG).decode()
    body = post(server.base_url, {"user_id": user, "name": "whiteboard.png", "data": data,
                                  "caption": "The whiteboard lists three release blockers."}).json()
    assert (body["kind"], body["caption"], body["captioned_by"], body["passages"]) == (
        "image", "The whiteboard lists three release blockers.", "caller", 1)
    (result,) = body["results"]
    assert (result["event"], result["memory"]) == ("ADD", "The whiteboard lists three release blockers.")
    assert detail(server.base_url, user, result["id"])["metadata_"]["media"] == {
        "id": body["media_id"], "name": "whiteboard.png", "type": "image/png", "kind": "image", "bytes": len(PNG),
        "sha256": hashlib.sha256(PNG).hexdigest(), "captioned_by": "caller"}

    refused = post(server.base_url, {"user_id": user, "name": "whiteboard.png", "data": data})
    assert refused.status_code == 400
    assert refused.json()["errors"] == {"caption": [
        ("An image needs a caption: send one, or configure a vision model (CORTADEL_VISION_MODEL with "
        "CORTADEL_LLM_URL) to write it")]}
    fake = post(server.base_url, {"user_id": user, "name": "x.png", "data": base64.b64encode(b"GIF89a....").decode(), "caption": "c"})
    assert (fake.status_code, fake.json()["errors"]) == (400, {"data": ["The bytes are not a image/png image"]})


def test_bad_uploads_get_clear_4xx_answers(server: ServerProcess, user: str) -> None:
    unsupported = post(server.base_url, {"user_id": user, "name": "sheet.xlsx", "data": "AAAA"})
    assert unsupported.status_code == 415
    assert unsupported.json() == {
        "status": 415, "code": "unsupported_media_type", "detail": None,
        "message": "Unsupported media type 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': send one "
                   "of text/plain, text/markdown, text/html, application/pdf, image/png, image/jpeg, image/gif, image/webp.",
    }
    both = post(server.base_url, {"user_id": user, "name": "a.txt", "text": "x y z", "data": "eHl6"})
    assert (both.status_code, both.json()["errors"]) == (
        400, {"data": ["Send the document as `text` or the file as base64 `data`, exactly one of them"]})
    not_base64 = post(server.base_url, {"user_id": user, "name": "a.pdf", "data": "%%%"})
    assert (not_base64.status_code, not_base64.json()["errors"]) == (400, {"data": ["Not valid base64"]})
    not_ascii = post(server.base_url, {"user_id": user, "name": "a.pdf", "data": "\u00fcber"})  # found by the schema fuzz: was a 500
    assert (not_ascii.status_code, not_ascii.json()["errors"]) == (400, {"data": ["Not valid base64"]})
    broken = post(server.base_url, {"user_id": user, "name": "a.pdf", "data": base64.b64encode(b"%PDF-1.4 nothing").decode()})
    assert broken.status_code == 400 and broken.json()["errors"]["data"][0].startswith("Not a readable PDF: ")
    empty = post(server.base_url, {"user_id": user, "name": "blank.pdf", "data": base64.b64encode(pdf([[]])).decode()})
    assert (empty.status_code, empty.json()["errors"]) == (
        400, {"data": ["The document holds no text to remember (a scanned PDF needs OCR first)"]})
    unknown_field = post(server.base_url, {"user_id": user, "name": "a.txt", "text": "x y z", "mediaType": "text/plain"})
    assert unknown_field.status_code == 400 and "mediaType" in unknown_field.json()["errors"]


def test_size_limit_is_a_413_that_names_the_setting(tmp_path: Path, backend: str) -> None:
    with running_server({"CORTADEL_MAX_MEDIA_BYTES": "2048"}, data=tmp_path / "c.db", database_url=database_for(backend)) as server:
        too_big = post(server.base_url, {"user_id": "u", "name": "big.txt", "text": "word " * 500})
        assert too_big.status_code == 413
        assert too_big.json()["message"] == "The upload has 2500 bytes; at most 2048 are taken (CORTADEL_MAX_MEDIA_BYTES)."
        body_limit = post(server.base_url, {"user_id": "u", "name": "big.txt", "text": "word " * 2000})
        assert (body_limit.status_code, body_limit.json()["code"]) == (413, "payload_too_large")


def test_a_configured_vision_model_writes_the_caption(tmp_path: Path, backend: str) -> None:
    with ScriptedOpenAI() as api:
        api.enqueue("/v1/chat/completions", Reply.chat({"caption": "A  red bicycle leaning on a blue door."}))
        env = {"CORTADEL_LLM_URL": api.v1_url, "CORTADEL_VISION_MODEL": "vision-1"}
        with running_server(env, data=tmp_path / "c.db", database_url=database_for(backend)) as server:
            body = post(server.base_url, {"user_id": "u", "name": "bike.png", "data": base64.b64encode(PNG).decode()}).json()
    assert (body["caption"], body["captioned_by"]) == ("A red bicycle leaning on a blue door.", "vision-1")
    assert [r["memory"] for r in body["results"]] == ["A red bicycle leaning on a blue door."]
    (request,) = api.requests_to("/v1/chat/completions")
    assert request.body["model"] == "vision-1"
    image = request.body["messages"][0]["content"][1]
    assert image == {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}}


def test_add_media_over_mcp(server: ServerProcess, user: str) -> None:
    async def run() -> tuple[str, dict[str, Any]]:
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            Client(streamable_http_client(f"{server.base_url}/mcp/claude/{user}", http_client=http), mode="legacy") as client,
        ):
            tools = await client.list_tools()
            assert "add_media" in [t.name for t in tools.tools]
            result = await client.call_tool("add_media", {
                "name": "minutes.pdf", "data": base64.b64encode(pdf([["The retro moved to Thursday mornings."]])).decode()})
            assert not result.is_error, result.content[0].text
            return str(result.content[0].text), dict(result.structured_content or {})

    text, data = anyio.run(run)
    (fact,) = data["results"]
    assert text == (f'Stored document "minutes.pdf" (application/pdf, 1 pages) as {data["media_id"]}:\n'
                    f'ADD {fact["id"]}: "The retro moved to Thursday mornings." (page 1, offset 0)')
    assert detail(server.base_url, user, fact["id"])["app_name"] == "claude"

"""End-to-end flows in chromium against a real server: facts added through the API are listed, the
search lab explains its hits, an edit shows both versions on the timeline, edit and delete from the
page are seen by the API, the keyboard reaches every control, and pages do not scroll
sideways at 390 px. Each page is photographed into docs/dashboard/."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from playwright.sync_api import Browser, Page, expect

from browser_tests.conftest import SECRET, screenshot
from cortadel_server.auth import mint_key
from cortadel_server.testing import ServerProcess

#: what an interactive control is, for the keyboard walk
CONTROLS = "a[href], button, input:not([type=hidden]), select, textarea"


def add(api: httpx.Client, user: str, text: str, **fields: Any) -> str:
    response = api.post("/api/v1/memories", json={"user_id": user, "text": text, "infer": False, **fields})
    assert response.status_code == 200, response.text
    memory_id: str = response.json()["id"]
    return memory_id


def seed(api: httpx.Client, user: str) -> dict[str, str]:
    return {
        "coffee": add(api, user, "User drinks flat whites, never before 9 am.", app="barista", tags=["food"],
                      timestamp="2026-09-01T08:00:00Z"),
        "team": add(api, user, "User leads the payments team at Northwind.", project="work", session_id="onboarding"),
        "script": add(api, user, 'User pasted <script>alert("stored")</script> into a note.'),
        "tuesdays": add(api, user, "User only ships to production on Tuesdays.", project="work"),
    }


def test_facts_added_through_the_api_are_listed(page: Page, api: httpx.Client) -> None:
    seed(api, "ada")
    page.goto("/ui/memories?user_id=ada")
    expect(page.get_by_role("heading", level=1)).to_have_text("Memories of ada")
    expect(page.locator("#count")).to_have_text("4 memories")
    expect(page.locator(".facts .text")).to_have_text([
        "User only ships to production on Tuesdays.",
        'User pasted <script>alert("stored")</script> into a note.',  # shown as text; the page fixture fails on a dialog
        "User leads the payments team at Northwind.",
        "User drinks flat whites, never before 9 am.",
    ])
    screenshot(page, "memories")
    page.get_by_label("Project").fill("work")
    page.get_by_label("Project").press("Enter")
    expect(page.locator(".facts .text")).to_have_text([
        "User only ships to production on Tuesdays.", "User leads the payments team at Northwind."])
    page.goto("/ui/users")
    expect(page.get_by_role("row", name="ada").get_by_role("cell")).to_have_text(
        ["ada", "4", "0", "0", "0", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")])
    screenshot(page, "users")


def test_the_search_lab_explains_each_hit(page: Page, api: httpx.Client) -> None:
    seed(api, "bea")
    page.goto("/ui/search?user_id=bea")
    page.get_by_label("Query").fill("when can we deploy to production?")
    page.get_by_label("Top k").fill("3")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#hits")).to_have_text("3 hits")
    first = page.locator(".hit").first
    expect(first.locator(".text")).to_have_text("User only ships to production on Tuesdays.")
    expect(first.locator("table.explain tbody tr").first).to_have_text("text1")
    expect(page.locator(".timings")).to_contain_text("fusion_ms")
    screenshot(page, "search")


def test_an_edit_keeps_both_versions_on_the_timeline_and_the_api_sees_it(page: Page, api: httpx.Client) -> None:
    ids = seed(api, "cy")
    page.goto(f"/ui/memory?user_id=cy&id={ids['team']}")
    page.get_by_label("Corrected text (saved as a new version)").fill("User leads the platform team at Northwind.")
    page.get_by_role("button", name="Save new version").click()
    expect(page.get_by_role("status")).to_have_text("Saved as a new version; the old one is kept in the history.")
    versions = page.locator(".timeline .version")
    expect(versions).to_have_count(2)
    expect(versions.nth(0)).to_contain_text(re.compile(r"User leads the payments team at Northwind\.\s+superseded"))
    expect(versions.nth(0)).to_contain_text("superseded by the next version")
    expect(versions.nth(1)).to_contain_text(re.compile(r"This version\s+active\s+User leads the platform team at Northwind\."))
    new_id = parse_qs(urlsplit(page.url).query)["id"][0]
    old = api.get(f"/api/v1/memories/{ids['team']}", params={"user_id": "cy"}).json()
    new = api.get(f"/api/v1/memories/{new_id}", params={"user_id": "cy"}).json()
    assert (old["state"], old["superseded_by"]) == ("superseded", new_id)
    assert (new["text"], new["state"]) == ("User leads the platform team at Northwind.", "active")
    screenshot(page, "fact")


def test_delete_from_the_page_after_confirming(page: Page, api: httpx.Client) -> None:
    ids = seed(api, "dee")
    page.goto(f"/ui/memory?user_id=dee&id={ids['coffee']}")
    page.get_by_role("link", name="Delete this fact…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Delete a fact")
    screenshot(page, "delete")
    page.get_by_label("Yes, delete this fact for good").check()
    page.get_by_role("button", name="Delete").click()
    expect(page.get_by_role("status")).to_have_text("Deleted for good.")
    expect(page.locator("#count")).to_have_text("3 memories")
    assert api.get(f"/api/v1/memories/{ids['coffee']}", params={"user_id": "dee"}).status_code == 404


def test_invalidate_and_point_in_time(page: Page, api: httpx.Client) -> None:
    ids = seed(api, "eve")
    page.goto(f"/ui/memory?user_id=eve&id={ids['coffee']}")
    page.get_by_label("No longer true since (empty: now)").fill("2026-10-01T00:00:00Z")
    page.get_by_role("button", name="Invalidate").click()
    expect(page.get_by_role("status")).to_have_text("Marked as no longer true.")
    assert api.get(f"/api/v1/memories/{ids['coffee']}", params={"user_id": "eve"}).json()["invalid_at"] == "2026-10-01T00:00:00.000Z"
    page.goto("/ui/memories?user_id=eve")
    page.get_by_label("State").select_option(label="only invalidated")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#count")).to_have_text("1 memory")
    expect(page.locator(".facts .text")).to_have_text(["User drinks flat whites, never before 9 am."])
    expect(page.locator(".facts .badge").first).to_have_text("invalidated")
    page.goto("/ui/memories?user_id=eve")
    page.get_by_label("True at (valid time)").fill("2026-09-15T00:00:00Z")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".facts .text")).to_contain_text(["User drinks flat whites, never before 9 am."])
    screenshot(page, "point-in-time")


def test_entities_and_system_pages(page: Page, api: httpx.Client) -> None:
    api.post("/api/v1/memories", json={"user_id": "fay", "text": "I visited Kyoto with Hiro Tanaka."})
    page.goto("/ui/entities?user_id=fay")
    for _ in range(50):  # the background job finds the entities
        if page.locator("table.entities").count():
            break
        page.wait_for_timeout(200)
        page.reload()
    page.get_by_role("link", name="kyoto").click()
    expect(page.locator(".facts .text")).to_have_text(["User visited Kyoto with Hiro Tanaka."])
    screenshot(page, "entities")
    page.goto("/ui/system")
    expect(page.get_by_role("status")).to_contain_text("Healthy")
    screenshot(page, "system")


def walk_with_tab(page: Page) -> list[str]:
    """Press Tab until focus comes back round; the ids (or text) of what got focus, in order."""
    reached: list[str] = []
    for _ in range(200):
        page.keyboard.press("Tab")
        name = page.evaluate("(() => { const e = document.activeElement; return e === document.body ? '' :"
                             " e.id || e.getAttribute('name') || e.textContent.trim(); })()")
        if reached and name == reached[0]:
            break
        reached.append(name)
    return reached


def test_the_keyboard_reaches_every_control_and_every_field_has_a_label(page: Page, api: httpx.Client) -> None:
    ids = seed(api, "gus")
    for url in ("/ui/memories?user_id=gus", f"/ui/memory?user_id=gus&id={ids['team']}", "/ui/search?user_id=gus&q=team",
                f"/ui/memory/delete?user_id=gus&id={ids['team']}", "/ui/entities?user_id=gus", "/ui/users", "/ui/system",
                "/ui/login"):
        page.goto(url)
        controls = page.evaluate(f"""Array.from(document.querySelectorAll({CONTROLS!r}))
            .filter(e => !e.disabled && e.offsetParent !== null)
            .map(e => e.id || e.getAttribute('name') || e.textContent.trim())""")
        reached = walk_with_tab(page)
        assert [c for c in controls if c not in reached] == [], url
        unlabelled = page.evaluate("""Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea'))
            .filter(e => e.labels.length === 0).map(e => e.name)""")
        assert unlabelled == [], url
    page.goto("/ui/memories?user_id=gus")
    page.keyboard.press("Tab")
    expect(page.locator(":focus")).to_have_text("Skip to content")
    page.keyboard.press("/")
    expect(page.get_by_label("Text")).to_be_focused()


def test_pages_fit_a_390_px_wide_screen(browser: Browser, server: ServerProcess, api: httpx.Client) -> None:
    ids = seed(api, "hal")
    context = browser.new_context(base_url=server.base_url, viewport={"width": 390, "height": 844})
    narrow = context.new_page()
    try:
        for name, url in (("memories-narrow", "/ui/memories?user_id=hal&state=all"),
                          ("fact-narrow", f"/ui/memory?user_id=hal&id={ids['team']}"),
                          ("search-narrow", "/ui/search?user_id=hal&q=production"), ("users-narrow", "/ui/users"),
                          ("system-narrow", "/ui/system"), ("entities-narrow", "/ui/entities?user_id=hal"),
                          ("delete-narrow", f"/ui/memory/delete?user_id=hal&id={ids['team']}"),
                          ("error-narrow", "/ui/memories?user_id=hal&as_of=yesterday"), ("login-narrow", "/ui/login")):
            narrow.goto(url)
            expect(narrow.get_by_role("heading", level=1)).to_be_visible()
            widths = narrow.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
            assert widths[1] == 390 and widths[0] <= widths[1], (url, widths)
            if name in ("memories-narrow", "fact-narrow", "system-narrow"):
                screenshot(narrow, name)
    finally:
        context.close()


def test_with_auth_a_users_key_signs_in_and_sees_only_that_user(browser: Browser, secured: ServerProcess) -> None:
    with httpx.Client(base_url=secured.base_url, timeout=30) as api:
        for user, text in (("ivy", "Ivy keeps bees."), ("jon", "Jon's door code is 1234.")):
            api.post("/api/v1/memories", json={"text": text, "infer": False},
                     headers={"Authorization": f"Bearer {mint_key(SECRET, user)}"})
    context = browser.new_context(base_url=secured.base_url, viewport={"width": 1280, "height": 900})
    visitor = context.new_page()
    try:
        visitor.goto("/ui/memories?user_id=jon")
        expect(visitor.get_by_role("heading", level=1)).to_have_text("Sign in")
        screenshot(visitor, "login")
        visitor.get_by_label("API key").fill(mint_key(SECRET, "ivy"))
        visitor.get_by_role("button", name="Sign in").click()
        expect(visitor.get_by_role("heading", level=1)).to_have_text("Memories of ivy")
        expect(visitor.locator(".facts .text")).to_have_text(["Ivy keeps bees."])
        visitor.goto("/ui/memories?user_id=jon")
        expect(visitor.get_by_role("alert")).to_contain_text("API key is not valid for user 'jon'")
        expect(visitor.locator("body")).not_to_contain_text("1234")
        screenshot(visitor, "forbidden")
        cookie = next(c for c in context.cookies() if c["name"] == "cortadel_key")
        assert (cookie["httpOnly"], cookie["sameSite"]) == (True, "Strict")
    finally:
        context.close()

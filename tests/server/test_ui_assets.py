"""The web UI's files: served from the package under a strict policy, the vendored ones pinned
(their checksums as ``THIRD_PARTY.md`` records them), all of them shipped in the wheel; and
``GET /search``, which the UI's search box asks."""

from __future__ import annotations

import hashlib
import re
import tomllib
from importlib.resources import files
from pathlib import Path

import httpx

import agentsession as ags
from agentsession.server.ui_page import ASSETS

ROOT = Path(__file__).resolve().parents[2]
STATIC = files("agentsession.server").joinpath("static")
#: What the page may load: the pinned files, by the checksum of the file as shipped.
PINNED = {
    "vendor/marked.umd.js": "f8c7f128939415995e2219e8a84bec42fab27f5980d22e361339e6901da5eadf",
    "vendor/purify.min.js": "f69a46022ab1f53e969c8ebbca98172c8995785a9b3be72ea4a12d25b1a1bf67",
}


def test_vendored_files_match_their_recorded_checksums_and_licenses() -> None:
    notice = STATIC.joinpath("vendor", "THIRD_PARTY.md").read_text()
    for name, digest in PINNED.items():
        data = STATIC.joinpath(*name.split("/")).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, name
        assert digest in notice and f"`{name.split('/')[1]}`" in notice
    assert "marked v18.3.0" in STATIC.joinpath("vendor", "marked.umd.js").read_text()[:200]
    assert "DOMPurify 3.5.0" in STATIC.joinpath("vendor", "purify.min.js").read_text()[:200]
    for license_file in ("LICENSE.marked", "LICENSE.dompurify"):
        assert "License" in STATIC.joinpath("vendor", license_file).read_text()


def test_the_static_files_are_package_data() -> None:
    """Every served file and license matches a package-data pattern, so the wheel holds it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["agentsession"]
    shipped = [*ASSETS, "vendor/LICENSE.marked", "vendor/LICENSE.dompurify"]
    for name in shipped:
        path = Path("server/static") / name
        assert any(path.match(p) and len(path.parts) == len(Path(p).parts) for p in patterns), name
        assert STATIC.joinpath(*name.split("/")).is_file(), name


async def test_the_page_loads_only_its_own_files_under_a_policy_without_inline_code(
    tmp_path: Path,
) -> None:
    runtime = ags.Runtime(
        store=ags.MemoryStore(), model=ags.ScriptedModel(["hi"]), project_dir=tmp_path
    )
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        page = await client.get("/")
        loaded = re.findall(r'(?:src|href)="(/ui/[^"]+)"', page.text)
        answers = {url: await client.get(url) for url in loaded}
        etag = answers[loaded[0]].headers["etag"]
        again = await client.get(loaded[0], headers={"If-None-Match": etag})
        missing = await client.get("/ui/../ui_page.py")
        unlisted = await client.get("/ui/vendor/LICENSE.marked")
    await runtime.close()
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "connect-src 'self'" in policy and "frame-ancestors 'none'" in policy
    # No inline script, style or handler: the policy would refuse them.
    assert not re.search(r"<script(?![^>]*\bsrc=)", page.text)
    assert "<style" not in page.text and not re.search(r"\son[a-z]+=", page.text)
    assert {url.split("?")[0] for url in loaded} == {f"/ui/{name}" for name in ASSETS} - {
        "/ui/vendor/THIRD_PARTY.md"
    }
    for url, answer in answers.items():
        assert answer.status_code == 200, url
        name = url.split("?")[0].removeprefix("/ui/")
        assert answer.content == STATIC.joinpath(*name.split("/")).read_bytes()
        assert answer.headers["content-type"].split(";")[0] in ("text/javascript", "text/css")
    assert again.status_code == 304
    assert missing.status_code == 404 and unlisted.status_code == 404


async def test_search_finds_the_callers_own_messages_only(tmp_path: Path) -> None:
    alice, bob = "alice-token-0123456789", "bob-token-0123456789ab"
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=ags.ScriptedModel(lambda request: "noted"),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )
    app = ags.server.create_app(runtime, tokens=[alice, bob])
    transport = httpx.ASGITransport(app=app)
    as_alice = {"Authorization": f"Bearer {alice}"}
    as_bob = {"Authorization": f"Bearer {bob}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        mine = (await client.post("/sessions", json={"title": "zoo"}, headers=as_alice)).json()
        theirs = (await client.post("/sessions", json={}, headers=as_bob)).json()
        for sid, who in ((mine["id"], as_alice), (theirs["id"], as_bob)):
            prompt = {"text": "the aardvark sleeps"}
            answer = await client.post(f"/sessions/{sid}/prompt", json=prompt, headers=who)
            assert answer.status_code == 200
        found = (await client.get("/search?q=aardvark", headers=as_alice)).json()
        nothing = (await client.get("/search?q=zebra", headers=as_alice)).json()
        empty = await client.get("/search?q=", headers=as_alice)
        anonymous = await client.get("/search?q=aardvark")
        documented = (await client.get("/openapi.json")).json()["paths"]
    await runtime.close()
    assert [(h["session_id"], h["title"], h["role"]) for h in found["hits"]] == [
        (mine["id"], "zoo", "user")
    ]
    assert "[aardvark]" in found["hits"][0]["snippet"]
    assert nothing["hits"] == []
    assert empty.status_code == 400 and anonymous.status_code == 401
    assert "/search" in documented


async def test_the_reference_pages_policy_allows_its_own_style_and_nothing_else(
    tmp_path: Path,
) -> None:
    """``/docs`` styles itself inline: its policy names that style's digest (without it the
    server's ``default-src 'none'`` leaves the page unstyled) and allows no script at all;
    ``/openapi.json`` is JSON that no browser sniffs into anything else."""
    import base64

    runtime = ags.Runtime(
        store=ags.MemoryStore(), model=ags.ScriptedModel(["hi"]), project_dir=tmp_path
    )
    transport = httpx.ASGITransport(app=ags.server.create_app(runtime))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        docs = await client.get("/docs")
        document = await client.get("/openapi.json")
    await runtime.close()
    assert docs.headers["content-type"] == "text/html; charset=utf-8"
    styles = re.findall(r"<style>(.*?)</style>", docs.text, re.S)
    assert len(styles) == 1 and "<script" not in docs.text
    digest = base64.b64encode(hashlib.sha256(styles[0].encode()).digest()).decode()
    policy = docs.headers["content-security-policy"]
    assert f"style-src 'sha256-{digest}'" in policy
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert "script-src" not in policy and "unsafe-inline" not in policy
    assert document.headers["content-type"] == "application/json"
    assert document.headers["x-content-type-options"] == "nosniff"
    assert document.headers["content-security-policy"].startswith("default-src 'none'")


async def test_the_routes_without_a_token_answer_as_the_openapi_document_says(
    tmp_path: Path,
) -> None:
    """The page, its files, ``/docs`` and ``/openapi.json`` need no token but still refuse a
    host name the server does not serve: that 403 is documented (the conftest checks every
    response against the document), the UI's files are a documented route, and a file it
    does not have is a ``NotFoundError`` as an unknown route is."""
    runtime = ags.Runtime(
        store=ags.MemoryStore(), model=ags.ScriptedModel(["hi"]), project_dir=tmp_path
    )
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        document = (await client.get("/openapi.json")).json()
        refused = [
            await client.get(path, headers={"Host": "evil.example"})
            for path in ("/", "/docs", "/openapi.json", "/ui/app.js")
        ]
        script = await client.get("/ui/app.js")
        missing = await client.get("/ui/nothing.js")
    await runtime.close()
    assert "/ui/{file}" in document["paths"]
    assert [r.status_code for r in refused] == [403] * 4
    assert script.status_code == 200
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NotFoundError"

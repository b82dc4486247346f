"""The secrets sweep (issue 17): every credential shape planted, every exit a run has, 0 copies anywhere.

One suite writes every output at once (JSON, JUnit, HTML, the SQLite store, the console, the GitHub step summary,
the agents' checkpoints file); then `niceeval show` and the viewer's pages are read too, and all of it is searched
for each planted value.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from niceeval.store import Store
from niceeval.testing import LLMServer, Reply
from niceeval.web import Access, ViewerSettings, create_app

from ._project import Project

ENV_KEY = "sk-test-envkey-0123456789abcdef"
PLANTED = {
    "environment key": ENV_KEY,
    "bearer token": "eyJhbGciOiJIUzI1NiJ9.bearerpayload",
    "sk-proj key": "sk-proj-Zq8vN2xLmK4pR7tY1wE3uI9oAplanted",
    "AWS access key": "AKIAIOSFODNN7PLANTED",
    "x-api-key value": "xapikeyvalue-7f3a9c2e1d",
    "database URL password": "hunter2-db-password",
    "URL ?token=": "urltoken-5e6f7a8b9c0d",
    "URL ?access_token=": "accesstoken-1a2b3c4d5e6f",
    "GitHub token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
}
LEAKY_TEXT = (
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.bearerpayload; key sk-proj-Zq8vN2xLmK4pR7tY1wE3uI9oAplanted; "
    "aws AKIAIOSFODNN7PLANTED; x-api-key: xapikeyvalue-7f3a9c2e1d; "
    "DATABASE_URL=postgresql://app:hunter2-db-password@db.internal:5432/app; "
    "gh ghp_abcdefghijklmnopqrstuvwxyz0123456789"
)

CONFIG = f"""\
import os

from niceeval import define_config


def leaky(message):
    return {LEAKY_TEXT!r} + " env " + os.environ["OPENAI_API_KEY"]


config = define_config(agent=leaky)
"""

EVALS = """\
import os

from niceeval import define_eval
from niceeval.agents import http_agent, openai_agent
from niceeval.expect import includes

SERVICE = http_agent(
    "http://127.0.0.1:9/chat?token=urltoken-5e6f7a8b9c0d&access_token=accesstoken-1a2b3c4d5e6f", timeout=5
)


@define_eval
async def agent_echoes_every_shape(t):
    await t.send("hi")
    t.check(t.reply, includes("nothing like this"))


@define_eval(agent=SERVICE)
async def service_with_a_token_in_its_url_is_down(t):
    await t.send("hi")


@define_eval
async def eval_raises_with_every_shape(t):
    raise RuntimeError("failed: " + t.__class__.__name__ + " " + LEAK)


@define_eval(agent=openai_agent("openai/gpt-test"))
async def conversation_holds_the_key(t):
    await t.send("my key is " + os.environ["OPENAI_API_KEY"] + " and " + LEAK)


LEAK = os.environ["LEAK"]
"""

BROKEN = """\
import os

raise ImportError("cannot import: " + os.environ["LEAK"])
"""


def _every_file_written(project: Project, written: set[Path]) -> list[Path]:
    """Every file below the project and the reports folder, but the project's own sources (which plant)."""
    return [p for folder in (project.root, project.out) for p in folder.rglob("*") if p.is_file() and p not in written]


def _viewer_pages(store_path: Path) -> str:
    with Store.open(f"sqlite:///{store_path}") as store:
        (info,) = store.runs()
        eval_ids = [p.id for p in store.planned(info.id)]
        client = TestClient(
            create_app(ViewerSettings(store=store, access=Access(token=None, loopback=True))),
            base_url="http://127.0.0.1:7575",
        )
        urls = ["/", f"/runs/{info.id}", *(f"/runs/{info.id}/eval?id={e}&run=0" for e in eval_ids)]
        pages = [client.get(url) for url in urls]
    assert [page.status_code for page in pages] == [200] * len(urls)
    assert "conversation_holds_the_key" in pages[1].text
    return "\n".join(page.text for page in pages)


@pytest.mark.slow
def test_no_planted_credential_reaches_any_output(project: Project, llm_server: LLMServer, tmp_path: Path) -> None:
    llm_server.set_script([Reply(text="noted: " + LEAKY_TEXT)])
    step_summary = tmp_path / "step-summary.md"
    env = {
        "OPENAI_API_KEY": ENV_KEY,
        "OPENAI_BASE_URL": llm_server.base_url,
        "LEAK": LEAKY_TEXT + " env " + ENV_KEY,
        "GITHUB_STEP_SUMMARY": str(step_summary),
    }
    sources = {
        project.write("niceeval.config.py", CONFIG),
        project.write("evals/leaks.py", EVALS),
        project.write("evals/broken.py", BROKEN),
    }
    html = project.out / "report.html"
    result = project.run("--html", str(html), "--github", env=env)
    assert result.code == 2, result.output  # a module failed to load
    report = result.report()
    assert {e["id"].rsplit("::")[-1] for e in report["evals"]} >= {"conversation_holds_the_key"}
    service = result.eval("service_with_a_token_in_its_url_is_down")["runs"][0]["error"]["message"]
    assert "token=[redacted]" in service and "127.0.0.1:9" in service  # the URL is still there to debug with
    store_path = project.root / ".niceeval" / "results.db"
    checkpoints = project.root / ".niceeval" / "checkpoints.sqlite"
    assert html.is_file() and step_summary.is_file() and checkpoints.is_file() and store_path.is_file()
    shown = project.cli("show", "latest", env=env)
    everything = [(str(p), p.read_bytes().decode("utf-8", "replace")) for p in _every_file_written(project, sources)]
    everything += [
        ("step summary", step_summary.read_text(encoding="utf-8")),
        ("console", result.output),
        ("niceeval show", shown.output),
        ("viewer", _viewer_pages(store_path)),
    ]
    leaks = [f"{shape} in {where}" for where, text in everything for shape, value in PLANTED.items() if value in text]
    assert leaks == []

"""The secrets sweep (issue 17): every credential shape planted, every exit a run has, 0 copies anywhere.

One suite writes every output at once (JSON, JUnit, HTML, the SQLite store, the console, the GitHub step summary,
the agents' checkpoints file); then `niceeval show` and the viewer's pages are read too, and all of it is searched
for every 8 characters in a row of each planted value. Replies long enough to be shortened hold each credential
shape before, across and after each cut of the shortened value (issue 41: cut first, a secret no longer matched).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from niceeval.store import Store
from niceeval.testing import LLMServer, Reply
from niceeval.web import Access, ViewerSettings, create_app

from ._project import Project

ENV_KEY = "sk-test-envkey-Q7w3Zr9Kx2Lm5Np8"
DECLARED = "correcthorsebatterystaple"
"""A secret by its variable's name (`DEPLOY_PASSWORD`) that looks like no credential."""
PLANTED = {
    "environment key": ENV_KEY,
    "declared secret": DECLARED,
    "bearer token": "eyJhbGciOiJIUzI1NiJ9.bearerpayload",
    "basic credentials": "QWxhZGRpbjpvcGVuIHNlc2FtZQ==",
    "token scheme": "tk9f8e7d6c5b4a3Z2Y1X",
    "sk-proj key": "sk-proj-Zq8vN2xLmK4pR7tY1wE3uI9oAplanted",
    "AWS access key": "AKIAIOSFODNN7PLANTED",
    "x-api-key value": "xapikeyvalue-7f3a9c2e1d",
    "assigned password": "swordfishes",
    "database URL password": "Hu7nt3r2-dbPw9xQ",
    "URL ?token=": "urltoken-5e6f7a8b9c0d",
    "URL ?access_token=": "accesstoken-1a2b3c4d5e6f",
    "GitHub token": "ghp_R8s2Kq7Vw3Xz9Lm4Np6Tb1Yc5Hd0Jf",
    "Slack token": "xoxb-9988776655-Qw3Er5Ty7Ui9",
}
LEAKY_TEXT = (
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.bearerpayload; key sk-proj-Zq8vN2xLmK4pR7tY1wE3uI9oAplanted; "
    "aws AKIAIOSFODNN7PLANTED; x-api-key: xapikeyvalue-7f3a9c2e1d; "
    "DATABASE_URL=postgresql://app:Hu7nt3r2-dbPw9xQ@db.internal:5432/app; "
    "gh:\nghp_R8s2Kq7Vw3Xz9Lm4Np6Tb1Yc5Hd0Jf"  # on a line of its own: escaped in JSON, `\nghp_` has no word boundary
)
SHAPES = {  # each credential shape the redactor knows, in its context: (before, secret, after)
    "bearer": ("Authorization: Bearer ", PLANTED["bearer token"], ""),
    "basic": ("Authorization: Basic ", PLANTED["basic credentials"], ""),
    "scheme": ("Token ", PLANTED["token scheme"], ""),
    "header": ("x-api-key: ", PLANTED["x-api-key value"], ""),
    "assigned": ("password=", PLANTED["assigned password"], ""),
    "query": ("https://api.example/v1?access_token=", PLANTED["URL ?access_token="], "&page=2"),
    "sk": ("key ", PLANTED["sk-proj key"], ""),
    "aws": ("aws ", PLANTED["AWS access key"], ""),
    "github": ("gh ", PLANTED["GitHub token"], ""),
    "slack": ("slack ", PLANTED["Slack token"], ""),
    "url": ("postgresql://app:", PLANTED["database URL password"], "@db.internal:5432/prod"),
    "declared": ("env ", DECLARED, ""),
    "environment": ("env ", ENV_KEY, ""),
}

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
SHAPES = {shapes!r}
SHOWN_HEAD, SHOWN_TAIL = 77, 78  # what a shortened reply keeps of its start and of its end


def planted(shape, cut, before):
    # A long reply holding `shape` with `before` of its secret's characters before the `cut` (head or tail).
    prefix, secret, suffix = SHAPES[shape]
    if cut == "head":
        fill = SHOWN_HEAD - before - len(prefix)
        return "." * (fill - 1) + " " * (fill > 0) + prefix + secret + suffix + " " + "." * 200
    after = SHOWN_TAIL + before - len(secret) - len(suffix) - 1
    return "." * 199 + " " + prefix + secret + suffix + " " + "." * after


CUT_CASES = [
    {{"id": f"{{shape}}-{{cut}}-{{before}}", "shape": shape, "cut": cut, "before": before}}
    for shape, (_, secret, _) in SHAPES.items()
    for cut in ("head", "tail")
    for before in sorted({{0, 1, len(secret) // 2, len(secret) - 1, len(secret)}})
]


@define_eval(cases=CUT_CASES, agent=lambda message: message)
async def long_reply_holds_a_secret_at_the_cut(t):
    await t.send(planted(t.case["shape"], t.case["cut"], t.case["before"]))
    t.check(t.reply, includes("nothing like this"))
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
        "DEPLOY_PASSWORD": DECLARED,
        "GITHUB_STEP_SUMMARY": str(step_summary),
    }
    sources = {
        project.write("niceeval.config.py", CONFIG),
        project.write("evals/leaks.py", EVALS.format(shapes=SHAPES)),
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
    shortened = result.eval("long_reply_holds_a_secret_at_the_cut[aws-head-10]")["runs"][0]["assertions"][0]
    assert "..." in shortened["actual"] and "[redacted]" in shortened["actual"]
    pieces = {shape: {value[i : i + 8] for i in range(len(value) - 7)} for shape, value in PLANTED.items()}
    leaks = [f"{shape} in {where}" for where, text in everything for shape in PLANTED if _any_in(pieces[shape], text)]
    assert leaks == []


def _any_in(pieces: set[str], text: str) -> bool:
    return any(piece in text for piece in pieces)

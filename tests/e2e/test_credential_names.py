"""Names that read like credentials are names: every credential keyword the redactor knows, followed by ordinary
words, as eval names, case ids, variant names and promptfoo test descriptions. The suite runs, every report and
the store keep each id as written, and the exit code is what the checks say (issue 41: an eval named "Basic
functionality test" ended the suite with a KeyError on the id the redactor had rewritten)."""

from __future__ import annotations

import html

import pytest

from niceeval.store import Store

from ._project import Project

EVAL_NAMES = [
    "Basic functionality test", "Bearer of good news", "Token refresh works", "Authorization: denied for guests",
    "Proxy-Authorization: forwarded upstream", "x-api-key: missing header", "api-key rotation-policy applies",
    "api_key: rotated nightly", "apikey: revoked afterwards", "access_token: expired yesterday",
    "access-token handling", "token: refreshed automatically", "secret: ingredients revealed",
    "password: forgotten again", "passwd: unchanged everywhere", "Password reset works",
]  # fmt: skip
FAILING = "Bearer of bad news"
CASE_IDS = ["Token refresh works", "Basic login flow", "password: forgotten twice", "Secret: ingredients listed"]
VARIANT_NAMES = ["Bearer-header", "password:forgotten", "api_key:rotated-nightly"]
DESCRIPTIONS = ["Token refresh works", "Authorization: Basic functionality", "password: forgotten again"]
DATASET = "Basic functionality of tokens"

ONE_EVAL = """
@define_eval(name={name!r})
async def eval_{index}(t):
    await t.send("hi")
    t.check(t.reply, includes({wanted!r}))
"""
DATASET_EVAL = f"""
@define_eval(name={DATASET!r}, cases=[{{"id": id}} for id in {CASE_IDS!r}], variants={{"auth": {VARIANT_NAMES!r}}})
async def dataset_eval(t):
    await t.send("case " + t.case["id"])
    t.check(t.reply, includes("echo: case"))
"""
PROMPTFOO = "prompts: ['{{q}}']\nproviders: [echo]\ntests:\n" + "".join(
    f"  - description: {description!r}\n    vars: {{q: hello}}\n    assert: [{{type: contains, value: hello}}]\n"
    for description in DESCRIPTIONS
)


def expected_ids() -> dict[str, str]:
    """Each eval id and the outcome its checks give it."""
    ids = {f"evals/names.py::{name}": "passed" for name in EVAL_NAMES}
    ids[f"evals/names.py::{FAILING}"] = "failed"
    for case in CASE_IDS:
        ids.update({f"evals/names.py::{DATASET}[{case}][auth={variant}]": "passed" for variant in VARIANT_NAMES})
    ids.update({f"promptfooconfig.yaml::dataset[{description}]": "passed" for description in DESCRIPTIONS})
    return ids


@pytest.mark.slow
def test_evals_cases_and_variants_named_like_credentials_keep_their_ids_everywhere(project: Project) -> None:
    evals = [ONE_EVAL.format(name=name, index=i, wanted="echo: hi") for i, name in enumerate(EVAL_NAMES)]
    evals.append(ONE_EVAL.format(name=FAILING, index="failing", wanted="good news"))
    project.write(
        "evals/names.py",
        "from niceeval import define_eval\nfrom niceeval.expect import includes\n" + "".join(evals) + DATASET_EVAL,
    )
    project.write("promptfooconfig.yaml", PROMPTFOO)
    html_path = project.out / "report.html"

    result = project.run("evals", "promptfooconfig.yaml", "--html", str(html_path), timeout=120)

    expected = expected_ids()
    assert result.code == 1, result.output  # the one failed check, nothing else
    report = result.report()
    assert {e["id"]: e["runs"][0]["outcome"] for e in report["evals"]} == expected
    assert (report["errors"], report["exit_code"]) == ([], 1)
    for eval_id in expected:
        assert eval_id in result.stdout, eval_id
    junit = {f"{c.get('file')}::{c.get('name')}" for c in result.junit().iter("testcase")}
    assert junit == set(expected)
    page = html.unescape(html_path.read_text(encoding="utf-8"))
    assert [eval_id for eval_id in expected if eval_id not in page] == []
    with Store.open(f"sqlite:///{project.root / '.niceeval' / 'results.db'}") as store:
        detail = store.run(report["run_id"])
        assert {r.eval_id: r.outcome for r in detail.eval_runs} == expected
        assert {p.id for p in store.planned(report["run_id"])} == set(expected)
        stored = store.eval_run(report["run_id"], f"evals/names.py::{DATASET}[{CASE_IDS[2]}][auth={VARIANT_NAMES[1]}]")
    assert (stored.case_id, stored.variant) == (CASE_IDS[2], {"auth": VARIANT_NAMES[1]})
    shown = project.cli("show", report["run_id"])
    assert [eval_id for eval_id in expected if eval_id not in shown.stdout] == []


def test_the_names_hold_every_keyword_the_redactor_knows() -> None:
    """The names above cover each credential keyword: a keyword added to the redactor is added here too."""
    from niceeval._core.redact import _MARKERS

    names = " ".join([*EVAL_NAMES, FAILING, *CASE_IDS, *VARIANT_NAMES, *DESCRIPTIONS, DATASET]).lower()
    words = [m for m in _MARKERS if len(m) > 4 or m in ("token", "basic")]  # key prefixes (sk-, AKIA) are no words
    assert [word for word in words if word not in names] == []

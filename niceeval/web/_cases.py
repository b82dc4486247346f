"""Test cases written in the browser: list, create, edit, delete (with history), validated in the form.

Forms work without JavaScript: "add round" and "remove round" are submit buttons that re-render the form with
what was typed. Every form carries the CSRF token (checked before anything is parsed into a case), and saves
name the version they edited, so a concurrent edit is refused instead of overwritten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote

from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from niceeval.store.cases import DEFAULT_THRESHOLD, MAX_ROUNDS, CaseBook, CaseError, UiCase, case_source, explain
from niceeval.web._pages import render
from niceeval.web._requests import store_of
from niceeval.web._security import CSRF_COOKIE, form_is_genuine

MAX_FORM_BYTES = 1_000_000
_LIST_SPLIT = re.compile(r"[,\s]+")


@dataclass(slots=True)
class Draft:
    """What the form holds, as typed (re-rendered with the errors when it does not validate)."""

    name: str = ""
    description: str = ""
    tags: str = ""
    tools: str = ""
    revival: bool = False
    rounds: list[dict[str, str]] = field(default_factory=lambda: [_blank_round()])
    version: int = 0

    @classmethod
    def of(cls, case: UiCase, version: int) -> Draft:
        return cls(
            name=case.name,
            description=case.description,
            tags=", ".join(case.tags),
            tools=", ".join(case.expected_tools),
            revival=case.revival,
            rounds=[{"prompt": r.prompt, "criteria": r.criteria, "threshold": f"{r.threshold:g}"} for r in case.rounds],
            version=version,
        )

    @classmethod
    def parse(cls, form: dict[str, str]) -> Draft:
        rounds = []
        for number in range(MAX_ROUNDS + 1):
            if f"round-{number}-prompt" not in form:
                break
            rounds.append({key: form.get(f"round-{number}-{key}", "") for key in ("prompt", "criteria", "threshold")})
        version = form.get("version", "0")
        return cls(
            name=form.get("name", "").strip(),
            description=form.get("description", ""),
            tags=form.get("tags", ""),
            tools=form.get("tools", ""),
            revival=form.get("revival") == "on",
            rounds=rounds or [_blank_round()],
            version=int(version) if version.isdigit() else 0,
        )

    def case(self) -> UiCase:
        """The case this draft describes; raises `ValidationError` with a message per field."""
        return UiCase.model_validate(
            {
                "name": self.name,
                "description": self.description.strip(),
                "tags": [t for t in _LIST_SPLIT.split(self.tags) if t],
                "expected_tools": [t for t in _LIST_SPLIT.split(self.tools) if t],
                "revival": self.revival,
                "rounds": [
                    {"prompt": r["prompt"], "criteria": r["criteria"], "threshold": r["threshold"].strip() or "0.7"}
                    for r in self.rounds
                ],
            }
        )


def _blank_round() -> dict[str, str]:
    return {"prompt": "", "criteria": "", "threshold": f"{DEFAULT_THRESHOLD:g}"}


def cases_page(request: Request) -> Response:
    """`/cases`: every case with its latest result."""
    store = store_of(request)
    cases = CaseBook(store).cases()
    latest = {c.case.name: next(iter(store.history(c.case.eval_id, limit=1)), None) for c in cases}
    return render(request, "cases.html", cases=cases, latest=latest, deleted=request.query_params.get("deleted"))


def case_page(request: Request) -> Response:
    """`/cases/{name}`: the case, its code, its recent results and its versions."""
    store = store_of(request)
    book = CaseBook(store)
    name = request.path_params["name"]
    stored = book.get(name)
    history = book.history(name)
    if stored is None and not history:
        raise HTTPException(404, f"there is no case named {name!r}.")
    return render(
        request,
        "case.html",
        name=name,
        stored=stored,
        code=case_source(stored.case) if stored else None,
        results=store.history(f"ui::{name}", limit=10),
        history=history,
        sources={v.version: case_source(v.case) for v in history},
    )


def new_case_form(request: Request) -> Response:
    """`GET /cases/new`: an empty form with one round."""
    return render(request, "case_form.html", draft=Draft(), errors={}, editing=False)


def edit_case_form(request: Request) -> Response:
    """`GET /cases/{name}/edit`: the form filled with the latest version."""
    stored = CaseBook(store_of(request)).get(request.path_params["name"])
    if stored is None:
        raise HTTPException(404, f"there is no case named {request.path_params['name']!r}.")
    return render(request, "case_form.html", draft=Draft.of(stored.case, stored.version), errors={}, editing=True)


async def save_new_case(request: Request) -> Response:
    """`POST /cases/new`: create, or re-render the form (more rounds, fewer rounds, errors)."""
    form = await _genuine_form(request)
    return await run_in_threadpool(_save, request, form, None)


async def save_edited_case(request: Request) -> Response:
    """`POST /cases/{name}/edit`: save a new version, or re-render the form."""
    form = await _genuine_form(request)
    return await run_in_threadpool(_save, request, form, request.path_params["name"])


async def delete_case(request: Request) -> Response:
    """`POST /cases/{name}/delete`: delete the case (its versions stay in its history)."""
    form = await _genuine_form(request)
    name = request.path_params["name"]
    version = form.get("version", "")
    book = CaseBook(store_of(request))
    try:
        await run_in_threadpool(book.delete, name, expected_version=int(version) if version.isdigit() else -1)
    except CaseError as exc:
        raise HTTPException(409, str(exc)) from None
    return RedirectResponse(f"/cases?deleted={quote(name)}", status_code=303)


def _save(request: Request, form: dict[str, str], editing: str | None) -> Response:
    draft = Draft.parse(form)
    if editing is not None:
        draft.name = editing  # a case keeps its name: its runs and history are filed under it
    action = form.get("action", "save")
    if action == "add_round" and len(draft.rounds) < MAX_ROUNDS:
        draft.rounds.append(_blank_round())
    elif action.startswith("remove_round-") and len(draft.rounds) > 1:
        index = action.removeprefix("remove_round-")
        if index.isdigit() and int(index) < len(draft.rounds):
            draft.rounds.pop(int(index))
    if action != "save":
        return render(request, "case_form.html", draft=draft, errors={}, editing=editing is not None)
    book = CaseBook(store_of(request))
    try:
        case = draft.case()
        if editing is None:
            book.create(case)
        else:
            book.update(case, expected_version=draft.version)
    except ValidationError as exc:
        errors = explain(exc)
        return render(
            request, "case_form.html", status_code=422, draft=draft, errors=errors, editing=editing is not None
        )
    except CaseError as exc:
        errors = {"case": str(exc)}
        return render(
            request, "case_form.html", status_code=409, draft=draft, errors=errors, editing=editing is not None
        )
    return RedirectResponse(f"/cases/{quote(case.name)}", status_code=303)


async def _genuine_form(request: Request) -> dict[str, str]:
    """The urlencoded form, once its CSRF token matched the browser's cookie (else a 403 page)."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise HTTPException(413, "this form is too large (over 1 MB); shorten the prompts or criteria.")
    form = dict(parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True))
    if not form_is_genuine(form.get("csrf"), request.cookies.get(CSRF_COOKIE, "")):
        raise HTTPException(
            403, "this form has expired or did not come from this viewer; reload the page and submit again."
        )
    return form

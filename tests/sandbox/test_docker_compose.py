"""`compose_sandbox(...)`: a Compose file read as the Docker sandbox it declares (workspace image or build, services
with command, environment, healthcheck as ready, depends_on as start order), and every key it cannot honour an
error naming the file, line, service, key and fix. The last tests start the pod on a real daemon."""

from __future__ import annotations

import textwrap
from pathlib import Path

import anyio
import pytest
from docker_helpers import BASE_IMAGE, containers, needs_docker

from niceeval import EvalContext, define_eval
from niceeval._core.errors import UsageError
from niceeval._run.discovery import EvalEntry
from niceeval._run.execute import ExecOptions, execute
from niceeval.expect import equals
from niceeval.sandbox import DockerEnvironment, DockerSandboxError, compose_sandbox, docker_sandbox, service
from niceeval.sandbox._docker_cli import SUITE_RUN
from niceeval.sandbox._docker_compose import compose_environment


def read(folder: Path, text: str, workspace: str = "app") -> DockerEnvironment:
    (folder / "compose.yaml").write_text(textwrap.dedent(text))
    declared = compose_sandbox("compose.yaml", workspace_service=workspace)
    return anyio.run(compose_environment, declared, (folder,))


def error_of(folder: Path, text: str, workspace: str = "app") -> str:
    with pytest.raises(DockerSandboxError) as raised:
        read(folder, text, workspace)
    return str(raised.value)


def test_services_keep_image_command_environment_healthcheck_and_order(tmp_path: Path) -> None:
    environment = read(
        tmp_path,
        """\
        version: "3.9"
        x-note: the author's own
        services:
          app:
            image: team/app:1
            command: ["ignored"]
            environment:
              DATABASE_URL: postgres://127.0.0.1/app
              DEBUG: true
            ports: ["8000:8000"]
            depends_on: [db]
          db:
            image: postgres:16
            environment: ["POSTGRES_PASSWORD=secret", "UNSET_HERE_NICEEVAL"]
            healthcheck:
              test: ["CMD", "pg_isready", "-h", "127.0.0.1"]
              interval: 2s
              retries: 5
              start_period: 1m
            networks: [backend]
          web:
            image: nginx
            command: nginx -g 'daemon off;'
            depends_on:
              db: {condition: service_healthy}
              app: {condition: service_started}
            healthcheck:
              test: curl -f http://127.0.0.1/ || exit 1
        networks:
          backend: {}
        """,
    )
    assert (environment.image, environment.dockerfile) == ("team/app:1", None)
    assert environment.env == {"DATABASE_URL": "postgres://127.0.0.1/app", "DEBUG": "true"}
    db, web = environment.services
    assert (db.name, db.image, db.command, db.env) == ("db", "postgres:16", (), {"POSTGRES_PASSWORD": "secret"})
    assert (db.ready, db.ready_timeout, db.depends_on) == ("pg_isready -h 127.0.0.1", 70.0, ())
    assert web.command == ("nginx", "-g", "daemon off;")
    assert (web.ready, web.ready_timeout) == ("curl -f http://127.0.0.1/ || exit 1", 90.0)
    assert web.depends_on == ("db",)  # the workspace's container always starts first


def test_the_workspace_service_may_be_built_relative_to_the_compose_file(tmp_path: Path) -> None:
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "App.dockerfile").write_text(f"FROM {BASE_IMAGE}\n")
    environment = read(
        tmp_path,
        """\
        services:
          app:
            build: {context: env, dockerfile: App.dockerfile}
        """,
    )
    assert environment.image is None
    assert (environment.dockerfile, environment.context) == (
        str(tmp_path / "env" / "App.dockerfile"),
        str(tmp_path / "env"),
    )


def test_cmd_shell_and_a_disabled_healthcheck(tmp_path: Path) -> None:
    environment = read(
        tmp_path,
        """\
        services:
          app: {image: a}
          one: {image: b, healthcheck: {test: ["CMD-SHELL", "test -f /ready"]}}
          two: {image: c, healthcheck: {test: ["CMD", "true"], disable: true}}
          three: {image: d, healthcheck: {test: ["NONE"]}}
        """,
    )
    assert [s.ready for s in environment.services] == ["test -f /ready", None, None]


def test_an_unsupported_key_names_file_line_service_key_and_fix(tmp_path: Path) -> None:
    message = error_of(
        tmp_path,
        """\
        services:
          app:
            image: a
          db:
            image: postgres
            volumes:
              - data:/var/lib/postgresql/data
        """,
    )
    assert message.startswith(f"{tmp_path / 'compose.yaml'}, line 6: service 'db': key 'volumes' is not supported")
    assert "COPY other files into the image" in message


def test_an_unsupported_build_key_and_top_level_key_are_named(tmp_path: Path) -> None:
    build = error_of(tmp_path, "services:\n  app:\n    build:\n      context: .\n      args: {A: 1}\n")
    assert "line 5: service 'app': key 'args' is not supported" in build and "ARG defaults" in build
    top = error_of(tmp_path, "services:\n  app: {image: a}\nvolumes:\n  data: {}\n")
    assert "line 3: key 'volumes' is not supported" in top


def test_a_one_off_dependency_is_refused_with_the_setup_alternative(tmp_path: Path) -> None:
    message = error_of(
        tmp_path,
        """\
        services:
          app: {image: a}
          migrate: {image: b}
          web:
            image: c
            depends_on:
              migrate:
                condition: service_completed_successfully
        """,
    )
    assert "line 8: service 'web': condition: 'service_completed_successfully' is not supported" in message
    assert "setup=[...]" in message


def test_variable_interpolation_is_refused(tmp_path: Path) -> None:
    message = error_of(tmp_path, "services:\n  app:\n    image: team/app:${TAG}\n")
    assert "line 3: services.app.image: 'team/app:${TAG}' uses ${...} variable interpolation" in message
    assert read(tmp_path, "services:\n  app:\n    image: a\n    command: echo $$HOME\n").image == "a"


def test_a_missing_workspace_service_a_bad_duration_and_a_cycle(tmp_path: Path) -> None:
    missing = error_of(tmp_path, "services:\n  web: {image: a}\n")
    assert "line 1: no service 'app' (it has ['web'])" in missing and "workspace_service=" in missing
    bad = "services:\n  app: {image: a}\n  db:\n    image: b\n    healthcheck: {interval: 2x}\n"
    duration = error_of(tmp_path, bad)
    assert "line 5: service 'db': healthcheck.interval" in duration and "'10s', '1m30s'" in duration
    cycle = error_of(
        tmp_path, "services:\n  app: {image: a}\n  a: {image: b, depends_on: [b]}\n  b: {image: c, depends_on: [a]}\n"
    )
    assert "services ['a', 'b'] cannot start: their depends_on form a cycle" in cycle
    neither = error_of(tmp_path, "services:\n  app: {command: [x]}\n")
    assert "line 2: service 'app' has neither image: nor build:" in neither


def test_a_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    declared = compose_sandbox("nowhere.yaml", workspace_service="app")
    with pytest.raises(DockerSandboxError, match="compose='nowhere.yaml'\\) does not exist"):
        anyio.run(compose_environment, declared, (tmp_path,))
    assert "is not valid YAML" in error_of(tmp_path, "services: [\n")


def test_service_dependencies_are_checked_where_declared() -> None:
    with pytest.raises(UsageError, match="service 'web' depends on 'db', which is not declared"):
        docker_sandbox(services=[service("web", image="a", depends_on=["db"])])
    looped = [service("a", image="a", depends_on=["b"]), service("b", image="b", depends_on=["a"])]
    with pytest.raises(UsageError, match="form a cycle"):
        docker_sandbox(services=looped)
    with pytest.raises(UsageError, match="a list of service names"):
        service("web", image="a", depends_on="db")


COMPOSE = f"""\
services:
  app:
    build: ./env
    environment:
      GREETING: hello from compose
    depends_on: [web]
  api:
    image: {BASE_IMAGE}
    command: python3 -m http.server 8001 --bind 127.0.0.1
    healthcheck:
      test: ["CMD", "python3", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8001/')"]
      interval: 1s
      retries: 20
  web:
    image: {BASE_IMAGE}
    # Starts only when the api answers: depends_on holds it back until the api's healthcheck passes.
    command: ["sh", "-c", "python3 -c \\"import urllib.request as u; u.urlopen('http://127.0.0.1:8001/')\\" && exec python3 -m http.server 8002 --bind 127.0.0.1"]
    depends_on:
      api: {{condition: service_healthy}}
    ports: ["8002:8002"]
    healthcheck:
      test: python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8002/')"
      interval: 1s
      retries: 20
"""  # noqa: E501


def run_compose_eval(project: Path, compose: str) -> tuple[str | None, str, list[str]]:
    (project / "compose.yaml").write_text(compose)
    seen: list[str] = []

    @define_eval(fixture="fixtures/app", sandbox=compose_sandbox("compose.yaml", workspace_service="app"))
    async def composed(t: EvalContext) -> None:
        probe = "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8002/').status)"
        seen.append((await t.sandbox.run_shell(f'echo "$GREETING"; cat /built.txt; python3 -c "{probe}"')).stdout)
        t.check(seen[-1], equals("hello from compose\nbuilt\n200\n"))

    entry = EvalEntry(id="x.py::composed", spec=composed)
    result = anyio.run(execute, entry, 0, ExecOptions(timeout=120, root=project))
    return (None if result.error is None else result.error.message), result.outcome, seen


def test_a_compose_file_runs_its_services_in_order_beside_the_built_workspace(tmp_path: Path) -> None:
    needs_docker()
    (tmp_path / "fixtures" / "app").mkdir(parents=True)
    (tmp_path / "fixtures" / "app" / "app.py").write_text("VALUE = 1\n")
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nRUN echo built > /built.txt\n")
    error, outcome, seen = run_compose_eval(tmp_path, COMPOSE)
    assert (error, outcome) == (None, "passed"), seen
    assert containers(f"niceeval.suite_run={SUITE_RUN}", "niceeval.eval=x.py::composed") == []


def test_a_compose_file_with_an_unsupported_key_errors_only_that_run(tmp_path: Path) -> None:
    needs_docker()
    (tmp_path / "fixtures" / "app").mkdir(parents=True)
    compose = f"services:\n  app:\n    image: {BASE_IMAGE}\n    volumes: [x:/x]\n"
    error, outcome, seen = run_compose_eval(tmp_path, compose)
    assert outcome == "failed" and seen == []
    assert error is not None and "line 4: service 'app': key 'volumes' is not supported" in error

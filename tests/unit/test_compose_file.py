"""docker-compose.yml and the Dockerfile stay valid and production-shaped.

No Docker engine runs here, so the compose file is parsed with a small reader for
the YAML subset it uses (block mappings and sequences, quoted and flow scalars,
anchors with ``<<`` merges); anything outside that subset fails the test, which
keeps the file simple. The checks are what an operator relies on: AOF on Redis,
two of web, worker and beat (the beats behind their leader lock), every service
configured from the environment, volumes declared.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
APP_SERVICES = ("migrate", "web", "worker", "beat", "pipeline")


class MiniYAML:
    """Reads the YAML subset of docker-compose.yml; raises ValueError on anything else."""

    def __init__(self, text: str) -> None:
        self.lines: list[tuple[int, str, int]] = []
        for number, raw in enumerate(text.splitlines(), 1):
            content = self._strip_comment(raw).rstrip()
            if content.strip():
                if "\t" in raw[: len(raw) - len(raw.lstrip())]:
                    raise ValueError(f"line {number}: tab indentation")
                self.lines.append((len(content) - len(content.lstrip()), content.strip(), number))
        self.anchors: dict[str, Any] = {}

    @staticmethod
    def _strip_comment(line: str) -> str:
        quote = ""
        for i, char in enumerate(line):
            if quote:
                if char == quote and (quote == "'" or line[i - 1] != "\\"):
                    quote = ""
            elif char in "\"'" and (i == 0 or line[i - 1] in " [,:"):
                quote = char
            elif char == "#" and (i == 0 or line[i - 1] == " "):
                return line[:i]
        return line

    def load(self) -> Any:
        value, index = self._block(0, 0)
        if index != len(self.lines):
            raise ValueError(f"line {self.lines[index][2]}: unexpected indentation")
        return value

    def _block(self, index: int, indent: int) -> tuple[Any, int]:
        if self.lines[index][1].startswith("- ") or self.lines[index][1] == "-":
            return self._sequence(index, indent)
        return self._mapping(index, indent)

    def _nested(self, index: int, indent: int) -> tuple[Any, int]:
        if index < len(self.lines) and self.lines[index][0] > indent:
            return self._block(index, self.lines[index][0])
        return None, index

    def _mapping(self, index: int, indent: int) -> tuple[dict[str, Any], int]:
        result: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        while index < len(self.lines) and self.lines[index][0] == indent:
            _, content, number = self.lines[index]
            if content.startswith("- "):
                raise ValueError(f"line {number}: sequence item where a key was expected")
            match = re.match(r"""^("[^"]*"|'[^']*'|[^:'"]+):(?: (.*))?$""", content)
            if not match:
                raise ValueError(f"line {number}: not a `key: value` line: {content!r}")
            key, rest = self._scalar(match[1], number), (match[2] or "").strip()
            if key in result:
                raise ValueError(f"line {number}: duplicate key {key!r}")
            anchor = None
            if rest.startswith("&"):
                anchor, _, rest = rest[1:].partition(" ")
                rest = rest.strip()
            if rest:
                value, index = self._scalar(rest, number), index + 1
            else:
                value, index = self._nested(index + 1, indent)
            if anchor:
                self.anchors[anchor] = value
            if key == "<<":
                if not isinstance(value, dict):
                    raise ValueError(f"line {number}: << needs a mapping alias")
                merged = {**merged, **value}
            else:
                result[key] = value
        if index < len(self.lines) and self.lines[index][0] > indent:
            raise ValueError(f"line {self.lines[index][2]}: unexpected indentation")
        return {**merged, **result}, index

    def _sequence(self, index: int, indent: int) -> tuple[list[Any], int]:
        items: list[Any] = []
        while index < len(self.lines) and self.lines[index][0] == indent:
            _, content, number = self.lines[index]
            if not content.startswith("-"):
                break
            item = content[1:].strip()
            if not item:
                value, index = self._nested(index + 1, indent)
            elif re.match(r"^[A-Za-z_][\w.-]*: ", item) or item.endswith(":"):
                self.lines[index] = (indent + 2, item, number)
                value, index = self._mapping(index, indent + 2)
            else:
                value, index = self._scalar(item, number), index + 1
            items.append(value)
        return items, index

    def _scalar(self, text: str, number: int) -> Any:
        if text.startswith("*"):
            if text[1:] not in self.anchors:
                raise ValueError(f"line {number}: unknown alias {text}")
            return self.anchors[text[1:]]
        if text.startswith('"'):
            return json.loads(text)
        if text.startswith("'"):
            if not text.endswith("'") or len(text) < 2:
                raise ValueError(f"line {number}: unterminated quote")
            return text[1:-1].replace("''", "'")
        if text.startswith("["):
            return self._flow(text, number)
        if text[0] in "{|>!%@`":
            raise ValueError(f"line {number}: unsupported YAML: {text!r}")
        if text in {"true", "false"}:
            return text == "true"
        if text in {"null", "~"}:
            return None
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        return text

    def _flow(self, text: str, number: int) -> list[Any]:
        if not text.endswith("]"):
            raise ValueError(f"line {number}: flow sequence must end on its line")
        items, current, quote = [], "", ""
        for char in text[1:-1]:
            if quote:
                current += char
                if char == quote and not current.endswith("\\" + quote):
                    quote = ""
            elif char in "\"'":
                quote, current = char, current + char
            elif char == ",":
                items.append(current.strip())
                current = ""
            else:
                current += char
        if current.strip():
            items.append(current.strip())
        return [self._scalar(item, number) for item in items]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = MiniYAML(COMPOSE.read_text()).load()
    assert isinstance(data, dict)
    return data


def env_of(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment", {})
    assert isinstance(env, dict), "environment as a mapping"
    return env


def test_mini_yaml_reads_anchors_merges_and_flow_lists() -> None:
    text = (
        "x: &base\n  a: 1\n  b: 'two'\nitems:\n  - one\n  - k: v\n    k2: [\"p q\", r]\n"
        "svc:\n  <<: *base\n  b: three  # comment\n"
    )
    assert MiniYAML(text).load() == {
        "x": {"a": 1, "b": "two"},
        "items": ["one", {"k": "v", "k2": ["p q", "r"]}],
        "svc": {"a": 1, "b": "three"},
    }
    with pytest.raises(ValueError, match="unsupported"):
        MiniYAML("a: {b: c}\n").load()


def test_services_are_the_production_set(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"redis", "postgres", *APP_SERVICES}


def test_redis_keeps_data_with_aof_everysec(compose: dict[str, Any]) -> None:
    redis = compose["services"]["redis"]
    assert str(redis["image"]).startswith("redis:7")
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command
    assert "--appendfsync everysec" in command
    assert "--maxmemory-policy noeviction" in command
    assert any(v.endswith(":/data") for v in redis["volumes"])
    assert "healthcheck" in redis


def test_postgres_has_a_volume_and_a_healthcheck(compose: dict[str, Any]) -> None:
    postgres = compose["services"]["postgres"]
    assert any(v.endswith(":/var/lib/postgresql/data") for v in postgres["volumes"])
    assert postgres["healthcheck"]["test"][0] == "CMD-SHELL"
    assert "pg_isready" in postgres["healthcheck"]["test"][1]
    assert env_of(postgres)["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_services_are_configured_from_the_environment(
    compose: dict[str, Any], name: str
) -> None:
    service = compose["services"][name]
    env = env_of(service)
    assert service["build"] == "."
    assert env["DJANGO_SETTINGS_MODULE"] == "config.settings.prod"
    assert env["SECRET_KEY"].startswith("${SECRET_KEY:?")  # refuses to start without one
    assert env["DATABASE_URL"].startswith("postgres://")
    assert "@postgres:5432/" in env["DATABASE_URL"]
    for var in ("ALLOWED_HOSTS", "MQ_REDIS_URL", "MQ_CLUSTERS", "CONSOLE_REDIS_URL"):
        assert env[var].startswith(f"${{{var}:-"), var
    assert service["command"], name


def test_web_runs_gunicorn_after_migrations(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["web"]["command"][:2] == ["gunicorn", "config.wsgi"]
    assert services["migrate"]["command"][-3:] == ["manage.py", "migrate", "--no-input"]
    assert services["migrate"]["restart"] == "no"
    for name in ("web", "worker", "beat", "pipeline"):
        condition = services[name]["depends_on"]["migrate"]["condition"]
        assert condition == "service_completed_successfully", name


def test_two_of_each_and_workers_without_beat(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name in ("web", "worker", "beat"):  # no single point (the beats elect a leader)
        assert services[name]["deploy"]["replicas"] == 2, name
    beat = services["beat"]
    assert beat["command"][:4] == ["celery", "-A", "config", "beat"]
    assert "volumes" not in beat  # each beat's schedule file is its own
    worker = services["worker"]["command"]
    assert worker[:4] == ["celery", "-A", "config", "worker"]
    assert "-B" not in worker
    assert "--beat" not in worker
    beat_mentions = [n for n, s in services.items() if "beat" in (s.get("command") or [])]
    assert beat_mentions == ["beat"]


def test_pipeline_runs_the_example_pipeline(compose: dict[str, Any]) -> None:
    command = compose["services"]["pipeline"]["command"]
    assert command[:4] == ["python", "manage.py", "run_pipeline", "order_totals"]
    assert "--sink" in command


def test_dependencies_and_volumes_are_declared(compose: dict[str, Any]) -> None:
    services = compose["services"]
    declared = set(compose["volumes"])
    for name, service in services.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown {dependency}"
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            assert source in declared, f"{name} mounts undeclared volume {source}"


def test_every_compose_variable_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    variables = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", COMPOSE.read_text()))
    assert variables
    missing = sorted(v for v in variables if f"`{v}`" not in readme)
    assert missing == [], f"document these in README.md: {missing}"


def test_dockerfile_builds_from_the_lock_file_with_a_jre() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"^FROM python:3\.11-slim$", text, re.M)
    assert "default-jre-headless" in text
    assert "pip install -r requirements.lock" in text
    assert "pip install --no-deps -e ." in text
    assert re.search(r"^USER (?!root)\w+$", text, re.M), "the image must not run as root"
    assert json.loads(text.split("CMD ", 1)[1].splitlines()[0])[:2] == ["gunicorn", "config.wsgi"]


def test_the_image_runs_production_settings_by_default() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"^\s*DJANGO_SETTINGS_MODULE=config\.settings\.prod\b", text, re.M)


def test_compose_requires_a_metrics_token(compose: dict[str, Any]) -> None:
    env = compose["x-app"]["environment"]
    assert env["METRICS_BEARER_TOKEN"].startswith("${METRICS_BEARER_TOKEN:?")


def test_compose_requires_an_audit_key(compose: dict[str, Any]) -> None:
    env = compose["x-app"]["environment"]
    assert env["AUDIT_HMAC_KEY"].startswith("${AUDIT_HMAC_KEY:?")

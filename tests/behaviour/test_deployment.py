"""docker-compose.yml holds together (no Docker engine runs here, so it is checked, not run):
every file it starts exists, Prosody runs the configuration the tests use, and the
memory agents read the variables it sets."""

from __future__ import annotations

from typing import Any

import yaml

from tests.support.paths import ROOT

MEMORY_AGENTS = (
    "base-memory", "base-memory-2", "interaction-memory", "interaction-memory-2", "beads-sync",
)  # fmt: skip


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_every_service_starts_a_file_of_the_repository() -> None:
    services = compose()["services"]
    assert set(services) == {
        "xmpp", "postgres", "base-memory", "base-memory-2", "interaction-memory",
        "interaction-memory-2", "beads-sync", "llm-agent",
    }  # fmt: skip
    assert services["postgres"]["image"].startswith("pgvector/pgvector:pg")
    for name, service in services.items():
        if "image" in service:
            continue
        assert (ROOT / service["build"] / "Dockerfile").is_file(), name
        command = service.get("command")
        if command:
            assert (ROOT / command[1]).is_file(), name


def test_prosody_runs_the_configuration_the_tests_use() -> None:
    dockerfile = (ROOT / "prosody" / "Dockerfile").read_text()
    assert "COPY prosody.cfg.lua start.sh env.sh prosodyctl.sh /etc/spade-memory/" in dockerfile
    assert 'PROSODY_DIR = ROOT / "prosody"' in (ROOT / "tests/support/prosody.py").read_text()


def test_the_agents_read_what_compose_sets() -> None:
    environment = (ROOT / "agents" / "environment.py").read_text() + "".join(
        path.read_text() for path in (ROOT / "spade_memory").glob("*/service.py")
    )  # the run's variables, and each service's own (``from_environment``)
    for name in MEMORY_AGENTS:
        for variable in compose()["services"][name]["environment"]:
            assert variable in environment, (name, variable)
    example = (ROOT / "examples" / "llm_agent.py").read_text()
    providers = (ROOT / "spade_memory" / "llm" / "providers.py").read_text()
    pools = (ROOT / "spade_memory" / "client/failover.py").read_text()
    for variable in compose()["services"]["llm-agent"]["environment"]:
        assert variable in example + providers + pools, variable


def test_the_example_agent_uses_both_agents_of_each_service_unthrottled() -> None:
    """Its clients name every agent compose runs for a service, and Prosody limits none
    of the memory agents (it limits the first of each by name, the rest through
    PROSODY_UNLIMITED)."""
    from spade_memory.client.failover import pool_from_environment

    services = compose()["services"]
    environment = services["llm-agent"]["environment"]
    for variable, prefix in [("SPADE_MEMORY_BASE_POOL", "base-memory"),
                             ("SPADE_MEMORY_INTERACTION_POOL", "interaction-memory")]:  # fmt: skip
        running = {f"{name}@xmpp" for name in MEMORY_AGENTS if name.startswith(prefix)}
        assert len(running) == 2 and set(pool_from_environment(variable, environment) or []) == (
            running
        )
    unlimited = services["xmpp"]["environment"]["PROSODY_UNLIMITED"].split()
    assert sorted(unlimited) == ["base-memory-2@xmpp", "interaction-memory-2@xmpp"]
    configuration = (ROOT / "prosody" / "prosody.cfg.lua").read_text()
    for service in ("base-memory", "interaction-memory", "beads-sync"):
        assert f'"{service}@" .. ENV_PROSODY_DOMAIN;' in configuration


def test_prosody_creates_the_account_of_every_agent_compose_runs() -> None:
    """In-band registration is closed: compose names each account for start.sh."""
    from spade_memory.server.registry import SERVICES

    listed = compose()["services"]["xmpp"]["environment"]["PROSODY_ACCOUNTS"].split()
    accounts = dict(entry.split(":", 1) for entry in listed)
    for service in SERVICES:
        assert accounts[service.node].startswith("${SPADE_MEMORY_PASSWORD"), service.node
    example = (ROOT / "examples" / "llm_agent.py").read_text()
    for name in ("llm-assistant", "llm-user"):
        assert f'f"{name}@{{domain}}",' in example and f'"{accounts[name]}"' in example, name
    start = (ROOT / "prosody" / "start.sh").read_text()
    assert "PROSODY_ACCOUNTS" in start and "prosodyctl" in start


def test_the_memory_agents_share_one_database_and_its_spaces_file_is_valid() -> None:
    """Both base memory agents keep their memories, both interaction memory agents their
    notes and working memories, and every memory agent its directory of spaces, in the
    one PostgreSQL service; the Docker image has its driver."""
    from spade_memory.spaces.declared import read_spaces_file

    services = compose()["services"]
    databases = set()
    for name in MEMORY_AGENTS:
        mounts = services[name]["volumes"]
        assert "./agents/spaces.toml:/config/spaces.toml:ro" in mounts, name
        environment = services[name]["environment"]
        assert "SPADE_MEMORY_SPACES_DB" not in environment, name  # the database holds it
        assert environment["SPADE_MEMORY_SPACES"] == "/config/spaces.toml", name
        databases.add(environment["SPADE_MEMORY_DATABASE"])
        assert services[name]["depends_on"]["postgres"] == {"condition": "service_healthy"}
    (url,) = databases
    assert url.startswith("postgresql://memory:") and url.endswith("@postgres/spade_memory")
    assert services["base-memory-2"]["environment"]["SPADE_MEMORY_BASE_JID"] == (
        "base-memory-2@xmpp"
    )
    assert services["interaction-memory-2"]["environment"]["SPADE_MEMORY_INTERACTION_JID"] == (
        "interaction-memory-2@xmpp"
    )
    data = {services[name]["volumes"][0] for name in MEMORY_AGENTS}
    assert len(data) == len(MEMORY_AGENTS)  # a data directory each (each is locked)
    assert '".[postgresql,llm]"' in (ROOT / "Dockerfile").read_text()  # the LLM agent too
    declared = read_spaces_file(ROOT / "agents" / "spaces.toml")
    accounts = services["xmpp"]["environment"]["PROSODY_ACCOUNTS"].split()
    users = {account.split(":")[0] + "@xmpp" for account in accounts}
    for space in declared.spaces:  # every JID it names is an account Prosody creates
        assert {space.owner, *space.members} <= users, space.name

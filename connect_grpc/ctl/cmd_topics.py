"""``topics get|reset``: the topics a connector's tasks used (KIP-558)."""

from __future__ import annotations

import click

from connect_grpc.ctl.session import (
    OUTPUTS,
    Session,
    complete_connector_names,
    output_option,
    pass_session,
)


@click.group()
def topics() -> None:
    """Read or reset the topics a connector's tasks wrote to (source) or read from (sink)
    (KIP-558; the worker's topic.tracking.enable and topic.tracking.allow.reset)."""


@topics.command("get")
@click.argument("name", shell_complete=complete_connector_names)
@output_option(OUTPUTS)
@pass_session
def topics_get(session: Session, name: str, output: str) -> None:
    """The connector's topics, sorted; `-o json` gives Kafka Connect's body."""
    found = session.client.get_connector_topics(name)
    if output in ("json", "yaml"):
        session.output.document({name: {"topics": found}}, output)
        return
    session.output.table(["TOPIC"], [[topic] for topic in found])


@topics.command("reset")
@click.argument("name", shell_complete=complete_connector_names)
@pass_session
def topics_reset(session: Session, name: str) -> None:
    """Forget the connector's topics (its running tasks record them again as they use
    them)."""
    session.client.reset_connector_topics(name)
    session.output.line(f"topics of {name} reset")

"""Exactly once across processes: 4 merchant nodes (2 sync, 2 asyncio; tests/support/postgres_racers.py) on one
PostgreSQL server, each receiving 2,000 deliveries of 1,000 transfers through the inbox: every event delivered to every
node (twins in flight at once on several nodes), redelivered after each 503 as the service does, and in three rounds so
that finals come before non-finals:

- round 1: the final events of transfers 0-249;
- round 2: the non-finals of 0-249 (superseded: their final was handled), the final and then the non-final of
  250-499 (racing: the non-final handled before its final commits, or superseded), the non-finals of 500-999;
- round 3: the finals of 500-999.

Counted in the merchant's own rows: each final's effect exactly once, each non-final's at most once (exactly once
where it came first, never where its final came before), every order in its final state, written once."""

# ruff: noqa: S608 (the test's own schema name in SQL)

from __future__ import annotations

import multiprocessing
from collections import Counter

from support.postgres_racers import Delivery, node
from support.postgres_server import PostgresServer

NODES = 4
TRANSFERS = 1000
SECRET = "whsec-multiprocess-postgres"  # noqa: S105 (a test fixture)


def final_status(index: int) -> str:
    return "PAID" if index % 2 == 0 else "rejected"


def rounds() -> list[list[Delivery]]:
    refs = [f"ref-{index:04d}" for index in range(TRANSFERS)]
    first, racing, later = range(0, 250), range(250, 500), range(500, 1000)
    return [
        [(refs[i], final_status(i)) for i in first],
        [(refs[i], "initialized") for i in first]
        + [delivery for i in racing for delivery in ((refs[i], final_status(i)), (refs[i], "initialized"))]
        + [(refs[i], "initialized") for i in later],
        [(refs[i], final_status(i)) for i in later],
    ]


def node_plan(plan: list[list[Delivery]], number: int) -> list[list[Delivery]]:
    """Node ``number``'s order of each round: the round begun a quarter further on per node (each node first to some
    events, whatever the nodes' speeds), backwards on odd nodes (twins met both ways: in round 2 the non-final of
    250-499 before its final)."""
    ordered = []
    for deliveries in plan:
        shift = len(deliveries) * number // NODES
        turned = deliveries[shift:] + deliveries[:shift]
        ordered.append(turned[::-1] if number % 2 else turned)
    return ordered


def test_four_nodes_two_thousand_deliveries_each_every_effect_once(postgres_server: PostgresServer,
                                                                  postgres_schema: str) -> None:
    schema = postgres_schema
    with postgres_server.connect() as admin:
        admin.execute(f"CREATE TABLE {schema}.merchant_effects (event text NOT NULL, node integer NOT NULL)")
        admin.execute(f"CREATE TABLE {schema}.orders (reference text PRIMARY KEY, state text, updated integer)")
        admin.execute(f"INSERT INTO {schema}.orders SELECT 'ref-' || lpad(i::text, 4, '0'), 'initialized', 0"
                      f" FROM generate_series(0, {TRANSFERS - 1}) AS i")
    plan = rounds()
    assert sum(len(deliveries) for deliveries in plan) == 2000  # per node
    context = multiprocessing.get_context("spawn")
    start, outcomes = context.Barrier(NODES), context.Queue()
    nodes = [context.Process(target=node, args=(postgres_server.conninfo, schema, SECRET, node_plan(plan, number),
                                                number >= 2, number, start, outcomes)) for number in range(NODES)]
    for process in nodes:
        process.start()
    answers: Counter[str] = Counter()
    for _ in nodes:
        _, counted = outcomes.get(timeout=300)
        answers.update(counted)
    for process in nodes:
        process.join(timeout=60)
    assert [process.exitcode for process in nodes] == [0] * NODES

    with postgres_server.connect() as admin:
        effects = Counter(dict(admin.execute(f"SELECT event, count(*) FROM {schema}.merchant_effects GROUP BY event")
                               .fetchall()))
        handled_by = {row[0] for row in admin.execute(f"SELECT DISTINCT node FROM {schema}.merchant_effects")}
        orders = admin.execute(f"SELECT reference, state, updated FROM {schema}.orders ORDER BY reference").fetchall()
    finals = {f"ref-{i:04d}:{final_status(i)}" for i in range(TRANSFERS)}
    assert all(effects[event] == 1 for event in finals)  # each final exactly once
    assert max(effects.values()) == 1  # nothing twice
    non_finals = {event for event in effects if event.endswith(":initialized")}
    assert {f"ref-{i:04d}:initialized" for i in range(500, 1000)} <= non_finals  # came first: handled
    assert not non_finals & {f"ref-{i:04d}:initialized" for i in range(250)}  # came after its final: superseded
    assert set(effects) <= finals | {f"ref-{i:04d}:initialized" for i in range(1000)}
    assert orders == [(f"ref-{i:04d}", final_status(i), 1) for i in range(TRANSFERS)]
    assert handled_by == set(range(NODES))  # every node handled some
    # one 200 "received" per effect; every other delivery of 8,000 a duplicate or superseded (after any 503s)
    assert answers["received"] == sum(effects.values())
    assert answers["received"] + answers["duplicate"] + answers["superseded"] == NODES * 2000
    assert answers["superseded"] >= NODES * 250

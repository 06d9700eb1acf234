"""A merchant's webhook process for tests/stores/test_postgres_faults.py, killed with SIGKILL between its write and its
commit: it handles one delivery (read from stdin as JSON: conninfo, schema, secret, headers, body) with a
receiver on the PostgreSQL inbox, whose handler writes the merchant's row, prints "written" and then waits to be
killed."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from psycopg_pool import ConnectionPool

from pasarela.transfers import TransferEvent, TransferWebhookReceiver
from pasarela.transfers.inbox_postgres import PostgresInbox


def main() -> None:
    order = json.loads(sys.stdin.readline())
    schema = order["schema"]

    def on_event(event: TransferEvent, tx: Any) -> None:
        tx.execute(f"INSERT INTO {schema}.merchant_effects (event, pid) VALUES (%s, pg_backend_pid())",  # noqa: S608
                   (event.dedup_key,))
        print("written", flush=True)
        time.sleep(120)  # killed here: the row written, not committed

    with ConnectionPool(order["conninfo"], kwargs={"autocommit": True}, min_size=1, open=False) as pool:
        receiver = TransferWebhookReceiver(on_event, secret=order["secret"], inbox=PostgresInbox(pool, schema=schema))
        receiver.handle(order["headers"], order["body"].encode())


if __name__ == "__main__":
    main()

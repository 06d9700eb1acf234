-- pasarela's shared stores on PostgreSQL: the terminal replay store, the webhook event ledger (and the inbox,
-- which uses the ledger's table inside the merchant's own transaction) and the pending-transfer guard.
--
-- Run it once per database before the stores' first use, by pasarela.postgres.create_schema(connection) or by
-- hand (psql -v ON_ERROR_STOP=1 -f postgres_schema.sql; python -m pasarela.postgres prints where it is).
-- Nothing runs it behind your back: importing pasarela touches no database. It is idempotent: running it
-- again (after an upgrade of pasarela) creates what is missing and replaces the functions, and changes no
-- row. Every object lives in the schema "pasarela"; create_schema(schema="...") puts them in another one
-- (one schema per application sharing a database), and the stores take the same schema="...".
--
-- Clocks: times are Unix milliseconds (bigint). The replay store's expiries come from each request's own
-- signed timestamp and are judged by the gateway node's clock, as the in-memory store judges them; leases
-- and the ttl of the ledger and the guard are judged by this server's clock, one clock for every node (as
-- the Redis stores judge them by Redis's).
--
-- Size: expired rows are deleted in batches (DELETE of at most N rows a statement, SKIP LOCKED so that
-- nodes pruning at once share the work): each store prunes by itself at most once a minute, and
-- pasarela.postgres.prune() does it on demand. Deleted rows leave room that autovacuum makes reusable,
-- so the tables stay as large as what is live, not as large as what was ever written.

CREATE SCHEMA IF NOT EXISTS pasarela;

-- This server's clock, in Unix milliseconds (clock_timestamp: the moment of the call, not the
-- transaction's start, which in the inbox may be a while ago).
CREATE OR REPLACE FUNCTION pasarela.clock_ms() RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;


-- --- the terminal replay store ----------------------------------------------------------------------------
-- One row per accepted signature (its 64 bytes, decoded from hex; any other text given as a signature is
-- kept as its SHA-256, 32 bytes) until the end of its request's window plus the clock skew.
--
-- UNLOGGED: a first use writes no WAL and its commit waits for no disk, as Redis without persistence
-- (what a replay check needs to be cheap, once per verified request). The price: a crash of the server
-- (and a failover to a standby, which holds no unlogged rows) empties the table, and the signatures of the
-- last window are forgotten. replay_memory, unlogged too, is emptied with it: a first use that finds it
-- empty writes when the memory began, and every request signed before then plus the tolerance and the
-- skew is refused as unknown ("memory lost"), never accepted, until that time has passed (see
-- pasarela.terminal.replay_postgres). To trade speed for keeping the memory across crashes:
--   ALTER TABLE pasarela.replay_signatures SET LOGGED; ALTER TABLE pasarela.replay_memory SET LOGGED;
DO $$
BEGIN
  IF to_regclass('pasarela.replay_signatures') IS NULL THEN
    CREATE UNLOGGED TABLE pasarela.replay_signatures (
      signature bytea PRIMARY KEY,
      expires_at bigint NOT NULL  -- the request's timestamp + tolerance + clock skew (the node's clock, ms)
    );
    CREATE UNLOGGED TABLE IF NOT EXISTS pasarela.replay_memory (
      only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
      began_ms bigint NOT NULL  -- since when the table holds every signature accepted (0: since always)
    );
    -- a table created now has forgotten nothing
    INSERT INTO pasarela.replay_memory (began_ms) VALUES (0) ON CONFLICT DO NOTHING;
  END IF;
END
$$;

-- First use of each signature: answers[i] is 1 (first use: recorded), 0 (seen inside its window: a replay)
-- or -1 (not held, and its window may have begun before the memory did: cannot tell); began is when the
-- memory began. window_ends: each request's timestamp + tolerance (ms); a signature is kept until its
-- window end + skew_ms; margin_ms: 2 * tolerance + skew. The gateway sends the signatures of a batch
-- sorted, so that two batches lock their rows in the same order (no deadlock between nodes).
CREATE OR REPLACE FUNCTION pasarela.replay_first_use(
  signatures bytea[], window_ends bigint[], now_ms bigint, skew_ms bigint, margin_ms bigint,
  OUT answers smallint[], OUT began bigint)
LANGUAGE plpgsql
AS $$
DECLARE
  i integer;
BEGIN
  SELECT m.began_ms INTO began FROM pasarela.replay_memory m;
  IF NOT FOUND THEN  -- emptied by a crash: the memory begins now
    INSERT INTO pasarela.replay_memory (began_ms) VALUES (now_ms) ON CONFLICT DO NOTHING;
    SELECT m.began_ms INTO began FROM pasarela.replay_memory m;
  END IF;
  answers := array_fill(0::smallint, ARRAY[cardinality(signatures)]);
  FOR i IN 1 .. cardinality(signatures) LOOP
    IF window_ends[i] <= began + margin_ms THEN
      PERFORM FROM pasarela.replay_signatures s WHERE s.signature = signatures[i] AND s.expires_at >= now_ms;
      answers[i] := CASE WHEN FOUND THEN 0 ELSE -1 END;
    ELSE
      INSERT INTO pasarela.replay_signatures AS s (signature, expires_at)
      VALUES (signatures[i], window_ends[i] + skew_ms)
      ON CONFLICT (signature) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE s.expires_at < now_ms;
      answers[i] := CASE WHEN FOUND THEN 1 ELSE 0 END;
    END IF;
  END LOOP;
END
$$;


-- --- the webhook event ledger (and the inbox) --------------------------------------------------------------
-- One row per transaction: the statuses handled, the first final status handled, the lease of the delivery
-- being handled (its token, until when: this server's clock), and when the row is forgotten (ttl after the
-- transaction's last claim or confirmation). Logged: the inbox commits it with the merchant's own rows.
CREATE TABLE IF NOT EXISTS pasarela.webhook_transactions (
  transaction text PRIMARY KEY,  -- transactionReference or token (SHA-256 of a long one), or sha256:<body>
  handled text[] NOT NULL DEFAULT '{}',
  final text,
  lease_token text,
  lease_until bigint,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_transactions_expiry ON pasarela.webhook_transactions (expires_at);

-- The claim of a delivery (the rules of pasarela.transfers.webhook_dedup, in that order): 'claimed',
-- 'handled', 'superseded' or 'in progress'. The transaction's row is locked until the caller's transaction
-- ends: a claim of the same transaction by another delivery waits for it, up to lock_wait_ms, and then
-- answers 'in progress' (the inbox holds the lock while the merchant's handler runs).
CREATE OR REPLACE FUNCTION pasarela.webhook_claim(
  p_transaction text, p_status text, p_token text, lease_ms bigint, ttl_ms bigint, lock_wait_ms bigint)
RETURNS text
LANGUAGE plpgsql
AS $$
DECLARE
  now_ms bigint;
  waited text := current_setting('lock_timeout');
  r pasarela.webhook_transactions;
BEGIN
  PERFORM set_config('lock_timeout', lock_wait_ms || 'ms', true);
  BEGIN
    INSERT INTO pasarela.webhook_transactions (transaction, expires_at)
    VALUES (p_transaction, pasarela.clock_ms() + ttl_ms) ON CONFLICT (transaction) DO NOTHING;
    SELECT * INTO r FROM pasarela.webhook_transactions t WHERE t.transaction = p_transaction FOR UPDATE;
  EXCEPTION WHEN lock_not_available THEN
    PERFORM set_config('lock_timeout', waited, true);
    RETURN 'in progress';
  END;
  PERFORM set_config('lock_timeout', waited, true);
  now_ms := pasarela.clock_ms();
  IF r.expires_at <= now_ms THEN  -- forgotten (not pruned yet): as if never seen
    r.handled := '{}';
    r.final := NULL;
    r.lease_token := NULL;
  END IF;
  IF r.lease_token = p_token THEN RETURN 'claimed'; END IF;
  IF p_status = ANY (r.handled) THEN RETURN 'handled'; END IF;
  IF r.final IS NOT NULL THEN RETURN 'superseded'; END IF;
  IF r.lease_token IS NOT NULL AND r.lease_until > now_ms THEN RETURN 'in progress'; END IF;
  UPDATE pasarela.webhook_transactions t
  SET handled = r.handled, final = r.final, lease_token = p_token, lease_until = now_ms + lease_ms,
      expires_at = now_ms + ttl_ms
  WHERE t.transaction = p_transaction;
  RETURN 'claimed';
END
$$;

-- The handler took the event: recorded as handled (and as the final one, if it is the first final), the
-- lease ended if this delivery's token still holds it, the row kept ttl from now.
CREATE OR REPLACE FUNCTION pasarela.webhook_confirm(
  p_transaction text, p_status text, p_token text, is_final boolean, ttl_ms bigint)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
  now_ms bigint := pasarela.clock_ms();
BEGIN
  INSERT INTO pasarela.webhook_transactions AS t (transaction, handled, final, expires_at)
  VALUES (p_transaction, ARRAY[p_status], CASE WHEN is_final THEN p_status END, now_ms + ttl_ms)
  ON CONFLICT (transaction) DO UPDATE SET
    handled = CASE WHEN t.expires_at <= now_ms THEN ARRAY[p_status]
                   WHEN p_status = ANY (t.handled) THEN t.handled
                   ELSE t.handled || p_status END,
    final = CASE WHEN t.expires_at <= now_ms THEN EXCLUDED.final ELSE coalesce(t.final, EXCLUDED.final) END,
    lease_token = CASE WHEN t.lease_token = p_token OR t.expires_at <= now_ms THEN NULL ELSE t.lease_token END,
    lease_until = CASE WHEN t.lease_token = p_token OR t.expires_at <= now_ms THEN NULL ELSE t.lease_until END,
    expires_at = EXCLUDED.expires_at;
END
$$;


-- --- the pending-transfer guard ------------------------------------------------------------------------------
-- One row per order whose transfer is not final yet, until released or ttl after its reservation (this
-- server's clock). Logged: a crash forgets no reservation.
CREATE TABLE IF NOT EXISTS pasarela.pending_transfers (
  order_id text PRIMARY KEY,
  token text NOT NULL,
  transaction_reference text,
  confirmed boolean NOT NULL DEFAULT false,
  reserved_at double precision NOT NULL,  -- the caller's clock, Unix seconds (PendingTransfer.reserved_at)
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS pending_transfers_token ON pasarela.pending_transfers (token);
CREATE INDEX IF NOT EXISTS pending_transfers_reference ON pasarela.pending_transfers (transaction_reference);
CREATE INDEX IF NOT EXISTS pending_transfers_expiry ON pasarela.pending_transfers (expires_at);

-- Webhooks (issue 50): endpoints, and one delivery per (endpoint, event),
-- made from `events` by whichever replica marks the event fanned out first
-- (a compare-and-set on `fanned_out`). Portable SQL.

ALTER TABLE events ADD COLUMN fanned_out INTEGER NOT NULL DEFAULT 0;
-- What happened before webhooks existed is not announced.
UPDATE events SET fanned_out = 1;
CREATE INDEX events_unfanned ON events(fanned_out, created_at);

-- `owner_kind` 'agent' (its intents). `events` is a JSON array of event
-- types, or '*'. The signing secret is sealed under a key derived from the
-- pepper; during a rotation the previous one signs too until
-- `previous_until`.
CREATE TABLE webhook_endpoints (
    id               TEXT PRIMARY KEY,
    owner_kind       TEXT NOT NULL,
    owner_id         TEXT NOT NULL,
    url              TEXT NOT NULL,
    events           TEXT NOT NULL,
    secret           TEXT NOT NULL,
    previous_secret  TEXT,
    previous_until   BIGINT,
    status           TEXT NOT NULL,
    disabled_reason  TEXT,
    created_at       BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_by_owner ON webhook_endpoints(owner_kind, owner_id);

-- `body` is fixed when the delivery is made, so every attempt sends the
-- same bytes. Leased like the settlement queue.
CREATE TABLE webhook_deliveries (
    id             TEXT PRIMARY KEY,
    endpoint_id    TEXT NOT NULL REFERENCES webhook_endpoints(id),
    event_id       TEXT NOT NULL,
    subject_id     TEXT NOT NULL,
    version        BIGINT NOT NULL,
    body           TEXT NOT NULL,
    status         TEXT NOT NULL,
    attempts       INTEGER NOT NULL DEFAULT 0,
    available_at   BIGINT NOT NULL,
    locked_by      TEXT,
    locked_until   BIGINT,
    last_code      INTEGER,
    last_error     TEXT,
    last_attempt_at BIGINT,
    delivered_at   BIGINT,
    created_at     BIGINT NOT NULL,
    UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(status, available_at);
CREATE INDEX webhook_deliveries_by_subject ON webhook_deliveries(endpoint_id, subject_id, version);

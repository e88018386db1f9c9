-- Fair webhook lanes (issue 69): each endpoint's consecutive failed
-- attempts and, past a few, the time its breaker holds it until (no
-- delivery of it is leased before then; one attempt after it probes).
-- Shared by every replica. Portable SQL.
ALTER TABLE webhook_endpoints ADD COLUMN failures BIGINT NOT NULL DEFAULT 0;
ALTER TABLE webhook_endpoints ADD COLUMN paused_until BIGINT;
-- The lease asks of each candidate whether its endpoint has one in
-- flight: one index seek, however many of the endpoint's rows wait.
CREATE INDEX webhook_deliveries_in_flight ON webhook_deliveries(endpoint_id, status, locked_until);

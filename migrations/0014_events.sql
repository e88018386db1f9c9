-- Every change of a status (an intent's, a facilitator settlement's, a
-- registered swap's), written by store::transition in the same transaction
-- as the change itself: the record events are announced from. `version` is
-- the subject's version after the change; `from_status` is NULL for a row's
-- first status.
CREATE TABLE events (
    id            TEXT PRIMARY KEY,
    subject_kind  TEXT NOT NULL,
    subject_id    TEXT NOT NULL,
    version       BIGINT NOT NULL,
    from_status   TEXT,
    to_status     TEXT NOT NULL,
    code          TEXT,
    created_at    BIGINT NOT NULL
);
CREATE INDEX events_by_subject ON events(subject_kind, subject_id, version);
CREATE INDEX events_by_time ON events(created_at);

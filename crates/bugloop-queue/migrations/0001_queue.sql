-- Portable SQL: the same statements serve SQLite and PostgreSQL.

-- Every webhook delivery accepted, by GitHub's delivery id: a redelivery finds its row.
CREATE TABLE deliveries (
    id TEXT PRIMARY KEY,
    event TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    -- The job it created, if any.
    job_id TEXT
);

CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    -- review | comment | converge | autofix
    kind TEXT NOT NULL,
    -- The pull request or issue (`github:owner/repo#7`): one job runs per conversation at a time.
    conversation TEXT NOT NULL,
    installation BIGINT,
    -- The head a review is for (a newer one supersedes it while it waits).
    head TEXT,
    -- What the job needs to run (the trigger, as JSON).
    payload TEXT NOT NULL,
    -- queued | running | done | failed (will retry) | dead | superseded
    state TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    run_after BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until BIGINT,
    -- Raised at every claim; a worker writes to GitHub only while its epoch is the job's.
    epoch BIGINT NOT NULL,
    error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX jobs_by_state ON jobs (state, run_after);
CREATE INDEX jobs_by_conversation ON jobs (conversation, state);

-- The local forge's conversation: comments per change, threaded, with a resolved flag per thread.
CREATE TABLE comments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    change TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('issue', 'review')),
    author TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    in_reply_to INTEGER REFERENCES comments (id),
    -- The root comment's id; a root's own id.
    thread_id INTEGER NOT NULL,
    path TEXT,
    line INTEGER,
    commit_sha TEXT
);
CREATE INDEX comments_by_change ON comments (change, id);

CREATE TABLE threads (
    id INTEGER PRIMARY KEY,
    change TEXT NOT NULL,
    resolved INTEGER NOT NULL DEFAULT 0
);

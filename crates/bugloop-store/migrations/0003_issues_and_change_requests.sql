-- The local forge's issues and change requests (the solve pipeline's records), numbered in one
-- sequence as GitHub numbers issues and pull requests. An item's conversation is in `comments`
-- under the change key `issue:N` (an issue) or its branch's key (a change request's review).
CREATE TABLE items (
    number INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('issue', 'change')),
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    -- issue: open | closed; change: open | closed | merged
    state TEXT NOT NULL CHECK (state IN ('open', 'closed', 'merged')),
    author TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    -- An issue filed from error reports: one per fingerprint, with how many reports it had.
    fingerprint TEXT UNIQUE,
    reports INTEGER NOT NULL DEFAULT 0,
    -- A change request: its branch, the branch it goes into, whether it is a draft, the issue
    -- it closes.
    branch TEXT,
    base TEXT,
    draft INTEGER,
    closes INTEGER REFERENCES items (number),
    CHECK (kind = 'issue' OR (branch IS NOT NULL AND base IS NOT NULL AND draft IS NOT NULL))
);
CREATE INDEX items_by_kind ON items (kind, state, number);
-- One open change request per branch.
CREATE UNIQUE INDEX items_open_branch ON items (branch) WHERE kind = 'change' AND state = 'open';

CREATE TABLE item_labels (
    item INTEGER NOT NULL REFERENCES items (number),
    label TEXT NOT NULL,
    PRIMARY KEY (item, label)
);

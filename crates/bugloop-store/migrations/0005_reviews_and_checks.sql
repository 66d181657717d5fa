-- Other people's reviews of a local change request, as the repository's owner records them: the
-- latest decision of each reviewer counts, as on GitHub.
CREATE TABLE item_reviews (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    item INTEGER NOT NULL REFERENCES items (number),
    reviewer TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('approved', 'changes_requested', 'commented')),
    body TEXT NOT NULL,
    commit_sha TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX item_reviews_by_item ON item_reviews (item, id);

-- The people whose reviews and line comments the owner records here: reviewers who may change
-- the repository, as a GitHub reviewer with write access.
CREATE TABLE reviewers (
    name TEXT PRIMARY KEY,
    added_at TEXT NOT NULL
);

-- Check results on commits: the test commands bugloop ran on a change request's head, or a
-- result a person recorded (a CI run elsewhere). One result per name and commit, the latest.
CREATE TABLE checks (
    commit_sha TEXT NOT NULL,
    name TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'passed', 'failed')),
    detail TEXT NOT NULL DEFAULT '',
    at TEXT NOT NULL,
    PRIMARY KEY (commit_sha, name)
);

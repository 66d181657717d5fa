-- The order jobs are claimed in: higher first, then oldest. Jobs a person waits on (a review, a
-- comment, an error report to file) come before solving, and issues are solved most severe first
-- (`NewJob::priority`). A job gains a step for every 5 minutes it waited (`AGING_MS`).
ALTER TABLE jobs ADD COLUMN priority BIGINT NOT NULL DEFAULT 0;
CREATE INDEX jobs_by_priority ON jobs (priority, created_at);

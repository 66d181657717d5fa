-- When a job's last attempt started and when the job ended (done, dead or superseded), for the
-- server's latency figures and for seeing that one conversation's jobs never overlapped.
ALTER TABLE jobs ADD COLUMN started_at BIGINT;
ALTER TABLE jobs ADD COLUMN finished_at BIGINT;

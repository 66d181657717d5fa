-- The solve pipeline's record of each issue: every transition of its state machine with the
-- reason, in order. The issue's state is the last transition's target; a step within a state (an
-- attempt, a review round) is a transition to the same state. `detail` is JSON (the branch, the
-- change request, the attempt's outcome) the pipeline resumes from.
CREATE TABLE solve_transitions (
    issue INTEGER NOT NULL REFERENCES items (number),
    seq INTEGER NOT NULL,
    from_state TEXT,
    to_state TEXT NOT NULL,
    reason TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '{}',
    at TEXT NOT NULL,
    PRIMARY KEY (issue, seq)
);

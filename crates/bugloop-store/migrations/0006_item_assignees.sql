-- The accounts an issue is assigned to (`agents.bugsolver.assignee` while bugloop works on it).
CREATE TABLE item_assignees (
    item INTEGER NOT NULL REFERENCES items (number),
    login TEXT NOT NULL,
    PRIMARY KEY (item, login)
);


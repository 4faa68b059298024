-- A new agent's record is kept with its first journal entry, in the
-- entry's row (see package internal/agentrec), until the agent's next
-- record, which goes to the agents table as before. An agent written once
-- at its start and once at its end so costs one row of agents, inserted,
-- instead of a row inserted and then updated (a new version of the row,
-- and of its index entry). ListAgents reads both; a row of agents is
-- always the newer, since writing a record with a first entry removes the
-- agent's row. A build that knows only schema 5 would not see these
-- records, so the version number makes it refuse the database.
ALTER TABLE journal ADD COLUMN record bytea;
CREATE INDEX journal_records ON journal (run) WHERE record IS NOT NULL;

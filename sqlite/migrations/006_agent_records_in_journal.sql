-- A new agent's record is kept with its first journal entry, in the
-- entry's row, until the agent's record is next written, which goes to
-- the agents table as before. An agent written once (its start) and once
-- more (its end) so costs one row of agents, inserted, instead of a row
-- inserted and then updated: an update that makes the row longer (its
-- result, its end) moves it, and was most of what a delegated child cost
-- the store. ListAgents reads both; a row of agents is always the newer,
-- since writing a record with a first entry removes the agent's row.
-- A build that knows only schema 5 would not see these records, so the
-- version number makes it refuse the database.
ALTER TABLE journal ADD COLUMN record BLOB;
CREATE INDEX journal_records ON journal (run) WHERE record IS NOT NULL;

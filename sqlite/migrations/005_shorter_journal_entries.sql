-- Nothing in the tables changes: from this version on, a journal entry may
-- hold several inputs (kind "inputs", see loop.KindInputs), and a child's
-- start may name the configuration of a sibling's start instead of
-- repeating it (config_from, see loop.Start.ConfigFrom), which a build
-- that knows only schema 4 could not read. The version number is what
-- makes such a build refuse the database when it opens it, rather than
-- fail on such an entry in the middle of a resumed run.
SELECT 1;

-- Runs, their agents, every agent's journal, and the events of each run.
-- Times are UTC text in a fixed-width form (2006-01-02T15:04:05.000000000Z)
-- so that text order is time order. A zero time is stored as year 1; an
-- absent end time is NULL.

CREATE TABLE runs (
	id         TEXT    NOT NULL PRIMARY KEY,
	task       TEXT    NOT NULL,
	status     TEXT    NOT NULL,
	model      TEXT    NOT NULL,
	started    TEXT    NOT NULL,
	ended      TEXT,
	tokens_in  INTEGER NOT NULL,
	tokens_out INTEGER NOT NULL,
	answer     TEXT    NOT NULL,
	error      TEXT    NOT NULL,
	agents     INTEGER NOT NULL,
	config     BLOB,
	-- the Seq of the run's last event
	event_seq  INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX runs_by_start ON runs (started, id);

CREATE TABLE agents (
	run        TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	id         TEXT    NOT NULL,
	parent     TEXT    NOT NULL,
	depth      INTEGER NOT NULL,
	definition TEXT    NOT NULL,
	model      TEXT    NOT NULL,
	task       TEXT    NOT NULL,
	status     TEXT    NOT NULL,
	turns      INTEGER NOT NULL,
	tokens_in  INTEGER NOT NULL,
	tokens_out INTEGER NOT NULL,
	started    TEXT    NOT NULL,
	ended      TEXT,
	result     TEXT    NOT NULL,
	error      TEXT    NOT NULL,
	PRIMARY KEY (run, id)
) STRICT;

CREATE TABLE journal (
	run   TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	agent TEXT    NOT NULL,
	seq   INTEGER NOT NULL CHECK (seq >= 1),
	kind  TEXT    NOT NULL,
	data  BLOB,
	time  TEXT    NOT NULL,
	PRIMARY KEY (run, agent, seq)
) STRICT;

CREATE TABLE events (
	run     TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	seq     INTEGER NOT NULL,
	type    TEXT    NOT NULL,
	time    TEXT    NOT NULL,
	agent   TEXT    NOT NULL,
	-- the whole event as cadre.Event's JSON, seq included
	payload TEXT    NOT NULL,
	PRIMARY KEY (run, seq)
) STRICT;

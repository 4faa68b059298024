-- Runs, their agents, every agent's journal, and the events of each run.
-- Keys use the "C" collation so that text order is byte order, as in the
-- other stores. An absent end time is NULL.

CREATE TABLE runs (
	id         text COLLATE "C" NOT NULL PRIMARY KEY,
	task       text        NOT NULL,
	status     text        NOT NULL,
	model      text        NOT NULL,
	started    timestamptz NOT NULL,
	ended      timestamptz,
	tokens_in  bigint      NOT NULL,
	tokens_out bigint      NOT NULL,
	answer     text        NOT NULL,
	error      text        NOT NULL,
	agents     integer     NOT NULL,
	config     bytea,
	-- the Seq of the run's last event
	event_seq  bigint      NOT NULL DEFAULT 0
);

CREATE INDEX runs_by_start ON runs (started, id);

CREATE TABLE agents (
	run        text COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	id         text COLLATE "C" NOT NULL,
	parent     text        NOT NULL,
	depth      integer     NOT NULL,
	definition text        NOT NULL,
	model      text        NOT NULL,
	task       text        NOT NULL,
	status     text        NOT NULL,
	turns      integer     NOT NULL,
	tokens_in  bigint      NOT NULL,
	tokens_out bigint      NOT NULL,
	started    timestamptz NOT NULL,
	ended      timestamptz,
	result     text        NOT NULL,
	error      text        NOT NULL,
	PRIMARY KEY (run, id)
);

CREATE TABLE journal (
	run   text COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	agent text COLLATE "C" NOT NULL,
	seq   bigint      NOT NULL CHECK (seq >= 1),
	kind  text        NOT NULL,
	data  bytea,
	time  timestamptz NOT NULL,
	PRIMARY KEY (run, agent, seq)
);

CREATE TABLE events (
	run     text COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	seq     bigint      NOT NULL,
	type    text        NOT NULL,
	time    timestamptz NOT NULL,
	agent   text        NOT NULL,
	-- the whole event as cadre.Event's JSON, seq included
	payload json        NOT NULL,
	PRIMARY KEY (run, seq)
);

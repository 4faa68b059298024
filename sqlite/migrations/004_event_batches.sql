-- Events are kept in batches: one row per run for each transaction that
-- stored some, holding the events numbered first_seq to last_seq, each as
-- cadre.Event's JSON with its seq, one per line, in order. A row per event
-- cost its insertion into the table and its key, about a sixth of what the
-- store spent on a delegated child; a batch costs one for all of them.
-- Events are only ever read as a run's from some seq on, which the key
-- (run, first_seq) finds.

CREATE TABLE event_batches (
	run       TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	first_seq INTEGER NOT NULL CHECK (first_seq >= 1),
	last_seq  INTEGER NOT NULL CHECK (last_seq >= first_seq),
	payload   TEXT    NOT NULL,
	PRIMARY KEY (run, first_seq)
) STRICT;

INSERT INTO event_batches (run, first_seq, last_seq, payload)
	SELECT run, seq, seq, payload FROM events WHERE seq >= 1;

DROP TABLE events;

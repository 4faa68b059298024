-- Events are kept in batches: one row per run for each transaction that
-- stored some, holding the events numbered first_seq to last_seq, each as
-- cadre.Event's JSON with its seq, one per line, in order (see package
-- internal/eventlines). A row per event cost the server its insertion and
-- its key, six rows for each delegated child; a batch costs one for all of
-- them. Events are only ever read as a run's from some seq on, which the
-- key (run, first_seq) finds.

CREATE TABLE event_batches (
	run       text COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	first_seq bigint NOT NULL CHECK (first_seq >= 1),
	last_seq  bigint NOT NULL CHECK (last_seq >= first_seq),
	payload   text   NOT NULL,
	PRIMARY KEY (run, first_seq)
);

-- Each event stored before becomes a batch of its own, its payload kept as
-- it was written (compact JSON: no newline). Rows numbered below 1, which
-- cadre never wrote, are left out.
INSERT INTO event_batches (run, first_seq, last_seq, payload)
	SELECT run, seq, seq, payload::text FROM events WHERE seq >= 1;

DROP TABLE events;

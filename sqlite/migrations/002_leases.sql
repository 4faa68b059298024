-- Which process owns each run (cadre.Lease). A lease may name a run that is
-- not recorded yet: an engine takes a new run's lease before it records the
-- run. Times are in the runs table's form, by the clock of the machine that
-- wrote them.

CREATE TABLE leases (
	run      TEXT    NOT NULL PRIMARY KEY,
	token    TEXT    NOT NULL,
	host     TEXT    NOT NULL,
	pid      INTEGER NOT NULL,
	process  TEXT    NOT NULL,
	acquired TEXT    NOT NULL,
	renewed  TEXT    NOT NULL,
	expires  TEXT    NOT NULL
) STRICT;

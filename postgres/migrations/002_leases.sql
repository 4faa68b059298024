-- Which process owns each run (cadre.Lease). A lease may name a run that is
-- not recorded yet: an engine takes a new run's lease before it records the
-- run. Times are the server's (now()).

CREATE TABLE leases (
	run      text COLLATE "C" NOT NULL PRIMARY KEY,
	token    text        NOT NULL,
	host     text        NOT NULL,
	pid      integer     NOT NULL,
	process  text        NOT NULL,
	acquired timestamptz NOT NULL,
	renewed  timestamptz NOT NULL,
	expires  timestamptz NOT NULL
);

-- cadre_fence fails the transaction that calls it, with SQLSTATE CD001,
-- unless the lease of token holds run. It locks the lease's row until the
-- transaction ends, so a takeover waits for the appends under way and
-- then sees them.
CREATE FUNCTION cadre_fence(p_run text, p_token text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM 1 FROM leases WHERE run = p_run AND token = p_token FOR SHARE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'the writer''s lease no longer holds run %', p_run USING ERRCODE = 'CD001';
	END IF;
END
$$;

-- The checksum of each journal entry's content (cadre.JournalEntry.Checksum,
-- a CRC-32C), written with the entry. Entries written before this migration
-- have none (NULL): they are replayed unchecked.

ALTER TABLE journal ADD COLUMN sum INTEGER;

-- An operator's word on a movement no payment claims (`stablerail books
-- acknowledge`): a refund made by hand, a top-up of the wallet. The row is
-- then credited to the operator (purpose 'operator', owner 'ack:<chain>:
-- <tx>:<index>'), so no payment can take it later and it leaves the
-- unmatched list and the alarms. Portable SQL.
ALTER TABLE book_movements ADD COLUMN note TEXT;

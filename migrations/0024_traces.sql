-- Trace context (W3C `traceparent`) kept with what outlives a request, so
-- an intent's settlement and every event's webhook deliveries join the
-- trace that started them. NULL when tracing was off.
ALTER TABLE intents ADD COLUMN trace TEXT;
ALTER TABLE events ADD COLUMN trace TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN trace TEXT;

//! The x402 wing: everything the facilitator (`/x402`) is. Its wire bodies
//! (`wire`), v1 rewritten into v2 at the edge (`v1`), the reason codes
//! (`reason`), the scheme rules table (`scheme`), the operations verify,
//! settle, supported and lookups (`facilitator`), and the worker that sends
//! settlements through the engine's step runner (`worker`, `finished`).

pub mod facilitator;
pub mod finished;
pub mod reason;
pub mod scheme;
pub mod v1;
pub mod wire;
pub mod worker;

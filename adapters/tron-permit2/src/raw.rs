//! TRON's transaction protobuf (`Transaction.raw`), as much of it as a
//! TriggerSmartContract needs. Field numbers are java-tron's `Tron.proto`
//! and `smart_contract.proto`.

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct Raw {
    #[prost(bytes = "vec", tag = "1")]
    pub ref_block_bytes: Vec<u8>,
    #[prost(bytes = "vec", tag = "4")]
    pub ref_block_hash: Vec<u8>,
    /// Unix milliseconds.
    #[prost(int64, tag = "8")]
    pub expiration: i64,
    #[prost(message, repeated, tag = "11")]
    pub contract: Vec<Contract>,
    #[prost(int64, tag = "14")]
    pub timestamp: i64,
    /// Sun (1 TRX = 1,000,000).
    #[prost(int64, tag = "18")]
    pub fee_limit: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Contract {
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(message, optional, tag = "2")]
    pub parameter: Option<Any>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Any {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TriggerSmartContract {
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub contract_address: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub call_value: i64,
    #[prost(bytes = "vec", tag = "4")]
    pub data: Vec<u8>,
}

/// `ContractType.TriggerSmartContract`.
const TRIGGER_SMART_CONTRACT: i32 = 31;
const TRIGGER_TYPE_URL: &str = "type.googleapis.com/protocol.TriggerSmartContract";

/// The reference block a transaction names (TAPOS): bytes 6..8 of the
/// block number and bytes 8..16 of the block id.
pub struct Reference {
    pub number: u64,
    pub block_id: [u8; 32],
    /// The block's time, Unix milliseconds.
    pub timestamp_ms: i64,
}

/// `raw_data` bytes of a call of `contract` with `data` by `owner` (21-byte
/// addresses), valid until `expiration_ms`.
pub fn trigger(owner: Vec<u8>, contract: Vec<u8>, data: Vec<u8>, reference: &Reference, now_ms: i64, expiration_ms: i64, fee_limit: i64) -> Vec<u8> {
    let call = TriggerSmartContract { owner_address: owner, contract_address: contract, call_value: 0, data };
    Raw {
        ref_block_bytes: reference.number.to_be_bytes()[6..8].to_vec(),
        ref_block_hash: reference.block_id[8..16].to_vec(),
        expiration: expiration_ms,
        contract: vec![Contract { r#type: TRIGGER_SMART_CONTRACT, parameter: Some(Any { type_url: TRIGGER_TYPE_URL.into(), value: call.encode_to_vec() }) }],
        timestamp: now_ms,
        fee_limit,
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transaction tronweb 6.5 built (raw_data_hex) from the same inputs.
    #[test]
    fn matches_tronweb_bytes() {
        let tronweb = "0a02000c2208261a199d70dc3f26409495a2e1a0345aae01081f12a9010a31747970652e676f6f676c65617069732e636f6d2f70726f746f636f6c2e54726967676572536d617274436f6e747261637412740a154170997970c51812dc3a010c7d01b50e0d17dc79c81215419fe46736679d2d9a65f0992f2272de9f3c7fa6e02244a9059cbb00000000000000000000000090f79bf6eb2c4f870365e785982e1f101e93b906000000000000000000000000000000000000000000000000000000000016e36070b4c09ee1a034900180e1eb17";
        let mut block_id = [0u8; 32];
        block_id[8..16].copy_from_slice(&hex::decode("261a199d70dc3f26").unwrap());
        let data = hex::decode("a9059cbb00000000000000000000000090f79bf6eb2c4f870365e785982e1f101e93b906000000000000000000000000000000000000000000000000000000000016e360").unwrap();
        let built = trigger(
            hex::decode("4170997970c51812dc3a010c7d01b50e0d17dc79c8").unwrap(),
            hex::decode("419fe46736679d2d9a65f0992f2272de9f3c7fa6e0").unwrap(),
            data,
            &Reference { number: 12, block_id, timestamp_ms: 0 },
            1795500253236,
            1795500313236,
            50_000_000,
        );
        assert_eq!(hex::encode(built), tronweb);
    }
}

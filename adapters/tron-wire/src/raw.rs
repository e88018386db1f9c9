//! TRON's transaction protobuf (`Transaction.raw`), as much of it as a
//! TriggerSmartContract needs. Field numbers are java-tron's `Tron.proto`
//! and `smart_contract.proto`.

use prost::Message;
use sha2::{Digest, Sha256};

/// `protocol.Transaction`: the raw data and its signatures.
#[derive(Clone, PartialEq, Message)]
pub struct Transaction {
    #[prost(bytes = "vec", tag = "1")]
    pub raw_data: Vec<u8>,
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub signature: Vec<Vec<u8>>,
}

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
pub const TRIGGER_SMART_CONTRACT: i32 = 31;
pub const TRIGGER_TYPE_URL: &str = "type.googleapis.com/protocol.TriggerSmartContract";

/// The txID: sha256 of the `raw_data` bytes.
pub fn tx_id(raw_data: &[u8]) -> [u8; 32] {
    Sha256::digest(raw_data).into()
}

/// `raw_data` that calls exactly one contract, decoded; anything else (no
/// or several contracts, another contract type, undecodable bytes) is
/// refused with the reason.
pub fn single_call(raw_data: &[u8]) -> Result<(Raw, TriggerSmartContract), &'static str> {
    let raw = Raw::decode(raw_data).map_err(|_| "raw_data is not a TRON transaction")?;
    let [contract] = raw.contract.as_slice() else { return Err("raw_data must hold exactly one contract") };
    let Some(any) = contract.parameter.as_ref().filter(|a| contract.r#type == TRIGGER_SMART_CONTRACT && a.type_url == TRIGGER_TYPE_URL)
    else {
        return Err("the contract is not a TriggerSmartContract");
    };
    let call = TriggerSmartContract::decode(any.value.as_slice()).map_err(|_| "the TriggerSmartContract is undecodable")?;
    // Re-encoding must give the same bytes: no unknown or repeated fields
    // that another decoder could read differently.
    if raw.encode_to_vec() != raw_data {
        return Err("raw_data is not in canonical form");
    }
    Ok((raw, call))
}

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
pub fn trigger(
    owner: Vec<u8>,
    contract: Vec<u8>,
    data: Vec<u8>,
    reference: &Reference,
    now_ms: i64,
    expiration_ms: i64,
    fee_limit: i64,
) -> Vec<u8> {
    let call = TriggerSmartContract { owner_address: owner, contract_address: contract, call_value: 0, data };
    Raw {
        ref_block_bytes: reference.number.to_be_bytes()[6..8].to_vec(),
        ref_block_hash: reference.block_id[8..16].to_vec(),
        expiration: expiration_ms,
        contract: vec![Contract {
            r#type: TRIGGER_SMART_CONTRACT,
            parameter: Some(Any { type_url: TRIGGER_TYPE_URL.into(), value: call.encode_to_vec() }),
        }],
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

    #[test]
    fn single_call_reads_back_what_trigger_built() {
        let r = Reference { number: 300, block_id: [7u8; 32], timestamp_ms: 1 };
        let built = trigger(vec![0x41; 21], vec![0x42; 21], vec![1, 2, 3], &r, 5, 60_005, 9);
        let (raw, call) = single_call(&built).unwrap();
        assert_eq!((raw.expiration, raw.fee_limit, raw.timestamp), (60_005, 9, 5));
        assert_eq!((call.owner_address, call.contract_address, call.data), (vec![0x41; 21], vec![0x42; 21], vec![1, 2, 3]));
        let mut extra = built.clone();
        extra.extend_from_slice(&[0x52, 1, 0]); // field 10 (`data`), unknown here
        assert_eq!(single_call(&extra).unwrap_err(), "raw_data is not in canonical form");
        assert!(single_call(&[0xff, 0xff]).is_err());
    }
}

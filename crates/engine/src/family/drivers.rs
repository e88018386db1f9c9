//! The drivers of the families this build has: the one place that names
//! each family's crate.

use std::sync::Arc;

use super::chain::Chains;
use super::keys::{self, Keystore};
use super::{evm, solana, tron, Driver};
use crate::config::{Config, Family};
use crate::db::Db;

/// The drivers of the families this build has, by family.
pub struct Drivers {
    config: Arc<Config>,
    evm: Arc<evm::EvmDriver>,
    solana: Arc<solana::SolanaDriver>,
    tron: Arc<tron::TronDriver>,
}

impl Drivers {
    pub fn new(config: Arc<Config>, chains: Arc<Chains>, db: Db, keys: Arc<Keystore>) -> Drivers {
        let evm = Arc::new(evm::EvmDriver::new(config.clone(), chains.clone(), db.clone(), keys.clone()));
        let solana = Arc::new(solana::SolanaDriver::new(config.clone(), chains.clone(), db.clone(), keys.clone()));
        let tron = Arc::new(tron::TronDriver::new(config.clone(), chains, db, keys));
        Drivers { config, evm, solana, tron }
    }

    /// The Solana driver itself, for what only it offers (tests).
    pub fn solana(&self) -> Arc<solana::SolanaDriver> {
        self.solana.clone()
    }

    pub fn of(&self, family: Family) -> Option<Arc<dyn Driver>> {
        match family {
            Family::Evm => Some(self.evm.clone()),
            Family::Solana => Some(self.solana.clone()),
            Family::Tron => Some(self.tron.clone()),
        }
    }

    /// The driver of a configured chain's family.
    pub fn for_chain(&self, chain: &str) -> Option<Arc<dyn Driver>> {
        self.of(self.config.chains.get(chain)?.family)
    }

    /// Is `address` one of this service's own wallets on `chain` (its
    /// relayer, collection or proxy wallet, or the configured treasury)?
    /// `true` when the keystore cannot say.
    pub async fn is_service_wallet(&self, chain: &str, address: &str) -> bool {
        let (Some(c), Some(driver)) = (self.config.chains.get(chain), self.for_chain(chain)) else { return false };
        let facts = c.family.facts();
        for role in keys::SERVICE_ROLES {
            match driver.address(&role).await {
                Ok(own) if facts.same_address(&own, address) => return true,
                Ok(_) => {}
                Err(_) => return true,
            }
        }
        c.collection_address.iter().any(|own| facts.same_address(own, address))
    }

    pub fn all(&self) -> Vec<Arc<dyn Driver>> {
        vec![self.evm.clone(), self.solana.clone(), self.tron.clone()]
    }
}

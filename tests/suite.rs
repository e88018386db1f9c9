//! The integration suite: one test binary, so the host and its
//! dependencies (wasmtime, alloy, sqlx) are linked once for every test.
//! Each module is one area; `common/` holds the devnet, the in-process app
//! and the helpers they share. Tests run side by side: each devnet takes a
//! port block of its own (`common::ports`) and a temporary folder, each
//! Postgres test a schema of its own.

mod common;

mod abuse;
mod adapter_check;
mod adversary;
mod api_fuzz;
mod batch_settlement;
mod bench_entries;
mod blocks;
mod books;
mod chains_api;
mod cli;
mod dashboard;
mod database;
mod delivery_outage;
mod docs_routes;
mod eip3009_adapter;
mod evm_matrix;
mod facilitator;
mod facilitator_families;
mod faults;
mod intents_api;
mod keystore;
mod layers;
mod openapi;
mod operations;
mod power_loss;
mod providers;
mod requirements_matrix;
mod sandbox;
mod schemes_e2e;
mod settlement_e2e;
mod smart_wallets;
mod solana_driver;
mod solana_exactly_once;
mod solana_payments;
mod sponsored_swaps;
mod swaps;
mod traces;
mod tron_exactly_once;
mod tron_node;
mod tron_payments;
mod units;
mod upto;
mod webhooks;
mod wit_versions;

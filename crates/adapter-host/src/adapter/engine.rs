//! The wasmtime engine every adapter runs on, and the on-disk cache of
//! precompiled adapters.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// How many adapter calls may be live at once with the pooling allocator.
pub const POOL_INSTANCES: u32 = 128;

/// Build the engine: fuel metering for CPU budgets, and the pooling
/// allocator where the machine grants its address-space reservation.
pub fn build(max_memory: usize) -> (Engine, &'static str) {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(POOL_INSTANCES)
        .total_core_instances(POOL_INSTANCES * 8)
        .max_core_instances_per_component(16)
        .total_memories(POOL_INSTANCES * 2)
        .max_memories_per_component(4)
        .total_tables(POOL_INSTANCES * 8)
        .max_tables_per_component(16)
        .max_memory_size(max_memory)
        // Reset a reused slot's pages with memset rather than madvise +
        // page faults. Adapters are linked with a small stack
        // (adapters/.cargo/config.toml), so a call's memory sits in this
        // window; this halves instantiate+call time (see devnet/bench/adapter.rs).
        .linear_memory_keep_resident(256 << 10)
        .table_keep_resident(64 << 10)
        // Where the kernel has PAGEMAP_SCAN (Linux 6.7+), only the pages a
        // call wrote are reset, not the whole window; elsewhere the window
        // is reset whole, as without it.
        .pagemap_scan(wasmtime::Enabled::Auto);
    let mut pooled = base_config();
    pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    match Engine::new(&pooled) {
        Ok(engine) => (engine, "pooling"),
        Err(e) => {
            tracing::warn!(error = %e, "pooling allocator unavailable; using on-demand allocation");
            (Engine::new(&base_config()).expect("the on-demand engine config is valid"), "on-demand")
        }
    }
}

fn base_config() -> Config {
    let mut c = Config::new();
    c.consume_fuel(true);
    c.wasm_component_model(true);
    c.max_wasm_stack(1 << 20);
    // For `perf record`: adapters' compiled functions named in
    // /tmp/perf-PID.map. A diagnostic switch, off unless asked for.
    if std::env::var_os("STABLERAIL_PERF_MAP").is_some_and(|v| v == "1") {
        c.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    c
}

/// Load `wasm` as a component, from the cache when a matching precompiled
/// artifact exists. The cache key covers the component's bytes, the wasmtime
/// version and the engine's configuration, so a stale artifact is never used.
pub fn load_component(engine: &Engine, wasm: &[u8], cache_dir: &Path) -> wasmtime::Result<(Component, bool)> {
    let path = cache_path(engine, wasm, cache_dir);
    if path.exists() {
        // SAFETY: the file was written by `precompile_component` of an engine
        // with the same version and configuration (both are in its name), in
        // a directory only this service writes.
        if let Ok(c) = unsafe { Component::deserialize_file(engine, &path) } {
            return Ok((c, true));
        }
        tracing::warn!(path = %path.display(), "unusable cached adapter artifact; recompiling");
    }
    let bytes = engine.precompile_component(wasm)?;
    if std::fs::create_dir_all(cache_dir).is_ok() {
        // Write then rename so a concurrent reader never sees half a file;
        // the temporary name is unique to this write, since two runtimes in
        // one process (replicas, a test suite) may compile the same adapter.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = path.with_extension(format!("tmp{}-{n}", std::process::id()));
        if std::fs::write(&tmp, &bytes).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
    // SAFETY: `bytes` was just produced by this engine.
    let component = unsafe { Component::deserialize(engine, &bytes)? };
    Ok((component, false))
}

fn cache_path(engine: &Engine, wasm: &[u8], cache_dir: &Path) -> PathBuf {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    let source = hex::encode(&Sha256::digest(wasm)[..16]);
    cache_dir.join(format!("{source}-wasmtime{}-{:016x}.cwasm", wasmtime_version(), h.finish()))
}

fn wasmtime_version() -> &'static str {
    // The engine configuration hash covers flags, not the crate version.
    env!("WASMTIME_VERSION")
}

//! The sandboxed adapter runtime.
//!
//! Each adapter is compiled once (or loaded precompiled from the cache) and
//! pre-linked into an `InstancePre`. Every call then gets a fresh `Store` with
//! a fuel budget and a memory cap, so a call that traps, loops or hoards
//! memory fails alone and leaves nothing behind.

mod convert;
mod engine;
mod registry;
pub(crate) mod state;
pub mod wit;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store, Trap};

use crate::chain::ChainClient;
use wit::types;
pub use wit::{Context, Scheme};

/// One instance's `scheme` exports, at its version.
pub type Exports<'a> = &'a dyn Scheme;

pub use registry::{
    describe_serves, domain_kind, family_name, wit_family, AdapterFailure, Answer, AssetAdapter, Refusal, Registry, StartupError,
};
pub(crate) use state::HostState;
pub use state::{system_clock, Clock};

/// Per-call limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub fuel: u64,
    pub memory_bytes: usize,
}

impl Limits {
    pub fn new(fuel: u64, memory_mib: u64) -> Self {
        Limits { fuel, memory_bytes: (memory_mib as usize) << 20 }
    }
}

/// Why an adapter file was not loaded, by cause (`adapter check` reports
/// each under its own check).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("adapter file {0} not found")]
    NotFound(PathBuf),
    #[error("adapter file {file}: {reason}")]
    Unreadable { file: PathBuf, reason: String },
    #[error("adapter file {file}: not a loadable WebAssembly component: {reason}")]
    NotAComponent { file: PathBuf, reason: String },
    #[error("adapter file {file}: does not export stablerail:adapter/scheme at a version this host links ({}); it exports: {}", wit::versions().collect::<Vec<_>>().join(", "), list(.exported))]
    UnknownInterface { file: PathBuf, exported: Vec<String> },
    #[error("adapter file {file}: imports outside the stablerail:adapter world: {}", list(.imports))]
    ForeignImports { file: PathBuf, imports: Vec<String> },
    #[error("adapter file {file}: does not fit the stablerail:adapter@{version} world: {reason}")]
    ImportMismatch { file: PathBuf, version: &'static str, reason: String },
    #[error("adapter file {file}: does not export stablerail:adapter/scheme@{version} as this host knows it: {reason}")]
    ExportMismatch { file: PathBuf, version: &'static str, reason: String },
    #[error("adapter file {file}: describe failed: {reason}")]
    Describe { file: PathBuf, reason: String },
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "nothing".into()
    } else {
        names.join(", ")
    }
}

/// Is this import one the host links (its own interfaces or WASI)?
pub fn of_the_world(import: &str) -> bool {
    import.starts_with("stablerail:adapter/") || import.starts_with("wasi:")
}

/// What a component file is, before it is linked.
pub struct Inspection {
    component: wasmtime::component::Component,
    pub imports: Vec<String>,
    pub exports: Vec<String>,
    /// The newest `stablerail:adapter` version it exports that this host links.
    pub interface: Option<&'static str>,
}

/// Foreign imports: refused when serving; linked as traps for `adapter
/// check`, so the rest of the checks still run and the `imports` check
/// alone fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Foreign {
    Refuse,
    Trap,
}

/// A call that did not come back with an answer.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("adapter `{0}` exceeded its CPU budget")]
    OutOfFuel(Arc<str>),
    #[error("adapter `{0}` exceeded its memory limit of {1} MiB")]
    MemoryLimit(Arc<str>, usize),
    #[error("adapter `{0}` trapped: {1}")]
    Trap(Arc<str>, String),
}

/// Shared engine, linker and limits.
/// Fuel for a call made on an async thread (`Adapter::call_inline`): a
/// proof check takes well under a tenth of it; a call that needs more
/// (or spins) stops there, a few milliseconds in, and goes to a blocking
/// thread with the whole budget.
const INLINE_FUEL: u64 = 10_000_000;

pub struct Runtime {
    engine: Engine,
    linker: Linker<HostState>,
    /// The host imports without WASI, for calls made on async threads.
    inline: Linker<HostState>,
    limits: Limits,
    cache_dir: PathBuf,
    clock: Clock,
    pub allocator: &'static str,
    /// One permit per instance the pool holds: a call beyond them waits for
    /// a slot rather than failing to instantiate (calls that wait on their
    /// chain hold an instance meanwhile).
    slots: Arc<tokio::sync::Semaphore>,
}

impl Runtime {
    pub fn new(limits: Limits, cache_dir: PathBuf, clock: Clock) -> anyhow::Result<Arc<Runtime>> {
        let (engine, allocator) = engine::build(limits.memory_bytes);
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        wit::v0_1::add_to_linker(&mut linker)?;
        // Without WASI: its sync functions block on the runtime, which an
        // async thread may not. Each adapter's copy traps on them instead.
        let mut inline = Linker::new(&engine);
        wit::v0_1::add_to_linker(&mut inline)?;
        let slots = Arc::new(tokio::sync::Semaphore::new(engine::POOL_INSTANCES as usize));
        Ok(Arc::new(Runtime { engine, linker, inline, limits, cache_dir, clock, allocator, slots }))
    }

    /// Load, compile (or fetch from cache), link and describe one adapter file.
    pub fn load(self: &Arc<Self>, file: &Path) -> Result<Adapter, LoadError> {
        let inspection = self.inspect(file)?;
        self.link(file, inspection, Foreign::Refuse)
    }

    /// Compile (or fetch from the cache) and read the component's imports
    /// and exports, without linking it.
    pub fn inspect(&self, file: &Path) -> Result<Inspection, LoadError> {
        let wasm = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(LoadError::NotFound(file.into())),
            Err(e) => return Err(LoadError::Unreadable { file: file.into(), reason: e.to_string() }),
        };
        let (component, cached) = engine::load_component(&self.engine, &wasm, &self.cache_dir)
            .map_err(|e| LoadError::NotAComponent { file: file.into(), reason: format!("{e:#}") })?;
        tracing::debug!(file = %file.display(), cached, "adapter compiled");
        let ty = component.component_type();
        let imports = ty.imports(&self.engine).map(|(name, _)| name.to_string()).collect();
        let exports: Vec<String> = ty.exports(&self.engine).map(|(name, _)| name.to_string()).collect();
        let interface = wit::versions().rev().find(|v| exports.contains(&format!("stablerail:adapter/scheme@{v}")));
        Ok(Inspection { component, imports, exports, interface })
    }

    /// Link an inspected component and ask it what it serves.
    pub fn link(self: &Arc<Self>, file: &Path, inspection: Inspection, foreign: Foreign) -> Result<Adapter, LoadError> {
        let Inspection { component, imports, exports, interface } = inspection;
        let Some(version) = interface else {
            return Err(LoadError::UnknownInterface { file: file.into(), exported: exports });
        };
        let outside: Vec<String> = imports.iter().filter(|i| !of_the_world(i)).cloned().collect();
        let mut linker = self.linker.clone();
        match foreign {
            Foreign::Refuse if !outside.is_empty() => return Err(LoadError::ForeignImports { file: file.into(), imports: outside }),
            Foreign::Refuse => {}
            Foreign::Trap => stub_foreign(&mut linker, &self.engine, &component, &outside).map_err(|e| LoadError::ImportMismatch {
                file: file.into(),
                version,
                reason: format!("{e:#}"),
            })?,
        }
        let pre = linker.instantiate_pre(&component).map_err(|e| LoadError::ImportMismatch {
            file: file.into(),
            version,
            reason: format!("{e:#}"),
        })?;
        let misfit = |e: wasmtime::Error| LoadError::ExportMismatch { file: file.into(), version, reason: format!("{e:#}") };
        let pre = wit::link(version, pre).map_err(misfit)?;
        let mut inline = self.inline.clone();
        let inline_pre = inline
            .define_unknown_imports_as_traps(&component)
            .and_then(|_| inline.instantiate_pre(&component))
            .and_then(|p| wit::link(version, p))
            .map_err(misfit)?;
        let name: Arc<str> = file.file_name().map(|n| n.to_string_lossy().into()).unwrap_or_else(|| "adapter".into());
        let mut adapter = Adapter {
            runtime: self.clone(),
            pre,
            inline_pre,
            file: file.to_path_buf(),
            name,
            interface: version,
            imports,
            description: types::Description { name: String::new(), version: String::new(), serves: vec![], config_keys: vec![] },
            usage: Usage::default(),
        };
        // The first instance: its exports' types checked, then described.
        adapter.description = adapter
            .call(None, |g, s| g.check_types(s).and_then(|_| g.describe(s)))
            .map_err(|e| LoadError::Describe { file: file.into(), reason: e.to_string() })?;
        adapter.name = adapter.description.name.as_str().into();
        tracing::debug!(file = %file.display(), "adapter loaded");
        Ok(adapter)
    }
}

/// Define the `foreign` imports of `component` as functions that trap.
/// Not `define_unknown_imports_as_traps`: it matches names exactly, so a
/// WASI import of an older patch version (which the linker serves by
/// semver) would be shadowed by a trap too.
fn stub_foreign(linker: &mut Linker<HostState>, engine: &Engine, component: &Component, foreign: &[String]) -> wasmtime::Result<()> {
    use wasmtime::component::types::ComponentItem;
    for (name, item) in component.component_type().imports(engine) {
        if !foreign.iter().any(|f| f == name) {
            continue;
        }
        let trap = move |what: String| {
            move |_: wasmtime::StoreContextMut<'_, HostState>, _: _, _: &[_], _: &mut [_]| -> wasmtime::Result<()> {
                Err(wasmtime::format_err!("{what} is not of the stablerail:adapter world"))
            }
        };
        match item.ty {
            ComponentItem::ComponentInstance(instance) => {
                let mut trapped = linker.instance(name)?;
                for (func, item) in instance.exports(engine) {
                    if let ComponentItem::ComponentFunc(_) = item.ty {
                        trapped.func_new(func, trap(format!("{name}#{func}")))?;
                    }
                }
            }
            ComponentItem::ComponentFunc(_) => linker.root().func_new(name, trap(name.to_string()))?,
            _ => return Err(wasmtime::format_err!("import {name} is neither an interface nor a function")),
        }
    }
    Ok(())
}

/// One loaded adapter, ready to be instantiated per call.
pub struct Adapter {
    runtime: Arc<Runtime>,
    pre: Box<dyn wit::Linked>,
    /// The same component linked without WASI (`call_inline`).
    inline_pre: Box<dyn wit::Linked>,
    pub file: PathBuf,
    pub name: Arc<str>,
    /// The `stablerail:adapter` version it was built against, e.g. "0.1.0".
    pub interface: &'static str,
    /// Interfaces the component imports (host imports and WASI).
    pub imports: Vec<String>,
    pub description: types::Description,
    /// The most fuel and memory any one call has used.
    pub usage: Usage,
}

/// High-water marks over an adapter's calls (`adapter check` reads them).
#[derive(Default)]
pub struct Usage {
    pub fuel: std::sync::atomic::AtomicU64,
    pub memory: std::sync::atomic::AtomicUsize,
}

impl Adapter {
    /// Run `f` against a fresh instance in a fresh store. Blocking: async
    /// callers run it on a blocking thread.
    pub fn call<R>(
        &self,
        chain: Option<Arc<ChainClient>>,
        f: impl FnOnce(Exports<'_>, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        let state = HostState::new(self.name.clone(), self.runtime.limits.memory_bytes, chain, self.runtime.clock.clone());
        self.run(state, self.runtime.limits.fuel, f)
    }

    /// Run `f` where nothing may block (an async thread): with a small slice
    /// of the fuel budget, no chain, and WASI's functions trapping. `None`
    /// when it ran out of the slice, asked the chain or trapped (a WASI call,
    /// a panic's message): then nothing it did counts (adapter calls are
    /// pure apart from chain reads) and the caller runs it again with
    /// `call`, on a blocking thread with the whole budget, where a real
    /// trap is reported as such.
    ///
    /// With the answer, whether it depended on its inputs alone (it read no
    /// clock): then the same inputs would get the same answer.
    pub fn call_inline<R>(
        &self,
        f: impl FnOnce(Exports<'_>, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Option<(Result<R, CallError>, bool)> {
        let rt = &self.runtime;
        let mut state = HostState::new(self.name.clone(), rt.limits.memory_bytes, None, rt.clock.clone());
        state.chain_deferred = true;
        let slice = rt.limits.fuel.min(INLINE_FUEL);
        let (mut wanted, mut clock) = (false, false);
        let answer = self.run_then(&*self.inline_pre, state, slice, f, |s| (wanted, clock) = (s.chain_wanted, s.clock_read));
        match answer {
            _ if wanted => None,
            Err(CallError::OutOfFuel(_) | CallError::Trap(..)) => None,
            other => Some((other, !clock)),
        }
    }

    fn run<R>(
        &self,
        state: HostState,
        fuel: u64,
        f: impl FnOnce(Exports<'_>, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        self.run_then(&*self.pre, state, fuel, f, |_| {})
    }

    fn run_then<R>(
        &self,
        pre: &dyn wit::Linked,
        state: HostState,
        fuel: u64,
        f: impl FnOnce(Exports<'_>, &mut Store<HostState>) -> wasmtime::Result<R>,
        after: impl FnOnce(&HostState),
    ) -> Result<R, CallError> {
        let rt = &self.runtime;
        let mut store = Store::new(&rt.engine, state);
        store.limiter(|s| &mut s.limiter);
        let outcome = store.set_fuel(fuel).and_then(|_| {
            let scheme = pre.instantiate(&mut store)?;
            f(&*scheme, &mut store)
        });
        after(store.data());
        let used = fuel.saturating_sub(store.get_fuel().unwrap_or(0));
        self.usage.fuel.fetch_max(used, std::sync::atomic::Ordering::Relaxed);
        self.usage.memory.fetch_max(store.data().limiter.peak, std::sync::atomic::Ordering::Relaxed);
        outcome.map_err(|e| self.classify(e, &store))
    }

    fn classify(&self, e: wasmtime::Error, store: &Store<HostState>) -> CallError {
        if store.data().limiter.refused {
            return CallError::MemoryLimit(self.name.clone(), self.runtime.limits.memory_bytes >> 20);
        }
        if e.downcast_ref::<Trap>() == Some(&Trap::OutOfFuel) {
            return CallError::OutOfFuel(self.name.clone());
        }
        let msg = format!("{e:#}");
        CallError::Trap(self.name.clone(), msg.lines().next().unwrap_or("").to_string())
    }

    /// Does this adapter say it serves `scheme` for `family`?
    pub fn serves(&self, family: types::Family, scheme: &str) -> bool {
        self.description.serves.iter().any(|s| s.family == family && s.scheme == scheme)
    }
}

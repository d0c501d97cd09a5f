//! One open database: device, store, transaction manager, committed
//! catalog, profile.

use std::path::PathBuf;
use std::sync::Arc;

use ndpdb_device::{ClockKind, Device, DeviceError, DeviceOptions, Profile};
use ndpdb_storage::{Store, StoreOptions};
use ndpdb_txn::Database;
use parking_lot::RwLock;

use super::Session;
use crate::catalog::MemCatalog;
use crate::error::{Result, SqlError, SqlState};
use crate::exec::spill::SpillDir;
use crate::optimizer::CostParams;
use crate::store::catalog::CatalogStore;
use crate::store::index::IndexStore;
use crate::store::txn::{SqlTxn, store_error, txn_error};
use crate::store::write::Writer;

/// How to open a database directory.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    pub dir: PathBuf,
    /// Profile name or .toml path; None = the image's own (a new database:
    /// the default profile).
    pub profile: Option<String>,
    pub clock: ClockKind,
    /// Create the database when the directory holds none.
    pub create_if_missing: bool,
    /// Capacity of a new image in MiB (None: the profile's, at most 4 GiB).
    pub capacity_mib: Option<u64>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            dir: PathBuf::from("ndpdb-data"),
            profile: None,
            clock: ClockKind::Virtual,
            create_if_missing: true,
            capacity_mib: None,
        }
    }
}

/// The directory, in a database's, of its statements' spill files.
pub const SPILL_DIR: &str = "spill";

pub struct Engine {
    db: Arc<Database>,
    catalog_store: CatalogStore,
    /// The committed catalog.
    catalog: RwLock<Arc<MemCatalog>>,
    /// Key sets of PRIMARY KEY and UNIQUE constraints.
    writer: Writer,
    profile: Profile,
    clock: ClockKind,
    cost: CostParams,
    /// `<database>/spill`: sorts, hash joins and aggregations over
    /// `work_mem` write their spill files here (`exec/spill.rs`).
    spill: SpillDir,
}

fn io_error(what: &str, e: impl std::fmt::Display) -> SqlError {
    SqlError::new(SqlState::IO_ERROR, format!("{what}: {e}"))
}

impl Engine {
    /// Opens (recovering if needed) or creates the database in `opts.dir`.
    pub fn open(opts: &EngineOptions) -> Result<Arc<Engine>> {
        let image = opts.dir.join(ndpdb_device::IMAGE_FILE);
        let exists = image.exists();
        if !exists && !opts.create_if_missing {
            return Err(SqlError::new(
                SqlState::UNDEFINED_FILE,
                format!("no database in {}: no device image at {}", opts.dir.display(), image.display()),
            )
            .with_hint("create one with `ndpdb db create --db DIR` or open with create_if_missing"));
        }
        let name = match (&opts.profile, exists) {
            (Some(p), _) => p.clone(),
            (None, true) => Device::image_profile(&opts.dir).map_err(|e| io_error("reading the image's profile", e))?,
            (None, false) => ndpdb_device::profile::DEFAULT_PROFILE.to_string(),
        };
        let profile = Profile::load(&name)
            .map_err(|e| SqlError::new(SqlState::INVALID_PARAMETER_VALUE, format!("loading profile `{name}`: {e}")))?;
        let dev_opts = DeviceOptions::with_clock(opts.clock);
        let db = if exists {
            let dev = Device::open(&opts.dir, profile.clone(), dev_opts).map_err(device_error)?;
            let (store, meta) = Store::open(dev, store_options()).map_err(store_error)?;
            Database::open(store, meta)
        } else {
            std::fs::create_dir_all(&opts.dir).map_err(|e| io_error(&format!("creating {}", opts.dir.display()), e))?;
            let capacity = opts.capacity_mib.map(|m| m << 20);
            let dev = Device::create(&opts.dir, profile.clone(), capacity, dev_opts).map_err(device_error)?;
            let store = Store::new(dev, store_options()).map_err(store_error)?;
            Database::create(store).map_err(txn_error)?
        };
        let db = Arc::new(db);
        let catalog_store = CatalogStore::open(db.clone())?;
        let catalog = load_committed(&catalog_store, &db)?;
        let writer = open_indexes(opts, &profile, &db, &catalog)?;
        let cost = CostParams { host_cache_pages: HEAP_CACHE_PAGES as f64, ..CostParams::from_profile(&profile) };
        // The device image is ours now: spill files in the directory are
        // a crashed process's.
        let spill = SpillDir::new(opts.dir.join(SPILL_DIR));
        SpillDir::clear(spill.path())
            .map_err(|e| io_error(&format!("removing old spill files in {}", spill.path().display()), e))?;
        Ok(Arc::new(Engine {
            db,
            catalog_store,
            catalog: RwLock::new(Arc::new(catalog)),
            writer,
            profile,
            clock: opts.clock,
            cost,
            spill,
        }))
    }

    pub fn session(self: &Arc<Self>) -> Session {
        Session::new(self.clone())
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    pub fn profile_name(&self) -> &str {
        &self.profile.name
    }

    /// `virtual` or `real`: the clock modelled times are on.
    pub fn clock_name(&self) -> &'static str {
        match self.clock {
            ClockKind::Virtual => "virtual",
            ClockKind::Real => "real",
        }
    }

    /// Where statements spill.
    pub(crate) fn spill_dir(&self) -> &SpillDir {
        &self.spill
    }

    pub(crate) fn cost_params(&self) -> &CostParams {
        &self.cost
    }

    pub(crate) fn catalog_store(&self) -> &CatalogStore {
        &self.catalog_store
    }

    pub(crate) fn writer(&self) -> &Writer {
        &self.writer
    }

    /// The committed catalog.
    pub fn catalog(&self) -> Arc<MemCatalog> {
        self.catalog.read().clone()
    }

    /// Re-reads the committed catalog (after a transaction with DDL
    /// committed).
    pub(crate) fn reload_catalog(&self) -> Result<()> {
        let c = load_committed(&self.catalog_store, &self.db)?;
        *self.catalog.write() = Arc::new(c);
        Ok(())
    }

    /// A checkpoint, so the next open has no log to replay.
    pub fn close(&self) -> Result<()> {
        self.writer.indexes().checkpoint()?;
        self.db.checkpoint().map_err(txn_error)
    }
}

/// Pages of the host's cache of heap pages for point reads (`ndpdb_storage`'s
/// `PageCache`): 16,384 pages of 8 KiB, 128 MiB, PostgreSQL's default
/// `shared_buffers`. The storage crate's own default (32 MiB) serves its
/// experiments; a SQL database is read by key (index lookups, UPDATE by
/// key), and with the smaller cache a table past ~300,000 rows sent most
/// lookups' version reads to the device (`bench sql-lookup --rows 1000000`:
/// 25,000 lookups/s; 209,006 with this cache).
const HEAP_CACHE_PAGES: usize = 16_384;

fn store_options() -> StoreOptions {
    StoreOptions { cache_pages: HEAP_CACHE_PAGES, ..StoreOptions::default() }
}

/// The index image (`store/index`), half the main image's size; a new one
/// (a database from before indexes, or its image removed) gets every index
/// built from its table.
fn open_indexes(opts: &EngineOptions, profile: &Profile, db: &Arc<Database>, catalog: &MemCatalog) -> Result<Writer> {
    let info = db.store().device().info();
    let capacity = (info.capacity_bytes / 2).max(8 << 20);
    let (ix, created) = IndexStore::open(&opts.dir, profile, opts.clock, capacity)?;
    let writer = Writer::new(Arc::new(ix));
    let tables: Vec<_> = catalog.tables.values().filter(|t| !t.indexes.is_empty()).cloned().collect();
    if created && !tables.is_empty() {
        let txn = SqlTxn::begin(db.clone(), ndpdb_txn::Isolation::ReadCommitted);
        writer.build_all(&txn, &tables)?;
        txn.commit()?;
    }
    Ok(writer)
}

/// The catalog as a transaction begun now sees it.
fn load_committed(store: &CatalogStore, db: &Arc<Database>) -> Result<MemCatalog> {
    let txn = SqlTxn::begin(db.clone(), ndpdb_txn::Isolation::ReadCommitted);
    let c = store.load(&txn)?;
    txn.commit()?;
    Ok(c)
}

fn device_error(e: DeviceError) -> SqlError {
    SqlError::new(SqlState::IO_ERROR, e.to_string())
}

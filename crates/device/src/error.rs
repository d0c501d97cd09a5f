//! Device errors. Each variant says what the caller must do: fix its input
//! (`InvalidInput`-like variants), fix the image or profile, or give the
//! program less to hold.

use std::path::PathBuf;

use ndpdb_format::FormatError;

#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("no device image at {path}; create the database first (for example with `ndpdb device create --db {dir}`)", dir = path.parent().map(|p| p.display().to_string()).unwrap_or_default())]
    ImageMissing { path: PathBuf },
    #[error("device image {path} already exists; open it instead of creating it, or remove it to start over")]
    ImageExists { path: PathBuf },
    #[error("device image {path} is corrupt: {source}; the image was not modified")]
    ImageCorrupt { path: PathBuf, source: FormatError },
    #[error(
        "device image {path} has format version {found}, this build reads version {supported}; {what}; \
         the image was not modified",
        what = if found < supported {
            "older images carry no check codes, so this build cannot verify what they hold: recreate the \
             database with this build (for example `ndpdb db create`) and load it again, or open it with \
             the ndpdb build that made it"
        } else {
            "it was made by a newer ndpdb build: open it with that build"
        }
    )]
    ImageVersion { path: PathBuf, found: u32, supported: u32 },
    #[error(
        "device image {path} cannot be opened for writing ({reason}): it is on read-only media or not \
         writable by you; commands that only inspect it (`info`, `check`) open it read-only"
    )]
    ImageNotWritable { path: PathBuf, reason: std::io::Error },
    #[error(
        "device image {path} is {what}: the file holds {found} bytes but its superblock says {expected}; \
         the image was not modified (restore it from a copy or create a new database)",
        what = if found < expected { "truncated" } else { "longer than its superblock says" }
    )]
    ImageSize { path: PathBuf, found: u64, expected: u64 },
    #[error("not enough host memory for {bytes} bytes of emulated device DRAM; lower [dram] ndp_mib in the profile")]
    HostMemory { bytes: u64 },
    #[error(
        "device image {path} was created as {image}, but profile `{profile}` describes {wanted}; \
         open it with a profile of the same medium kind and page size, or create a new database"
    )]
    GeometryMismatch { path: PathBuf, profile: String, image: String, wanted: String },
    #[error("device image {path} is in use by another process (it holds the image lock); stop that process first")]
    ImageLocked { path: PathBuf },
    #[error(
        "not enough disk space for device image {path}: {what} needs {bytes} bytes reserved at once; \
         free space or choose a smaller capacity"
    )]
    DiskFull { path: PathBuf, what: &'static str, bytes: u64 },
    #[error(
        "the disk holding device image {path} is full: medium bytes {addr}..{end} could not be reserved for a write, \
         which was not made; free space on that disk and retry",
        end = addr + bytes
    )]
    DiskFullOnWrite { path: PathBuf, addr: u64, bytes: u64 },
    #[error(
        "unrecovered read error on page {ppn}, sector {sector} (bytes {offset}..{end} of the page) of device image \
         {path}: the data stored there is damaged (it does not match its check code) and was not returned; \
         restore the database from a copy (writing the page again replaces the damaged sector)",
        end = offset + 512
    )]
    UnrecoveredRead { path: PathBuf, ppn: u64, sector: u64, offset: u64 },
    #[error("device image {path} is open read-only, so the device cannot {what}; open it for writing to change it")]
    ReadOnly { path: PathBuf, what: String },
    #[error("I/O error on {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("command out of range: {what}")]
    OutOfRange { what: String },
    #[error("invalid command: {what}")]
    InvalidCommand { what: String },
    #[error("not supported: {what}")]
    Unsupported { what: String },
    #[error("injected fault at command {command}: the device has stopped (crash testing)")]
    InjectedFault { command: u64 },
    #[error("injected kill in sector write {write}: the device stopped as a killed process would (crash testing)")]
    InjectedKill { write: u64 },
    #[error(
        "device DRAM exhausted: {requested} bytes requested with {in_use} of {budget} bytes in use; \
         the profile's [dram] ndp_mib bounds what NDP programs and memory ranges may hold: \
         raise it in a copy of the profile, or process in smaller pieces"
    )]
    DeviceMemoryExhausted { requested: u64, in_use: u64, budget: u64 },
    #[error("no memory range {range}: create it with MemoryRangeCreate first")]
    NoSuchRange { range: u32 },
    #[error("no program `{name}` in the device's program library (known: {known})")]
    NoSuchProgram { name: String, known: String },
    #[error("program slot {slot} is {state}; load and activate a program into it first")]
    SlotNotReady { slot: u32, state: &'static str },
    #[error("program `{program}` failed on PE {pe}: {message}")]
    ProgramFailed { program: String, pe: u32, message: String },
    #[error("the device has no processing elements (profile `{profile}`); run this work on the host")]
    NoProcessingElements { profile: String },
    #[error("the device is shut down")]
    ShutDown,
}

impl DeviceError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        DeviceError::Io { path: path.to_owned(), source }
    }

    /// Whether the disk under an image is full (at creation or at a write):
    /// SQL reports it as `disk_full`, 53100.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, DeviceError::DiskFull { .. } | DeviceError::DiskFullOnWrite { .. })
    }
}

//! Spilling: where a sort, a hash join or a hash aggregation puts the rows
//! it cannot keep within `work_mem`.
//!
//! ```text
//!  operator ──► SpillWriter ──► <spill dir>/spill-<pid>-<n>.arrows ──► SpillFile::read ──► batches
//!                (Arrow IPC stream, buffered)      removed when its SpillFile (or an
//!                                                  unfinished writer) is dropped
//! ```
//!
//! A spill file is an Arrow IPC stream (the `arrow-ipc` crate): the batches
//! come back with the types they were written with, and nothing in them
//! outlives the statement, so it is not one of ndpdb's formats
//! (`docs/format/`). A session spills into `<database>/spill/`, which the
//! engine empties when it opens the database (files a crashed process
//! left); an executor without a database, into a directory under the
//! system's temporary directory. Files remove themselves when dropped, so
//! a statement that fails, is cancelled or times out leaves none behind.
//!
//! [`Partitions`] cuts rows into `fanout` files by a hash of their key:
//! rows of one key land in one file. Each level of a recursive
//! partitioning mixes the hash differently ([`partition_of`]), so a
//! partition that is still too large splits again along other bits.
//!
//! A full disk fails the statement with 53100, any other I/O error with
//! 58030; both name the file and say what to do.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::{RecordBatch, UInt32Array};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{ArrowError, SchemaRef};

use super::BATCH_ROWS;
use super::util::arrow_err;
use crate::error::{Result, SqlError, SqlState};

/// Files made by this process, for unique names across spill directories.
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// Where spill files go; created when the first file is.
#[derive(Debug, Clone)]
pub struct SpillDir {
    path: PathBuf,
}

impl SpillDir {
    pub fn new(path: impl Into<PathBuf>) -> SpillDir {
        SpillDir { path: path.into() }
    }

    /// `ndpdb-spill-<pid>` under the system's temporary directory.
    pub fn temporary() -> SpillDir {
        SpillDir::new(std::env::temp_dir().join(format!("ndpdb-spill-{}", std::process::id())))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes every spill file in `path` (left by a process that ended
    /// without removing its own); a missing directory is fine.
    pub fn clear(path: &Path) -> std::io::Result<()> {
        let entries = match std::fs::read_dir(path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            if entry.file_name().to_string_lossy().ends_with(".arrows") {
                std::fs::remove_file(entry.path())?;
            }
        }
        Ok(())
    }

    /// A new, empty spill file for batches of `schema`.
    pub fn create(&self, schema: &SchemaRef) -> Result<SpillWriter> {
        std::fs::create_dir_all(&self.path).map_err(|e| io_error("create the spill directory", &self.path, e))?;
        let n = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
        let path = TempPath(self.path.join(format!("spill-{}-{n}.arrows", std::process::id())));
        let file = File::create(&path.0).map_err(|e| io_error("create", &path.0, e))?;
        let writer = StreamWriter::try_new(BufWriter::with_capacity(1 << 16, file), schema)
            .map_err(|e| arrow_io_error("write", &path.0, e))?;
        Ok(SpillWriter { writer, path, rows: 0 })
    }
}

/// A path removed when dropped.
#[derive(Debug)]
struct TempPath(PathBuf);

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A spill file being written.
pub struct SpillWriter {
    writer: StreamWriter<BufWriter<File>>,
    path: TempPath,
    rows: u64,
}

impl SpillWriter {
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.rows += batch.num_rows() as u64;
        self.writer.write(batch).map_err(|e| arrow_io_error("write", &self.path.0, e))
    }

    /// Ends the stream and flushes it to the file.
    pub fn finish(mut self) -> Result<SpillFile> {
        self.writer.finish().map_err(|e| arrow_io_error("write", &self.path.0, e))?;
        let inner = self.writer.into_inner().map_err(|e| arrow_io_error("write", &self.path.0, e))?;
        let file = inner.into_inner().map_err(|e| io_error("write", &self.path.0, e.into_error()))?;
        let bytes = file.metadata().map_err(|e| io_error("stat", &self.path.0, e))?.len();
        Ok(SpillFile { path: self.path, rows: self.rows, bytes })
    }
}

/// A finished spill file; removed when dropped.
#[derive(Debug)]
pub struct SpillFile {
    path: TempPath,
    pub rows: u64,
    pub bytes: u64,
}

impl SpillFile {
    /// Its batches, in the order they were written.
    pub fn read(&self) -> Result<SpillReader> {
        let file = File::open(&self.path.0).map_err(|e| io_error("open", &self.path.0, e))?;
        let reader = StreamReader::try_new(BufReader::with_capacity(1 << 16, file), None)
            .map_err(|e| arrow_io_error("read", &self.path.0, e))?;
        Ok(SpillReader { reader, path: self.path.0.clone() })
    }
}

pub struct SpillReader {
    reader: StreamReader<BufReader<File>>,
    path: PathBuf,
}

impl Iterator for SpillReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        self.reader.next().map(|r| r.map_err(|e| arrow_io_error("read", &self.path, e)))
    }
}

/// The partition, of `fanout`, of a key whose hash is `hash`, at
/// recursion `level` (each level mixes the hash another way).
pub fn partition_of(hash: u64, level: u32, fanout: usize) -> usize {
    let seeded = hash ^ (u64::from(level) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (super::hashing::mix(seeded) % fanout as u64) as usize
}

/// Rows cut into `fanout` spill files by their partition, each file's rows
/// in the order they were written. Rows are buffered per partition and
/// written in batches of about [`BATCH_ROWS`].
pub struct Partitions {
    schema: SchemaRef,
    dir: SpillDir,
    files: Vec<Option<SpillWriter>>,
    pending: Vec<Vec<RecordBatch>>,
    pending_rows: Vec<usize>,
}

impl Partitions {
    pub fn new(dir: &SpillDir, schema: SchemaRef, fanout: usize) -> Partitions {
        Partitions {
            schema,
            dir: dir.clone(),
            files: (0..fanout).map(|_| None).collect(),
            pending: vec![Vec::new(); fanout],
            pending_rows: vec![0; fanout],
        }
    }

    pub fn fanout(&self) -> usize {
        self.files.len()
    }

    /// Adds `batch`'s rows, row `i` to partition `parts[i]`.
    pub fn add(&mut self, batch: &RecordBatch, parts: &[usize]) -> Result<()> {
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); self.fanout()];
        for (i, &p) in parts.iter().enumerate() {
            rows[p].push(i as u32);
        }
        for (p, rows) in rows.into_iter().enumerate() {
            if rows.is_empty() {
                continue;
            }
            let piece = if rows.len() == batch.num_rows() {
                batch.clone()
            } else {
                arrow_select::take::take_record_batch(batch, &UInt32Array::from(rows)).map_err(arrow_err)?
            };
            self.add_to(p, piece)?;
        }
        Ok(())
    }

    /// Adds all of `batch` to partition `p`.
    pub fn add_to(&mut self, p: usize, batch: RecordBatch) -> Result<()> {
        self.pending_rows[p] += batch.num_rows();
        self.pending[p].push(batch);
        if self.pending_rows[p] >= BATCH_ROWS {
            self.flush(p)?;
        }
        Ok(())
    }

    fn flush(&mut self, p: usize) -> Result<()> {
        if self.pending[p].is_empty() {
            return Ok(());
        }
        let batch = arrow_select::concat::concat_batches(&self.schema, &self.pending[p]).map_err(arrow_err)?;
        self.pending[p].clear();
        self.pending_rows[p] = 0;
        if self.files[p].is_none() {
            self.files[p] = Some(self.dir.create(&self.schema)?);
        }
        match &mut self.files[p] {
            Some(file) => file.write(&batch),
            None => Err(SqlError::internal("a spill partition without its file")),
        }
    }

    /// The partitions' files (None: no row went there).
    pub fn finish(mut self) -> Result<Vec<Option<SpillFile>>> {
        for p in 0..self.fanout() {
            self.flush(p)?;
        }
        self.files.into_iter().map(|f| f.map(SpillWriter::finish).transpose()).collect()
    }
}

fn io_error(action: &str, path: &Path, e: std::io::Error) -> SqlError {
    if e.kind() == std::io::ErrorKind::StorageFull {
        return SqlError::new(
            SqlState::DISK_FULL,
            format!("could not {action} temporary file \"{}\": No space left on device", path.display()),
        )
        .with_hint(format!(
            "Free disk space where {} is, or raise work_mem so that less spills to disk.",
            path.parent().unwrap_or(path).display()
        ));
    }
    SqlError::new(SqlState::IO_ERROR, format!("could not {action} temporary file \"{}\": {e}", path.display()))
        .with_hint("Check that the spill directory is writable and its disk healthy.")
}

fn arrow_io_error(action: &str, path: &Path, e: ArrowError) -> SqlError {
    match e {
        ArrowError::IoError(_, io) => io_error(action, path, io),
        other => SqlError::new(
            SqlState::IO_ERROR,
            format!("could not {action} temporary file \"{}\": {other}", path.display()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, StringArray};

    use super::*;

    fn batch(from: i64, n: i64) -> RecordBatch {
        let ids: ArrayRef = Arc::new(Int64Array::from_iter((from..from + n).map(|i| (i % 7 != 0).then_some(i))));
        let names: ArrayRef = Arc::new(StringArray::from_iter_values((from..from + n).map(|i| format!("row {i}"))));
        RecordBatch::try_from_iter([("id", ids), ("name", names)]).unwrap()
    }

    #[test]
    fn a_spill_file_gives_back_its_batches_and_is_removed_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir::new(dir.path().join("spill"));
        let b = batch(0, 3000);
        let mut w = spill.create(&b.schema()).unwrap();
        w.write(&b.slice(0, 1000)).unwrap();
        w.write(&b.slice(1000, 2000)).unwrap();
        let file = w.finish().unwrap();
        assert_eq!(file.rows, 3000);
        assert!(file.bytes > 0);
        let back: Vec<RecordBatch> = file.read().unwrap().collect::<Result<_>>().unwrap();
        assert_eq!(arrow_select::concat::concat_batches(&b.schema(), &back).unwrap(), b);
        let path = file.path.0.clone();
        assert!(path.exists());
        drop(file);
        assert!(!path.exists(), "a dropped spill file is removed");
        let unfinished = spill.create(&b.schema()).unwrap();
        let path = unfinished.path.0.clone();
        drop(unfinished);
        assert!(!path.exists(), "a dropped writer's file is removed");
    }

    #[test]
    fn partitions_keep_each_rows_order_and_lose_none() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir::new(dir.path());
        let b = batch(0, 10_000);
        let mut parts = Partitions::new(&spill, b.schema(), 5);
        for start in (0..10_000).step_by(1000) {
            let piece = b.slice(start, 1000);
            let p: Vec<usize> = (0..1000).map(|i| partition_of((start + i) as u64, 0, 5)).collect();
            parts.add(&piece, &p).unwrap();
        }
        let files = parts.finish().unwrap();
        let mut total = 0;
        for (p, file) in files.iter().enumerate() {
            let Some(file) = file else { continue };
            let rows: Vec<String> = file
                .read()
                .unwrap()
                .flat_map(|b| {
                    let b = b.unwrap();
                    let names = b.column(1).as_any().downcast_ref::<StringArray>().unwrap().clone();
                    names.iter().map(|s| s.unwrap().to_string()).collect::<Vec<_>>()
                })
                .collect();
            let expected: Vec<String> =
                (0..10_000u64).filter(|&i| partition_of(i, 0, 5) == p).map(|i| format!("row {i}")).collect();
            assert_eq!(rows, expected, "partition {p}");
            total += rows.len();
        }
        assert_eq!(total, 10_000);
    }

    #[test]
    fn levels_split_a_partition_again() {
        // The keys of level 0's partition 0 spread over level 1's partitions.
        let keys: Vec<u64> = (0..10_000u64).filter(|&h| partition_of(h, 0, 4) == 0).collect();
        let mut seen = [0usize; 4];
        for &h in &keys {
            seen[partition_of(h, 1, 4)] += 1;
        }
        assert!(seen.iter().all(|&n| n > keys.len() / 8), "{seen:?}");
    }

    #[test]
    fn clear_removes_spill_files_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("spill-1-1.arrows"), b"x").unwrap();
        std::fs::write(dir.path().join("keep.txt"), b"x").unwrap();
        SpillDir::clear(dir.path()).unwrap();
        assert!(!dir.path().join("spill-1-1.arrows").exists());
        assert!(dir.path().join("keep.txt").exists());
        SpillDir::clear(&dir.path().join("missing")).unwrap();
    }
}
